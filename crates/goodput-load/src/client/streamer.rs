//! Stream reader threads: the bodies of streamed responses over goodput's
//! own HTTP/1.1 transport are read and parsed on threads of their own, each
//! with its own poll, rather than by the request's task.
//!
//! Why: on tokio, every chunk of every stream wakes the request's task (the
//! reactor's event, a wake through the scheduler, a poll of the task and of
//! everything it is waiting on), several times the work of reading and
//! parsing the chunk. A reader thread learns from its poll which sockets have
//! bytes and reads, stamps and parses them in place, as a plain epoll loop
//! does; the request's task is woken once, when its body's reading ends.
//!
//! What moves: once a response's head has come and its body is to be read
//! as a stream, the connection is taken off tokio's reactor
//! ([`Conn::detach`]) and handed, with its head and the request's
//! [`ResponseReader`], to a reader thread. Each read is stamped and fed to
//! the reader exactly as the task would have (the same [`Conn::try_next_read`]
//! steps, the same kernel stamps). When the body ends (its framing's end,
//! `[DONE]` or an error event, a broken connection), the thread lets go of
//! the socket and wakes the task, which registers the connection with
//! tokio again ([`Conn::attach`]) for the next request.
//!
//! The task still owns the request's outcome: a stop, a cancel or the
//! request's deadline drops or drains the hand-off (see [`Streaming`]), and
//! the reader comes back with whatever it had read.
//!
//! Fairness: a thread reads each job for at most [`TURN_READS`] reads a
//! turn (steps, each a read that brought payload; the framing alone, which
//! brings none, is bounded: a chunk-size line by 4 KiB, trailers by 64 KiB
//! in all), then goes on to its other jobs (and the jobs sent to it) and comes
//! back to this one: a stream whose bytes come faster than they are parsed
//! (a server's flood) would otherwise hold the thread, and every other
//! stream's bytes would wait in their sockets, to be read (and stamped) at
//! one late instant. A request's task that wants the job's lock (to take
//! its end, or to let go of it at a stop, a cancel or the deadline) has it
//! at the next read: the thread leaves the job while the task waits.
//!
//! `GOODPUT_STREAM_THREADS=0` turns the threads off (the task reads, as
//! before); `N` sets how many (default: one per two CPUs, at least one).

use super::wire::{feed_read, read_of, StreamEnd};
use crate::http1::{Conn, Head, ReadStamp};
use crate::reader::ResponseReader;
use bytes::BytesMut;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token};
use slab::Slab;
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll as TaskPoll, Waker};

/// The token of a thread's waker (a job's is its key in the thread's slab, plus one).
const WAKE: Token = Token(0);

/// A job's key before its thread has taken it.
const NO_KEY: usize = usize::MAX;

/// The most reads (of up to 16 KiB each) a job's turn on its thread takes,
/// or a task's poll past the deadline: the bound on how long one stream
/// holds its thread (and its lock) before the others have their turns.
pub(crate) const TURN_READS: usize = 16;

/// How a job's pumping ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pumped {
    /// The body's reading has ended (or the job was let go of).
    Ended,
    /// The socket has nothing more for now: the poll says when it has.
    Drained,
    /// Stopped on its budget, or for a task that wants the lock, with
    /// bytes maybe left in the socket: the job is read again next round
    /// (no poll event need come for bytes already there).
    Yielded,
}

/// A connection whose streamed body a reader thread reads: the socket and
/// its buffer, the response's head (its framing's state), and the stamp of
/// the read the buffered bytes came with.
pub(crate) struct Work {
    pub conn: Conn,
    pub head: Head,
    pub read: ReadStamp,
}

struct Slot {
    /// `None` once handed back to the task.
    work: Option<Work>,
    reader: ResponseReader,
    ended: Option<StreamEnd>,
    waker: Option<Waker>,
    /// The task let go of the request (a stop, a cancel, a deadline): the
    /// thread drops the connection.
    dropped: bool,
}

/// One body being read.
struct Job {
    /// Where the thread keeps it (set by the thread when it takes the job).
    key: AtomicUsize,
    fd: RawFd,
    /// The request's clock, on the monotonic clock tokio's is made of.
    origin: std::time::Instant,
    slot: Mutex<Slot>,
    /// How many of the task's calls wait for (or are about to take) the
    /// slot's lock: the thread leaves the job to them (see [`Job::lock_for_task`]).
    waiting: AtomicUsize,
}

impl Job {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock, for the request's task: the thread, which would otherwise
    /// take it again turn after turn before the waking task could (a
    /// mutex is not fair), lets go of it at its next read and leaves the
    /// job until the task has had it.
    fn lock_for_task(&self) -> MutexGuard<'_, Slot> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let slot = self.lock();
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        slot
    }

    fn task_waits(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) > 0
    }

    /// Reads and parses what the socket has, at most `budget` reads, each
    /// read given to the reader by the task's own rule ([`feed_read`]).
    /// `shared`: the thread's read buffer (see [`Conn::reading_into`]).
    fn pump(&self, slot: &mut Slot, shared: &mut BytesMut, budget: usize) -> Pumped {
        if slot.ended.is_some() || slot.dropped {
            return Pumped::Ended;
        }
        let Slot { work, reader, ended, .. } = slot;
        let Some(work) = work.as_mut() else { return Pumped::Ended };
        let origin = self.origin;
        let mut clock = || origin.elapsed();
        let Work { conn, head, read } = work;
        conn.reading_into(shared, |conn| {
            for _ in 0..budget {
                let Some(step) = conn.try_next_read(head, &mut clock, read) else {
                    return Pumped::Drained;
                };
                if let Some(end) = feed_read(reader, read_of(conn, step)) {
                    *ended = Some(end);
                    return Pumped::Ended;
                }
                if self.task_waits() {
                    break;
                }
            }
            Pumped::Yielded
        })
    }

    /// Ends the body's reading as broken, `why` (unless it had ended), and
    /// wakes its task.
    fn fail(&self, why: String) {
        let mut slot = self.lock();
        slot.ended.get_or_insert(Err(why));
        let waker = slot.waker.take();
        drop(slot);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

enum Cmd {
    Add(Arc<Job>),
    Remove(Arc<Job>),
}

/// One reader thread: where its jobs are sent.
struct Shard {
    tx: Mutex<mpsc::Sender<Cmd>>,
    waker: mio::Waker,
}

impl Shard {
    /// Sends `cmd` and wakes the thread; false when the thread is gone.
    fn send(&self, cmd: Cmd) -> bool {
        let sent = self.tx.lock().unwrap_or_else(|e| e.into_inner()).send(cmd).is_ok();
        if sent {
            let _ = self.waker.wake();
        }
        sent
    }
}

pub(crate) struct Pool {
    shards: Vec<Shard>,
    next: AtomicUsize,
}

static POOL: OnceLock<Option<Pool>> = OnceLock::new();

/// How many reader threads: `GOODPUT_STREAM_THREADS` (at most 64; the
/// command line refuses anything else, a library's caller gets the default
/// for a value that is not a count), else one per two CPUs.
fn threads() -> usize {
    match std::env::var("GOODPUT_STREAM_THREADS").ok().and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(n) => n.min(64),
        None => std::thread::available_parallelism().map_or(1, |n| n.get().div_ceil(2)),
    }
}

/// The reader threads, started on first use; `None` when they are turned
/// off or could not be started (the task reads its stream then).
pub(crate) fn pool() -> Option<&'static Pool> {
    POOL.get_or_init(|| {
        let n = threads();
        if n == 0 {
            return None;
        }
        let mut shards = Vec::with_capacity(n);
        for i in 0..n {
            shards.push(start(i).ok()?);
        }
        Some(Pool { shards, next: AtomicUsize::new(0) })
    })
    .as_ref()
}

/// Starts reader thread `i`.
fn start(i: usize) -> std::io::Result<Shard> {
    let poll = Poll::new()?;
    let waker = mio::Waker::new(poll.registry(), WAKE)?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new().name(format!("goodput-stream-{i}")).spawn(move || run(poll, rx))?;
    Ok(Shard { tx: Mutex::new(tx), waker })
}

fn deregister(registry: &Registry, fd: RawFd) {
    let _ = registry.deregister(&mut SourceFd(&fd));
}

/// What a job's turn came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// The thread is done with the job (its socket deregistered, its task woken).
    Done,
    /// The job waits for its socket's next event.
    Waits,
    /// The job is to have another turn next round, event or not.
    Again,
}

/// A job's turn on its thread, after an event, when it comes, or again
/// after a turn cut short ([`Pumped::Yielded`]).
/// `closed`: the event said the peer closed its side or the socket failed.
fn turn(registry: &Registry, job: &Job, shared: &mut BytesMut, closed: bool) -> Turn {
    if job.task_waits() {
        // The task is taking the lock: its turn first.
        return Turn::Again;
    }
    let mut slot = job.lock();
    if let Some(w) = slot.work.as_mut() {
        // An edge-triggered event: bytes came since the last read drained
        // it (or a turn cut short left some).
        w.conn.wet();
        if closed {
            // The close may have come with the bytes this event is for: a
            // short read of them would look like the end of what there is,
            // and no further event would come for the close.
            w.conn.peer_closed();
        }
    }
    match job.pump(&mut slot, shared, TURN_READS) {
        Pumped::Ended => {}
        Pumped::Drained => return Turn::Waits,
        Pumped::Yielded => return Turn::Again,
    }
    // Off this poll before the task can have the connection back.
    deregister(registry, job.fd);
    let waker = slot.waker.take();
    drop(slot);
    if let Some(w) = waker {
        w.wake();
    }
    Turn::Done
}

/// [`turn`], and a panic in it (a bug) ends that job's reading as broken,
/// saying so, rather than the thread and every stream on it.
fn guarded_turn(registry: &Registry, job: &Job, shared: &mut BytesMut, closed: bool) -> Turn {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| turn(registry, job, shared, closed))) {
        Ok(turn) => turn,
        Err(_) => {
            deregister(registry, job.fd);
            job.fail("goodput's stream reader failed on this response (a bug; please report it)".into());
            Turn::Done
        }
    }
}

/// How many events ahead of the one being read a job's state is fetched.
const AHEAD: usize = 4;

/// Asks the CPU to bring `v`'s bytes into its cache, without waiting for
/// them: a hint, with no effect on what the program computes.
#[inline(always)]
fn prefetch<T>(v: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let p = (v as *const T).cast::<i8>();
        for off in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: a prefetch never faults and reads nothing the program
            // sees; every address is within `v`.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.wrapping_add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// A reader thread's loop: runs for the life of the process, asleep in its
/// poll while it has nothing to read.
fn run(mut poll: Poll, rx: mpsc::Receiver<Cmd>) {
    // A slab, not a map: an event's token is its job's key, found without hashing.
    let mut jobs: Slab<Arc<Job>> = Slab::new();
    let mut events = Events::with_capacity(1024);
    // Every connection of this thread is read into this buffer.
    let mut shared = BytesMut::new();
    // The jobs of one poll's events, in order, and whether each event said
    // the peer closed (or the socket failed).
    let mut keys: Vec<(usize, bool)> = Vec::with_capacity(1024);
    // The jobs whose last turn was cut short, to be read again next round
    // whether or not an event comes (their bytes may all be in already).
    // Each with whether an event of its said the peer closed: a turn left
    // to a waiting task before it read that event must not lose it (with
    // edge-triggered events no second one comes, and a body that ends at
    // the close would wait for its timeout).
    let mut again: Vec<(usize, bool)> = Vec::new();
    // The round each key was last put in `keys`: a job has one turn a round.
    let mut round: u64 = 0;
    let mut listed: Vec<u64> = Vec::new();
    loop {
        // With jobs to read again, the poll only gathers what else is ready.
        let timeout = (!again.is_empty()).then_some(std::time::Duration::ZERO);
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            // Not expected; the jobs' tasks, and those of jobs sent but not
            // yet taken, would wait for ever: end them.
            let queued = rx.try_iter().filter_map(|cmd| match cmd {
                Cmd::Add(job) => Some(job),
                Cmd::Remove(_) => None,
            });
            for job in jobs.into_iter().map(|(_, job)| job).chain(queued) {
                job.fail(format!("the stream reader's poll failed: {e}"));
            }
            return;
        }
        let registry = poll.registry();
        keys.clear();
        keys.extend(
            events
                .iter()
                .filter(|ev| ev.token() != WAKE)
                .map(|ev| (ev.token().0 - 1, ev.is_read_closed() || ev.is_error())),
        );
        round += 1;
        if !again.is_empty() {
            // The events' jobs first (their bytes are the newest to have
            // come), then those cut short that no event named.
            for &(key, _) in &keys {
                mark(&mut listed, key, round);
            }
            for (key, closed) in again.drain(..) {
                if mark(&mut listed, key, round) {
                    keys.push((key, closed));
                } else if closed {
                    // Listed by this round's events: the close is kept.
                    if let Some(k) = keys.iter_mut().find(|(k, _)| *k == key) {
                        k.1 = true;
                    }
                }
            }
        }
        // Each job's state was last touched a read ago, and the server has
        // run since: it is out of the cache, and reaching for it one job at
        // a time waits for memory once a job. Asking for the next jobs'
        // state while this one is read overlaps those waits.
        for &(key, _) in keys.iter().take(AHEAD) {
            if let Some(job) = jobs.get(key) {
                prefetch(&**job);
            }
        }
        for (i, &(key, closed)) in keys.iter().enumerate() {
            if let Some(job) = keys.get(i + AHEAD).and_then(|&(k, _)| jobs.get(k)) {
                prefetch(&**job);
            }
            let Some(job) = jobs.get(key) else { continue };
            match guarded_turn(registry, job, &mut shared, closed) {
                Turn::Done => {
                    jobs.remove(key);
                }
                Turn::Waits => {}
                Turn::Again => again.push((key, closed)),
            }
        }
        while let Ok(cmd) = rx.try_recv() {
            match cmd {
                Cmd::Add(job) => {
                    let fd = job.fd;
                    let entry = jobs.vacant_entry();
                    let key = entry.key();
                    if let Err(e) = registry.register(&mut SourceFd(&fd), Token(key + 1), Interest::READABLE) {
                        job.fail(format!("the stream reader could not poll the socket: {e}"));
                        continue;
                    }
                    job.key.store(key, Ordering::Relaxed);
                    // Bytes may have come with the head, or before the
                    // registration: read them now.
                    match guarded_turn(registry, &job, &mut shared, false) {
                        Turn::Done => {}
                        Turn::Waits => {
                            entry.insert(job);
                        }
                        Turn::Again => {
                            entry.insert(job);
                            again.push((key, false));
                        }
                    }
                }
                Cmd::Remove(job) => {
                    // Only this job: its key may be another's by now.
                    let key = job.key.load(Ordering::Relaxed);
                    if jobs.get(key).is_some_and(|j| Arc::ptr_eq(j, &job)) {
                        jobs.remove(key);
                        deregister(registry, job.fd);
                    }
                }
            }
        }
    }
}

/// Notes that `key` is listed in round `round`: false when it already was.
fn mark(listed: &mut Vec<u64>, key: usize, round: u64) -> bool {
    if listed.len() <= key {
        listed.resize(key + 1, 0);
    }
    std::mem::replace(&mut listed[key], round) != round
}

/// Hands `work` and `reader` to a reader thread: the future ends when the
/// body's reading has, with the connection and how it ended, and `reader`
/// back.
pub(crate) fn hand_off<'r>(
    pool: &'static Pool,
    mut work: Work,
    reader: &'r mut ResponseReader,
    origin: tokio::time::Instant,
    deadline: Option<tokio::time::Instant>,
) -> Streaming<'r> {
    work.conn.detach();
    let shard = &pool.shards[pool.next.fetch_add(1, Ordering::Relaxed) % pool.shards.len()];
    let job = Arc::new(Job {
        key: AtomicUsize::new(NO_KEY),
        fd: work.conn.fd(),
        origin: origin.into_std(),
        slot: Mutex::new(Slot {
            work: Some(work),
            reader: std::mem::take(reader),
            ended: None,
            waker: None,
            dropped: false,
        }),
        waiting: AtomicUsize::new(0),
    });
    if !shard.send(Cmd::Add(job.clone())) {
        // The thread ended (its poll failed): the request fails, saying so,
        // rather than waiting for ever.
        job.fail("goodput's stream reader thread has stopped".into());
    }
    Streaming { job, shard, reader, deadline, done: false }
}

/// A body being read by a reader thread, from the request's task's side.
/// Dropped before the end (a stop, a cancel, the deadline), it takes the
/// reader back with what it had read and has the thread close the
/// connection.
pub(crate) struct Streaming<'r> {
    job: Arc<Job>,
    shard: &'static Shard,
    reader: &'r mut ResponseReader,
    deadline: Option<tokio::time::Instant>,
    done: bool,
}

impl Future for Streaming<'_> {
    type Output = (Work, StreamEnd);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> TaskPoll<(Work, StreamEnd)> {
        let this = self.get_mut();
        let mut slot = this.job.lock_for_task();
        if slot.ended.is_none() && this.deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            // Past the deadline (or polled to read what came before it is
            // declared): what the socket already holds is read here and
            // now, whether or not the thread has come to it (it may be as
            // late as a stopped or starved client was). At most a turn's
            // reads a poll: a server that floods the socket holds the task
            // no longer than it would hold the thread (the caller polls a
            // bounded number of times, see `read_what_came`).
            if let Some(w) = slot.work.as_mut() {
                w.conn.wet();
            }
            if this.job.pump(&mut slot, &mut BytesMut::new(), TURN_READS) == Pumped::Ended {
                // Off the thread's poll before the connection goes back.
                let _ = this.shard.send(Cmd::Remove(this.job.clone()));
            }
        }
        match slot.ended.take() {
            Some(ended) => {
                *this.reader = std::mem::take(&mut slot.reader);
                let work = slot.work.take();
                drop(slot);
                this.done = true;
                match work {
                    Some(mut work) => {
                        let _ = work.conn.attach();
                        TaskPoll::Ready((work, ended))
                    }
                    // Not reached: the work leaves the slot only here.
                    None => TaskPoll::Ready((
                        Work { conn: Conn::placeholder(), head: Head::placeholder(), read: ReadStamp::default() },
                        Err("the stream reader lost the connection".into()),
                    )),
                }
            }
            None => {
                if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    slot.waker = Some(cx.waker().clone());
                }
                TaskPoll::Pending
            }
        }
    }
}

impl Drop for Streaming<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut slot = self.job.lock_for_task();
        slot.dropped = true;
        *self.reader = std::mem::take(&mut slot.reader);
        drop(slot);
        // The thread deregisters the socket, then drops the connection.
        let _ = self.shard.send(Cmd::Remove(self.job.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http1::Http1;
    use std::io::{Read as _, Write as _};

    /// A body whose bytes keep coming is read at most `budget` reads a
    /// pump, and the pump says it stopped on its budget (the job is to be
    /// read again), not that the socket ran dry: a flood cannot hold the
    /// thread beyond its turn.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_pump_reads_no_more_than_its_budget() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = url::Url::parse(&format!("http://{}/v1/chat/completions", listener.local_addr().unwrap())).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
            let blob = b"data: {}\n\n".repeat(10_000);
            // Until the client goes.
            while s.write_all(&blob).is_ok() {}
        });
        let http = Http1::new(&url).unwrap();
        let mut conn = http.connect().await.unwrap();
        let origin = std::time::Instant::now();
        let mut clock = || origin.elapsed();
        let (head, _, read) = conn.send(&http.request(b"{}", &[], None), &mut clock).await.unwrap();
        conn.detach();
        let job = Job {
            key: AtomicUsize::new(NO_KEY),
            fd: conn.fd(),
            origin,
            slot: Mutex::new(Slot {
                work: Some(Work { conn, head, read }),
                reader: ResponseReader::new(false),
                ended: None,
                waker: None,
                dropped: false,
            }),
            waiting: AtomicUsize::new(0),
        };
        let mut shared = BytesMut::new();
        let mut yielded = 0;
        for _ in 0..20 {
            // Time for the server to fill the socket (far more than two reads).
            std::thread::sleep(std::time::Duration::from_millis(20));
            let mut slot = job.lock();
            let before = slot.work.as_ref().unwrap().read.serial;
            slot.work.as_mut().unwrap().conn.wet();
            let pumped = job.pump(&mut slot, &mut shared, 2);
            let reads = slot.work.as_ref().unwrap().read.serial - before;
            assert!(reads <= 2, "{reads} reads on a budget of 2");
            assert_ne!(pumped, Pumped::Ended, "{:?}", slot.ended);
            yielded += usize::from(pumped == Pumped::Yielded && reads == 2);
        }
        assert!(yielded > 0, "the budget, not a dry socket, ended a pump");
        // A task waiting for the lock cuts the turn at its next read.
        job.waiting.store(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut slot = job.lock();
        let before = slot.work.as_ref().unwrap().read.serial;
        slot.work.as_mut().unwrap().conn.wet();
        assert_eq!(job.pump(&mut slot, &mut shared, TURN_READS), Pumped::Yielded);
        assert_eq!(slot.work.as_ref().unwrap().read.serial - before, 1, "one read, then the task's turn");
        drop(slot);
        drop(job);
        server.join().unwrap();
    }
}
