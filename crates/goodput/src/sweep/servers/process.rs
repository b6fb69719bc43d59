//! A server goodput starts and stops: its own process group, its output in
//! a log file, a parent-death signal so that it never outlives goodput, and
//! a stop that ends every process it started and leaves its port free.
//!
//! Linux's parent-death signal (`PR_SET_PDEATHSIG`) fires when the *thread*
//! that forked the child ends, not the process. Servers are therefore
//! forked from one thread kept for the purpose ([`spawn`]), which lives as
//! long as goodput. The signal reaches the process goodput started only;
//! should goodput be killed outright, a server's own workers are its to
//! end, as vLLM's and SGLang's are when their parent goes.
//!
//! On an orderly end (the last configuration, Ctrl-C, SIGTERM, an error)
//! goodput ends the server's whole process tree itself, not only its
//! process group: processes that left the group (`setsid`, a daemonising
//! wrapper, a worker that calls setsid or setpgid, a shell that backgrounds
//! one and exits) had held GPU memory and ports after the server was
//! stopped. goodput makes itself a child subreaper when it starts a server,
//! so a process whose parent has gone is reparented to goodput rather than
//! to init; each server's processes inherit [`TREE_VAR`] naming it, which
//! tells such an orphan from goodput's other children. A stop takes the
//! tree from /proc before signalling (it changes as parents die), gives it
//! the group's SIGTERM and, after the grace, SIGKILL, and reaps those that
//! became goodput's children by pid. While the server runs, its tree is
//! tended each second ([`Server::tend_with`]): its orphans that have ended are
//! reaped then, not kept as zombies until the stop. A process goodput may
//! not signal (one of another user's) is named in a warning, with its
//! command line; so is one that has not ended seconds after SIGKILL. An
//! orphan that cleared its environment, or that was started by another
//! service (a container runtime's daemon), is out of goodput's reach.

use anyhow::{anyhow, Context, Result};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The first of `count` ports on 127.0.0.1 in a row that nothing listens
/// on now (a script of several servers takes the ones after its own):
/// each bound, all held until the last is, and let go. The server is asked
/// to bind them a moment later, so they are taken from below the system's
/// ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`), where
/// neither a client's connection (a bench's, while the next server starts)
/// nor another program's bind to port 0 is given one meanwhile: the ports
/// the system gives had been used, and the ones after the first were as
/// likely to be taken by a connection as any. The start is random, and a
/// block goodput gave out in the last minute is not given again (servers
/// started side by side). Another program could still bind one between;
/// the server then fails to start, which is reported. Where the range
/// starts too low to leave room below it, a free port the system gives is
/// tried as the first, as before.
pub fn free_ports(count: u16) -> Result<u16> {
    let count = count.max(1);
    let below = ephemeral_start().unwrap_or(32768);
    if let Some(port) = ports_below(below, count) {
        return Ok(port);
    }
    for _ in 0..64 {
        let first = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
            .context("cannot find a free port on 127.0.0.1 for the server")?;
        let port = first.local_addr()?.port();
        if count == 1 || ports_free_after(port, count) {
            return Ok(port);
        }
    }
    anyhow::bail!(
        "cannot find {count} free ports in a row on 127.0.0.1 for the server (64 tries): free some, or make its \
         configuration's ports= smaller"
    )
}

/// The first port of the system's ephemeral range, the one it gives to
/// connections and to binds to port 0.
fn ephemeral_start() -> Option<u16> {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?.split_whitespace().next()?.parse().ok()
}

/// A block of `count` free ports within the 16,384 below `below` (not under
/// 1,024), starting at random, none of it given out by goodput in the last
/// minute (recorded as given); `None` where there is no room or 256 tries
/// found none.
fn ports_below(below: u16, count: u16) -> Option<u16> {
    use std::hash::{BuildHasher, Hasher};
    static GIVEN: OnceLock<Mutex<Vec<(u16, u16, Instant)>>> = OnceLock::new();
    let low = below.saturating_sub(16384).max(1024);
    let span = below.checked_sub(count)?.checked_sub(low).filter(|&s| s >= 256)?;
    let mut given = GIVEN.get_or_init(Default::default).lock().ok()?;
    given.retain(|&(_, _, at)| at.elapsed() < Duration::from_secs(60));
    let mut random = std::collections::hash_map::RandomState::new().build_hasher();
    random.write_u32(std::process::id());
    for n in 0..256u64 {
        random.write_u64(n);
        let port = low + (random.finish() % u64::from(span)) as u16;
        let taken = given.iter().any(|&(p, c, _)| port < p + c && p < port + count);
        let first = || TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)).ok();
        if !taken && first().is_some_and(|_held| count == 1 || ports_free_after(port, count)) {
            given.push((port, count, Instant::now()));
            return Some(port);
        }
    }
    None
}

/// Whether the `count − 1` ports after `port` can all be bound now, each
/// held until the last is.
fn ports_free_after(port: u16, count: u16) -> bool {
    let Some(last) = port.checked_add(count - 1) else {
        return false;
    };
    let held: Option<Vec<TcpListener>> =
        (port + 1..=last).map(|p| TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, p)).ok()).collect();
    held.is_some()
}

/// Whether a server's output says it could not bind its address because
/// another process holds it: goodput's own words, Python's (uvicorn, as
/// vLLM and SGLang serve: `[Errno 98] … address already in use`), Rust's,
/// Go's and C's (`Address already in use`, `EADDRINUSE`), and
/// llama-server's (`couldn't bind HTTP server socket`, all it says).
pub fn says_port_taken(log: &str) -> bool {
    let log = log.to_ascii_lowercase();
    ["address already in use", "eaddrinuse", "[errno 98]", "the port is in use", "couldn't bind http server socket"]
        .iter()
        .any(|w| log.contains(w))
}

/// Whether nothing listens on `port` any more: a listener can be bound
/// there. (std binds with SO_REUSEADDR, so connections of the stopped
/// server's still in TIME_WAIT do not count.)
pub fn port_is_free(port: u16) -> bool {
    TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)).is_ok()
}

type Job = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The thread servers are forked from (see the module's note): started on
/// first use, and never ended, as its sender is never dropped.
fn spawner() -> &'static Mutex<mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("goodput-server-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("cannot start a thread");
        Mutex::new(tx)
    })
}

/// Forks `cmd` on the spawner thread.
fn spawn(cmd: Command) -> std::io::Result<Child> {
    let (tx, rx) = mpsc::channel();
    spawner()
        .lock()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
        .send((cmd, tx))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    rx.recv().map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

/// The variable a server's processes inherit, naming the server: goodput's
/// pid and the server's number, `GOODPUT_SERVER_TREE=1234.2`. A process of
/// its tree whose parent has gone is reparented to goodput, and known as
/// the server's by it (see the module's note).
pub const TREE_VAR: &str = "GOODPUT_SERVER_TREE";

/// Makes goodput the reaper of its servers' orphans (see the module's
/// note), once. A kernel without it (before Linux 3.4) leaves them to
/// init: a stop then reaches only the processes whose parents live.
fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with integer arguments only.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        }
    });
}

/// The pids of the servers goodput runs now (not yet reaped): none of them
/// is another server's orphan.
fn running() -> &'static Mutex<HashSet<libc::pid_t>> {
    static RUNNING: OnceLock<Mutex<HashSet<libc::pid_t>>> = OnceLock::new();
    RUNNING.get_or_init(Default::default)
}

/// One process of a server's tree: its pid, and its start time (in clock
/// ticks after boot), which tells it from a later process given its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Member {
    pid: libc::pid_t,
    start: u64,
}

/// What /proc/PID/stat says of a process: its parent, its start time, and
/// whether it has ended (a zombie, not yet reaped).
#[derive(Debug, Clone, Copy)]
struct Stat {
    ppid: libc::pid_t,
    start: u64,
    ended: bool,
}

fn stat(pid: libc::pid_t) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: the state (field 3), the
    // parent (4), …, the start time (22).
    let f: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    Some(Stat { ppid: f.get(1)?.parse().ok()?, start: f.get(19)?.parse().ok()?, ended: matches!(f[0], "Z" | "X") })
}

impl Member {
    /// Its state now: `None` once it is gone (reaped, its pid free or
    /// another process's).
    fn stat(self) -> Option<Stat> {
        stat(self.pid).filter(|s| s.start == self.start)
    }

    fn running(self) -> bool {
        self.stat().is_some_and(|s| !s.ended)
    }

    /// Its command line, as the terminal may show it.
    fn command(self) -> String {
        let raw = std::fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        let words: Vec<String> =
            raw.split(|&b| b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
        if words.is_empty() {
            "?".into()
        } else {
            goodput_report::escape::terminal(&words.join(" "))
        }
    }
}

/// Whether process `pid`'s environment holds `mark` (`NAME=value`). One
/// whose environment goodput may not read (another user's) is taken to.
///
/// A process in the middle of an exec reads as an empty environment (the
/// kernel has set up its new memory but not yet its environment's place
/// in it): an orphan caught there, as a busy host may leave it for a
/// while, had been missed. An empty one is read again for up to
/// [`EXEC_WAIT`], so that only a process that cleared its environment
/// stays empty.
fn carries(pid: libc::pid_t, mark: &str) -> bool {
    let until = Instant::now() + EXEC_WAIT;
    loop {
        match std::fs::read(format!("/proc/{pid}/environ")) {
            Ok(env) if env.is_empty() && Instant::now() < until && stat(pid).is_some_and(|s| !s.ended) => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Ok(env) => return env.split(|&b| b == 0).any(|e| e == mark.as_bytes()),
            Err(e) => return e.kind() == std::io::ErrorKind::PermissionDenied,
        }
    }
}

/// How long [`carries`] waits for an exec to give a process its
/// environment.
const EXEC_WAIT: Duration = Duration::from_millis(200);

/// The processes of server `root`'s tree, from one reading of /proc: every
/// descendant of it, and every one of goodput's children that carries
/// `mark` (the server's processes whose parents have gone), with their
/// descendants. Neither `root` nor another running server is one.
fn tree(root: libc::pid_t, mark: &str) -> Vec<Member> {
    let me = std::process::id() as libc::pid_t;
    let servers = running().lock().map(|r| r.clone()).unwrap_or_default();
    let mut children: HashMap<libc::pid_t, Vec<(libc::pid_t, Stat)>> = HashMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()) else { continue };
        if let Some(s) = stat(pid) {
            children.entry(s.ppid).or_default().push((pid, s));
        }
    }
    let orphans = children
        .get(&me)
        .into_iter()
        .flatten()
        .filter(|&&(pid, s)| pid != root && !servers.contains(&pid) && !s.ended && carries(pid, mark));
    let orphans: Vec<Member> = orphans.map(|&(pid, s)| Member { pid, start: s.start }).collect();
    descendants(&children, Member { pid: root, start: stat(root).map_or(0, |s| s.start) }, orphans)
}

/// `found` (orphans of the tree), with every descendant of `root` and of
/// them in `children` (each process's children by pid, from one reading of
/// /proc). A child starts no sooner than its parent: one that seems to have
/// started before is the child of an earlier process that had the parent's
/// pid (the parent ended and its pid was taken while /proc was read), and
/// is not of the tree.
fn descendants(
    children: &HashMap<libc::pid_t, Vec<(libc::pid_t, Stat)>>,
    root: Member,
    mut found: Vec<Member>,
) -> Vec<Member> {
    let mut next = 0;
    let mut from = vec![root];
    from.extend(found.iter().copied());
    while let Some(&parent) = from.get(next) {
        next += 1;
        for &(pid, s) in children.get(&parent.pid).into_iter().flatten() {
            let m = Member { pid, start: s.start };
            if pid != root.pid && s.start >= parent.start && !found.contains(&m) {
                found.push(m);
                from.push(m);
            }
        }
    }
    found
}

/// The processes of a server's tree, read from /proc
/// ([`Server::reading`]).
pub struct TreeReading(Vec<Member>);

/// A server running under goodput. Dropped while it runs (an error, a
/// panic), its process group and tree are killed.
pub struct Server {
    child: Child,
    /// Its process group's id: its own pid.
    pgid: libc::pid_t,
    /// `TREE_VAR=…` as its processes inherit it.
    mark: String,
    /// The processes of its tree seen so far (from [`tree`]), itself not one.
    tree: Vec<Member>,
    /// Those of them goodput may not signal.
    denied: Vec<Member>,
    pub port: u16,
    /// How many ports it takes from `port` on (1, or a script's several
    /// servers'): every one is waited for at its stop.
    pub ports: u16,
    /// Reaped: its exit status.
    status: Option<ExitStatus>,
    /// The thread copying its output to the log: says when it is done.
    log_done: Option<mpsc::Receiver<()>>,
    /// What the log has left out so far, as the copy goes: all of it once
    /// the copy is done (a copy given up on still says what it had left out;
    /// the count had read 0).
    log_dropped: Arc<AtomicU64>,
}

/// A number of bytes in words: bytes under a KiB, KiB under a MiB, else
/// MiB to a tenth (a note had said "wrote 0 MiB more" of a few KiB).
pub fn amount(b: u64) -> String {
    if b < 1 << 10 {
        format!("{b} bytes")
    } else if b < 1 << 20 {
        format!("{:.0} KiB", b as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    }
}

/// The two files a log's kept tail is written to in turn while its server
/// runs: `LOG.tail-1` and `LOG.tail-2`, beside it.
fn tail_segments(log: &Path) -> [std::path::PathBuf; 2] {
    [1, 2].map(|n| {
        let mut p = log.as_os_str().to_owned();
        p.push(format!(".tail-{n}"));
        p.into()
    })
}

/// Copies a server's output to its log (`to`, at `log`), keeping at most
/// `max` bytes: the first half as it comes, and of the rest its end, between
/// a quarter and a half of `max`, kept on disk in two files beside the log
/// ([`tail_segments`]) written in turn, each emptied when the other fills,
/// and joined to the log when the output ends, after a line saying how much
/// was left out (a chatty server had written 2 GB in seconds). The kept end
/// starts at a line's start where one comes within its first 64 KiB. Gives
/// the bytes left out, which `dropped` counts as it goes. (The end had been
/// held in memory until the server stopped, so goodput dying, or giving up
/// on a copy held open, lost it; the files stay, named in the log, where
/// goodput dies first.)
fn copy_capped(mut from: impl Read, log: &Path, mut to: File, max: u64, dropped: &AtomicU64) -> u64 {
    use std::io::Write;
    let head = max / 2;
    let seg_max = ((max - head) / 2).max(1);
    let names = tail_segments(log);
    // The segment written now, and the bytes in each.
    let (mut written, mut cur, mut held) = (0u64, 0usize, [0u64; 2]);
    let mut segs: Option<[File; 2]> = None;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut b = &buf[..n];
        if written < head {
            let k = ((head - written) as usize).min(b.len());
            let _ = to.write_all(&b[..k]);
            written += k as u64;
            b = &b[k..];
        }
        if b.is_empty() {
            continue;
        }
        if segs.is_none() {
            let opened = File::create(&names[0]).and_then(|a| Ok([a, File::create(&names[1])?]));
            let Ok(files) = opened else {
                // Nowhere to keep the end: what is left is left out.
                dropped.fetch_add(b.len() as u64, Ordering::Relaxed);
                continue;
            };
            let _ = writeln!(
                to,
                "\n[goodput: the log's first {} end here; of the rest, its last {} at most follow when the server \
                 stops, kept until then in {} and {} (--serve-log-max)]",
                amount(head),
                amount(2 * seg_max),
                names[0].display(),
                names[1].display()
            );
            segs = Some(files);
        }
        let Some(files) = segs.as_mut() else { continue };
        while !b.is_empty() {
            if held[cur] == seg_max {
                // The other segment is emptied and written from its start.
                cur ^= 1;
                let f = &mut files[cur];
                let _ = f.set_len(0).and_then(|()| f.seek(SeekFrom::Start(0)).map(drop));
                dropped.fetch_add(held[cur], Ordering::Relaxed);
                held[cur] = 0;
            }
            let k = ((seg_max - held[cur]) as usize).min(b.len());
            let _ = files[cur].write_all(&b[..k]);
            held[cur] += k as u64;
            b = &b[k..];
        }
    }
    let Some(files) = segs else { return dropped.load(Ordering::Relaxed) };
    drop(files);
    // The older segment, then the newer; left in place if unreadable.
    let (Ok(older), Ok(newer)) = (File::open(&names[cur ^ 1]), File::open(&names[cur])) else {
        return dropped.load(Ordering::Relaxed);
    };
    let mut kept = older.take(held[cur ^ 1]).chain(newer.take(held[cur]));
    if dropped.load(Ordering::Relaxed) > 0 {
        // Cut mid-line, most likely: from the next line's start.
        let mut first = Vec::new();
        let _ = (&mut kept).take(64 << 10).read_to_end(&mut first);
        let skip = first.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
        dropped.fetch_add(skip as u64, Ordering::Relaxed);
        let _ =
            writeln!(to, "[goodput: {} of the server's output left out here]", amount(dropped.load(Ordering::Relaxed)));
        let _ = to.write_all(&first[skip..]);
    }
    if std::io::copy(&mut kept, &mut to).is_ok() && to.flush().is_ok() {
        for n in &names {
            let _ = std::fs::remove_file(n);
        }
    }
    dropped.load(Ordering::Relaxed)
}

impl Server {
    /// Starts `argv` in a process group of its own, with stdin closed and
    /// stdout and stderr appended to `log`, and the parent-death signal set.
    /// The log keeps at most `log_max` bytes of its output ([`copy_capped`]).
    pub fn start(argv: &[String], port: u16, log: &Path, log_max: u64) -> Result<Server> {
        let (program, args) = argv.split_first().ok_or_else(|| anyhow!("the server command is empty"))?;
        let file = File::create(log).with_context(|| format!("cannot create the server log {}", log.display()))?;
        let (reader, out) = std::io::pipe().context("cannot make a pipe for the server's output")?;
        let err = out.try_clone()?;
        let (tx, log_done) = mpsc::channel();
        let log_dropped = Arc::new(AtomicU64::new(0));
        let (counted, path) = (log_dropped.clone(), log.to_owned());
        std::thread::Builder::new()
            .name("goodput-server-log".into())
            .spawn(move || {
                copy_capped(reader, &path, file, log_max, &counted);
                let _ = tx.send(());
            })
            .context("cannot start a thread")?;
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let id = format!("{}.{}", std::process::id(), STARTED.fetch_add(1, Ordering::Relaxed) + 1);
        become_subreaper();
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err).process_group(0).env(TREE_VAR, &id);
        let mark = format!("{TREE_VAR}={id}");
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: between fork and exec only async-signal-safe calls:
        // prctl, getppid and raise.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // goodput died between the fork and the prctl: the signal
                // will never come.
                if libc::getppid() != parent {
                    libc::raise(libc::SIGKILL);
                }
                Ok(())
            });
        }
        // The command holds the pipe's writing ends: gone with it once the
        // server has them, so that the log's copy ends when the server's
        // processes have all gone.
        let child = spawn(cmd).map_err(|e| anyhow!("cannot start {program:?}: {e}"))?;
        let pgid = child.id() as libc::pid_t;
        if let Ok(mut r) = running().lock() {
            r.insert(pgid);
        }
        let (tree, denied) = (Vec::new(), Vec::new());
        Ok(Server {
            child,
            pgid,
            mark,
            tree,
            denied,
            port,
            ports: 1,
            status: None,
            log_done: Some(log_done),
            log_dropped,
        })
    }

    /// How much of its output the log left out (once it has been reaped):
    /// waits up to 2 s for the log's copy to end (a process outside its group
    /// could hold its output open).
    pub async fn log_dropped(&mut self) -> u64 {
        self.finish_log().await;
        self.log_dropped.load(Ordering::Relaxed)
    }

    /// Waits up to 2 s for the log's copy to end.
    async fn finish_log(&mut self) {
        if let Some(rx) = self.log_done.take() {
            let until = Instant::now() + Duration::from_secs(2);
            loop {
                match rx.try_recv() {
                    Ok(()) => break,
                    Err(mpsc::TryRecvError::Empty) if Instant::now() < until => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Err(_) => break,
                }
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited, without reaping it (its group id stays
    /// reserved until it is reaped, so the group can still be signalled
    /// safely).
    pub fn exited(&self) -> bool {
        self.status.is_some() || exited(self.child.id())
    }

    fn signal_group(&self, sig: libc::c_int) {
        if self.status.is_none() {
            // SAFETY: the group's leader is our child and not yet reaped,
            // so the id names no other group.
            unsafe {
                libc::killpg(self.pgid, sig);
            }
        }
    }

    /// Adds the processes of its tree now to those seen.
    fn gather(&mut self) {
        self.add(TreeReading(tree(self.pgid, &self.mark)));
    }

    /// Adds the processes read to those seen.
    fn add(&mut self, read: TreeReading) {
        for m in read.0 {
            if !self.tree.contains(&m) {
                self.tree.push(m);
            }
        }
    }

    /// The reading of its tree [`Server::tend_with`] takes, to be made on a
    /// thread of its own: it reads every process's /proc entry, some tens
    /// of milliseconds on a host of thousands, which on the runtime's
    /// thread had held the load's sends back.
    pub fn reading(&self) -> impl FnOnce() -> TreeReading + Send + 'static {
        let (pgid, mark) = (self.pgid, self.mark.clone());
        move || TreeReading(tree(pgid, &mark))
    }

    /// While it runs: adds the processes of `read` (its tree now) to those
    /// seen, and reaps those of them that became goodput's children and
    /// have ended (by pid and start time, as a stop does). An orphan of the tree that
    /// ends is otherwise goodput's zombie until the server is stopped, and
    /// a long sweep of a server that leaves short-lived orphans gathers
    /// them. One that is born and ends between two calls is not seen: its
    /// environment, which tells it from another child of goodput's, cannot
    /// be read once it has ended, so it waits for goodput's exit.
    pub fn tend_with(&mut self, read: TreeReading) {
        if self.status.is_none() {
            self.add(read);
            self.reap_tree();
        }
    }

    /// Sends `sig` to each process of its tree seen that still runs, noting
    /// those goodput may not signal.
    fn signal_tree(&mut self, sig: libc::c_int) {
        for &m in &self.tree {
            // SAFETY: kill with a pid whose start time was just checked: the
            // process it names is the one seen.
            if m.running() && unsafe { libc::kill(m.pid, sig) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EPERM) && !self.denied.contains(&m) {
                    self.denied.push(m);
                }
            }
        }
    }

    /// How many processes of its tree seen still run that goodput may
    /// signal.
    fn tree_running(&self) -> usize {
        self.tree.iter().filter(|m| !self.denied.contains(m) && m.running()).count()
    }

    /// One pass over its tree, once killed: reaps those that became
    /// goodput's children and have ended (by pid: never another child's
    /// status), and forgets those gone. Gives whether any is left that may
    /// yet end (running, or ended and not yet reaped by goodput or its
    /// parent of the tree), those goodput may not signal aside.
    fn reap_tree(&mut self) -> bool {
        let (me, pgid) = (std::process::id() as libc::pid_t, self.pgid);
        let pids: Vec<libc::pid_t> = self.tree.iter().map(|m| m.pid).collect();
        self.tree.retain(|&m| match m.stat() {
            None => false,
            Some(s) if s.ended && s.ppid == me => {
                // SAFETY: an ended child of ours, its start time checked:
                // its pid stays its own until it is reaped, and only we
                // reap it.
                let r = unsafe { libc::waitpid(m.pid, std::ptr::null_mut(), libc::WNOHANG) };
                r != m.pid
            }
            // Its parent reaps it, or, a process of the tree, hands it to
            // goodput when it is reaped.
            Some(s) if s.ended => pids.contains(&s.ppid) || s.ppid == pgid,
            Some(_) => true,
        });
        self.tree.iter().any(|m| !self.denied.contains(m))
    }

    /// The processes of its tree goodput could not end, in words: the pid,
    /// the command line and why; `None` when there are none.
    fn unended(&self) -> Option<String> {
        let left: Vec<String> = self
            .tree
            .iter()
            .filter(|m| m.running())
            .map(|&m| {
                let why = if self.denied.contains(&m) {
                    "not permitted to signal it: it runs as another user"
                } else {
                    "still running after SIGKILL"
                };
                format!("pid {} ({}: {why})", m.pid, m.command())
            })
            .collect();
        (!left.is_empty()).then(|| {
            let pids: Vec<String> = self.tree.iter().filter(|m| m.running()).map(|m| m.pid.to_string()).collect();
            format!(
                "the server (pid {}) left {} goodput could not end: {}; end {} yourself (kill -9 {}, as {} owner or \
                 root): {} may hold its GPUs and port",
                self.pgid,
                if left.len() == 1 { "1 process".to_string() } else { format!("{} processes", left.len()) },
                left.join(", "),
                if left.len() == 1 { "it" } else { "them" },
                pids.join(" "),
                if left.len() == 1 { "its" } else { "their" },
                if left.len() == 1 { "it" } else { "they" },
            )
        })
    }

    /// Stops it: takes its process tree, SIGTERM to its group and tree,
    /// SIGKILL to them after `grace` (and to whatever of them is left once
    /// the leader has gone), reaps it and those of its tree that became
    /// goodput's children, and waits up to `port_wait` for its port to be
    /// free. Gives its exit status. A process of its tree goodput cannot
    /// end is named in a warning.
    /// Cut short once `aborted` says so (the command was stopped, twice where
    /// `again`, as the notice says):
    /// SIGKILL at once, and no wait for the port, which no later server will
    /// take. A server that outlasts a second of its grace is said to be
    /// waited for, and how to end the wait (the wait had been silent, and
    /// deaf to further Ctrl-Cs).
    pub async fn stop_unless(
        &mut self,
        grace: Duration,
        port_wait: Duration,
        aborted: &dyn Fn() -> bool,
        again: bool,
    ) -> Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        // Taken before the signals: a process whose parent ends is
        // reparented.
        self.gather();
        self.signal_group(libc::SIGTERM);
        self.signal_tree(libc::SIGTERM);
        let start = Instant::now();
        let deadline = start + grace;
        let mut told = false;
        while (!self.exited() || self.tree_running() > 0) && Instant::now() < deadline && !aborted() {
            if !told && start.elapsed() >= Duration::from_secs(1) {
                told = true;
                let others = match self.tree_running() {
                    0 => String::new(),
                    1 => " and 1 process it started".into(),
                    n => format!(" and {n} processes it started"),
                };
                goodput_core::tell!(
                    "waiting for the server (pid {}){others} to stop: SIGKILL in {} (Ctrl-C or SIGTERM{} to kill it now)",
                    self.pgid,
                    goodput_core::util::duration_text(grace.saturating_sub(Duration::from_secs(1))),
                    if again { " again" } else { "" }
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Whatever of the group and tree is left, the leader gone or not
        // (in the reap).
        let status = self.reap().await?;
        if aborted() {
            return Ok(status);
        }
        let deadline = Instant::now() + port_wait;
        let last = self.port.saturating_add(self.ports.max(1) - 1);
        while let Some(taken) = (self.port..=last).find(|&p| !port_is_free(p)) {
            if Instant::now() >= deadline {
                let of = match self.ports > 1 {
                    true => format!(" (of the {} it takes from {})", self.ports, self.port),
                    false => String::new(),
                };
                anyhow::bail!(
                    "port {taken}{of} was still taken {} after the server (pid {}) and the processes it started \
                     ended, {}",
                    goodput_core::util::duration_text(port_wait),
                    self.pgid,
                    self.unended().unwrap_or_else(|| {
                        format!(
                            "by a process not of its tree (one another service started for it?): `ss -ltnp 'sport = \
                             :{taken}'` names it"
                        )
                    })
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(status)
    }

    /// Its exit status once it has exited (after [`Server::exited`]):
    /// kills what is left of its group and tree, and reaps it and those of
    /// its tree that became goodput's children (waiting up to 5 s for them
    /// to end). A process of its tree goodput cannot end is named in a
    /// warning.
    pub async fn reap(&mut self) -> Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        self.gather();
        self.signal_group(libc::SIGKILL);
        self.signal_tree(libc::SIGKILL);
        let s = loop {
            if let Some(s) = self.child.try_wait().context("cannot wait for the server")? {
                break s;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        self.status = Some(s);
        self.forget();
        let until = Instant::now() + TREE_WAIT;
        while self.reap_tree() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if let Some(note) = self.unended() {
            goodput_core::tell!("warning: {note}");
        }
        // Its group is gone: the log is whole once its copy ends.
        self.finish_log().await;
        Ok(s)
    }

    /// Takes it off the servers running, once reaped.
    fn forget(&self) {
        if let Ok(mut r) = running().lock() {
            r.remove(&self.pgid);
        }
    }
}

/// How long a stop waits, after SIGKILL, for a server's tree to end and be
/// reaped (a process freeing GPU memory can take seconds).
const TREE_WAIT: Duration = Duration::from_secs(5);

impl Drop for Server {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.gather();
            self.signal_group(libc::SIGKILL);
            self.signal_tree(libc::SIGKILL);
            let _ = self.child.wait();
            self.forget();
            let until = Instant::now() + Duration::from_secs(1);
            while self.reap_tree() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // A moment for the log's copy to join its kept end to it.
        if let Some(rx) = self.log_done.take() {
            let _ = rx.recv_timeout(Duration::from_secs(2));
        }
    }
}

/// Whether goodput's child `pid` has exited, without reaping it. A pid that
/// is no child of ours (reaped already) counts as exited.
pub fn exited(pid: u32) -> bool {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
    };
    // With WNOHANG, a child that has not exited leaves si_pid 0.
    r != 0 || unsafe { info.si_pid() } != 0
}

/// An exit status as the document keeps it: the code, or 128 + the signal
/// that ended it (as a shell gives it).
pub fn status_code(s: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    s.code().or_else(|| s.signal().map(|sig| 128 + sig))
}

/// An exit status in words: `exit status 3`, `killed by signal 9 (SIGKILL)`.
pub fn status_text(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}{}", signal_name(sig)),
        _ => "ended".into(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGBUS => " (SIGBUS)",
        _ => "",
    }
}

/// The last `lines` lines of a log, read from at most its last 64 KiB, as
/// text (invalid UTF-8 replaced).
pub fn log_tail(path: &Path, lines: usize) -> String {
    const MOST: u64 = 64 << 10;
    let Ok(mut f) = File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(MOST);
    if f.seek(SeekFrom::Start(from)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    let _ = f.take(MOST).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    // A cut first line is left out.
    let skip = usize::from(from > 0 && all.len() > 1);
    let kept = &all[skip..];
    kept[kept.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_s_tail_is_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, "one\ntwo\nthree\n").unwrap();
        assert_eq!(log_tail(&p, 2), "two\nthree");
        assert_eq!(log_tail(&p, 10), "one\ntwo\nthree");
        assert_eq!(log_tail(&dir.path().join("none"), 3), "");
        let long: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, long).unwrap();
        assert_eq!(log_tail(&p, 2), "line 19998\nline 19999");
    }

    /// A second Ctrl-C kills a server that ignores SIGTERM at once, rather
    /// than after its grace (the wait had been deaf to it).
    #[tokio::test]
    async fn an_abort_ends_the_wait_for_a_server_that_will_not_stop() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let (mut s, _dir) = started("trap '' TERM; echo started; sleep 60").await;
        let aborted = std::sync::Arc::new(AtomicBool::new(false));
        let set = aborted.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            set.store(true, Ordering::Relaxed);
        });
        let grace = Duration::from_secs(60);
        let t = Instant::now();
        let status = s.stop_unless(grace, grace, &|| aborted.load(Ordering::Relaxed), true).await.unwrap();
        assert_eq!(status_code(status), Some(128 + libc::SIGKILL));
        assert!(t.elapsed() < grace / 4, "ended by the abort, not the grace: {:?}", t.elapsed());
    }

    /// A block of ports is free from its first to its last, and one held
    /// among them makes it not free.
    #[test]
    fn ports_in_a_row_are_free_from_the_first_to_the_last() {
        let port = free_ports(4).unwrap();
        let held: Vec<TcpListener> =
            (port..port + 4).map(|p| TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, p)).unwrap()).collect();
        assert_eq!(held.len(), 4);
        drop(held);
        let _middle = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port + 2)).unwrap();
        assert!(!ports_free_after(port, 4) && !ports_free_after(port + 1, 2));
        assert!(ports_free_after(port, 2), "the ports before the held one");
        assert!(!ports_free_after(u16::MAX - 1, 3), "past the last port");
    }

    /// Blocks of ports come from below the system's ephemeral range, where
    /// connections are not given them, and two in a row never overlap.
    #[test]
    fn the_servers_words_for_a_taken_port_are_known() {
        for line in [
            "error: cannot bind 127.0.0.1:35753 (the port is in use: pick another with --port, or --port 0 for a \
             free one): Address already in use (os error 98)",
            "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use",
            "Error: listen tcp 127.0.0.1:11434: bind: address already in use",
            "main: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080",
            "bind failed: EADDRINUSE",
        ] {
            assert!(says_port_taken(&format!("loading\n{line}\n")), "{line}");
        }
        for line in ["CUDA out of memory", "no GPU found", "Address family not supported by protocol"] {
            assert!(!says_port_taken(line), "{line}");
        }
    }

    #[test]
    fn ports_come_from_below_the_ephemeral_range_and_do_not_overlap() {
        let below = ephemeral_start().unwrap_or(32768);
        let (a, b) = (free_ports(5).unwrap(), free_ports(5).unwrap());
        if below >= 1024 + 256 + 5 {
            assert!(a + 5 <= below && b + 5 <= below && a >= 1024 && b >= 1024, "{a}, {b} under {below}");
        }
        assert!(a + 5 <= b || b + 5 <= a, "{a} and {b} overlap");
        assert_eq!(ports_below(1024 + 100, 5), None, "no room below");
    }

    /// A stop waits for every port the server takes, and names the one
    /// still taken, here by a listener not of its tree.
    #[tokio::test]
    async fn a_stop_waits_for_every_port_the_server_takes() {
        let (mut s, _dir) = started("echo started; exec sleep 60").await;
        // A block whose third port this test can hold: another process
        // (a server a test starts, checking its own ports) may bind it
        // between the check and this bind, as happened with both cores
        // busy; another block is then taken.
        let held = (0..20).find_map(|_| {
            let port = free_ports(3).ok()?;
            TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port + 2)).ok().map(|l| (port, l))
        });
        let (port, _other) = held.expect("a block of three free ports, its third held here");
        (s.port, s.ports) = (port, 3);
        let e = s.stop_unless(Duration::from_secs(5), Duration::from_millis(200), &|| false, false).await.unwrap_err();
        let taken = s.port + 2;
        assert!(
            e.to_string().contains(&format!("port {taken} (of the 3 it takes from {}) was still taken", s.port))
                && e.to_string().contains(&format!("sport = :{taken}")),
            "{e}"
        );
    }

    /// A server of `sh -c script`, once its log says "started" (the script
    /// echoes it), with the folder its log is in.
    async fn started(script: &str) -> (Server, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let argv: Vec<String> = ["sh", "-c", script].iter().map(|s| s.to_string()).collect();
        let s = Server::start(&argv, free_ports(1).unwrap(), &log, 1 << 20).unwrap();
        let t = Instant::now();
        while !std::fs::read_to_string(&log).unwrap().contains("started") {
            assert!(t.elapsed() < Duration::from_secs(10));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        (s, dir)
    }

    #[tokio::test]
    async fn a_server_is_stopped_with_its_group_and_its_status_kept() {
        // A shell that ignores SIGTERM, with a child of its own: both go.
        let (mut s, _dir) = started("trap '' TERM; sleep 30 & echo started; wait").await;
        assert!(!s.exited());
        let status = s.stop_unless(Duration::from_millis(200), Duration::from_secs(5), &|| false, false).await.unwrap();
        assert_eq!(status_code(status), Some(128 + libc::SIGKILL));
        assert!(status_text(status).contains("SIGKILL"));
        // Not one of the group is left running (its killed members may
        // linger as zombies until init reaps them).
        let t = Instant::now();
        while let Some(pid) = live_member(s.pgid) {
            assert!(t.elapsed() < Duration::from_secs(5), "{pid} of the group still runs");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A stop ends and reaps the server's processes that left its process
    /// group: one still its child, and one whose parent had gone (they had
    /// run on, holding what they held).
    #[tokio::test]
    async fn a_stop_ends_the_server_s_whole_tree() {
        let script = "setsid sleep 60 & echo child $!; (setsid sleep 60 & echo orphan $!); echo started; exec sleep 60";
        let (mut s, dir) = started(script).await;
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
        let pid = |what: &str| -> libc::pid_t {
            log.lines().find_map(|l| l.strip_prefix(what)?.trim().parse().ok()).unwrap_or_else(|| panic!("{log}"))
        };
        let seen: Vec<Member> = [pid("child "), pid("orphan ")]
            .into_iter()
            .map(|pid| Member { pid, start: stat(pid).unwrap_or_else(|| panic!("{pid} is not running")).start })
            .collect();
        assert!(seen.iter().all(|m| m.running()));
        // The orphan is goodput's own child now, as its subreaper.
        assert_eq!(seen[1].stat().unwrap().ppid, std::process::id() as libc::pid_t);
        let status = s.stop_unless(Duration::from_secs(5), Duration::from_secs(5), &|| false, false).await.unwrap();
        assert_eq!(status_code(status), Some(128 + libc::SIGTERM));
        // Ended and reaped, not left as goodput's zombies.
        for m in seen {
            assert!(m.stat().is_none(), "{m:?} is still there: {:?}", m.stat());
        }
    }

    /// A process carries the mark when its environment holds it; one whose
    /// environment is empty (cleared, not mid-exec) is not taken, once the
    /// wait for an exec has passed.
    #[test]
    fn a_process_is_known_by_its_environment() {
        let mut marked = Command::new("sleep").arg("30").env("GOODPUT_TEST_MARK", "7").spawn().unwrap();
        let mut cleared = Command::new("env").args(["-i", "sleep", "30"]).spawn().unwrap();
        let t = Instant::now();
        // `env` has exec'd `sleep` with nothing once its command line says so.
        while std::fs::read_to_string(format!("/proc/{}/cmdline", cleared.id())).unwrap_or_default()
            != "sleep\x0030\x00"
        {
            assert!(t.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(carries(marked.id() as libc::pid_t, "GOODPUT_TEST_MARK=7"));
        assert!(!carries(marked.id() as libc::pid_t, "GOODPUT_TEST_MARK=8"));
        let t = Instant::now();
        assert!(!carries(cleared.id() as libc::pid_t, "GOODPUT_TEST_MARK=7"));
        assert!(t.elapsed() >= EXEC_WAIT, "an empty environment is read again until the wait has passed");
        for c in [&mut marked, &mut cleared] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// An orphan of the tree that ends while the server runs is reaped when
    /// the server is tended, not left as goodput's zombie until the stop.
    #[tokio::test]
    async fn an_orphan_that_ends_is_reaped_while_the_server_runs() {
        let (mut s, dir) = started("(setsid sleep 60 & echo orphan $!); echo started; exec sleep 60").await;
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
        let pid: libc::pid_t =
            log.lines().find_map(|l| l.strip_prefix("orphan ")?.trim().parse().ok()).unwrap_or_else(|| panic!("{log}"));
        let m = Member { pid, start: stat(pid).unwrap().start };
        s.tend_with(s.reading()());
        assert!(s.tree.contains(&m) && m.running(), "{:?}", s.tree);
        // It ends on its own (as a worker that finishes would).
        // SAFETY: a pid whose start time was just checked.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        let until = Instant::now() + Duration::from_secs(10);
        while m.running() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let ended = m.stat().unwrap();
        assert!(ended.ended && ended.ppid == std::process::id() as libc::pid_t, "{ended:?}");
        s.tend_with(s.reading()());
        assert!(m.stat().is_none() && !s.tree.contains(&m), "still there: {:?}", m.stat());
        assert!(!s.exited(), "the server itself runs on");
        let status = s.stop_unless(Duration::from_secs(5), Duration::from_secs(5), &|| false, false).await.unwrap();
        assert_eq!(status_code(status), Some(128 + libc::SIGTERM));
    }

    /// The tree is every descendant of the server and of its orphans, and
    /// not a process that started before the parent its pid names (the
    /// child of an earlier holder of that pid).
    #[test]
    fn a_tree_holds_descendants_and_not_an_earlier_holder_s_children() {
        let st = |ppid, start| Stat { ppid, start, ended: false };
        let children: HashMap<libc::pid_t, Vec<(libc::pid_t, Stat)>> = [
            (10, vec![(11, st(10, 100)), (12, st(10, 99))]),
            (11, vec![(13, st(11, 101))]),
            (20, vec![(21, st(20, 300))]),
            (30, vec![(31, st(30, 5))]),
        ]
        .into_iter()
        .collect();
        let root = Member { pid: 10, start: 100 };
        let got = descendants(&children, root, vec![Member { pid: 20, start: 200 }]);
        let pids: Vec<libc::pid_t> = got.iter().map(|m| m.pid).collect();
        assert_eq!(pids, [20, 11, 21, 13], "{got:?}");
    }

    /// A process of the tree goodput may not signal, or that outlasts
    /// SIGKILL, is named with its command line and how to end it. (Which
    /// one kill refuses is marked here: the tests may run as root, whom
    /// none refuses.)
    #[tokio::test]
    async fn a_process_left_running_is_named_with_its_command_line() {
        let (mut s, _dir) = started("setsid sleep 60.5 & echo started; exec sleep 60").await;
        // The background job may still be a forked shell when the script
        // says it started (on a loaded machine it was): until it is sleep.
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            s.gather();
            s.tree.retain(|m| m.running());
            if s.tree.iter().any(|m| m.command() == "sleep 60.5") || Instant::now() > until {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let [m] = s.tree[..] else { panic!("{:?}", s.tree) };
        assert!(m.running() && m.command() == "sleep 60.5", "{m:?}: {}", m.command());
        s.denied.push(m);
        let said = s.unended().unwrap();
        assert!(
            said.contains(&format!(
                "left 1 process goodput could not end: pid {} (sleep 60.5: not permitted to signal it: it runs as \
                 another user); end it yourself (kill -9 {}, as its owner or root)",
                m.pid, m.pid
            )),
            "{said}"
        );
        s.denied.clear();
        let status = s.stop_unless(Duration::from_secs(5), Duration::from_secs(5), &|| false, false).await.unwrap();
        assert_eq!(status_code(status), Some(128 + libc::SIGTERM));
        assert!(s.unended().is_none() && m.stat().is_none(), "{m:?}");
    }

    /// A process of group `pgid` that has not ended, from /proc.
    fn live_member(pgid: libc::pid_t) -> Option<String> {
        std::fs::read_dir("/proc").ok()?.filter_map(|e| e.ok()).find_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the command's closing parenthesis: state, ppid, pgrp.
            let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            (f.get(2)?.parse::<libc::pid_t>().ok()? == pgid && !matches!(f[0], "Z" | "X"))
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
    }

    /// A log keeps the first half of its cap and the end of the rest, from a
    /// line's start, saying how much it left out between.
    #[test]
    fn a_log_keeps_its_start_and_its_end_within_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let out: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let count = AtomicU64::new(0);
        let dropped = copy_capped(out.as_bytes(), &p, File::create(&p).unwrap(), 100_000, &count);
        let log = std::fs::read_to_string(&p).unwrap();
        assert!(log.len() < 100_000 + 1_000, "{}", log.len());
        assert_eq!(count.load(Ordering::Relaxed), dropped);
        assert!(log.starts_with("line 0\nline 1\n"));
        assert!(log.ends_with("line 99998\nline 99999\n"));
        assert!(log.contains("the log's first 49 KiB end here"), "{}", &log[49_000..51_000]);
        // The end starts at a line's start (it had started mid-line), and
        // all between is counted as left out.
        let (_, end) = log.split_once("of the server's output left out here]\n").unwrap();
        let first = end.lines().next().unwrap();
        let n: usize = first.strip_prefix("line ").and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{first}"));
        assert!(out.ends_with(end) && out.contains(&format!("\n{first}\n")));
        assert_eq!(dropped as usize, out.len() - 50_000 - end.len());
        assert!(end.len() >= 25_000 - 20 && end.len() <= 50_000, "{}", end.len());
        assert!(n > 90_000);
        assert!(tail_segments(&p).iter().all(|s| !s.exists()), "the end's files are removed once joined");
        // Within the cap, the output as it came.
        let small = "a\nb\n";
        assert_eq!(copy_capped(small.as_bytes(), &p, File::create(&p).unwrap(), 100, &AtomicU64::new(0)), 0);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), small);
    }

    /// While the output goes on, its end is on disk, named in the log, and
    /// what was left out counted (it had been held in memory until the
    /// output ended, lost should goodput die first, with 0 counted).
    #[test]
    fn a_log_s_end_is_on_disk_as_it_comes() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let (reader, mut writer) = std::io::pipe().unwrap();
        let count = Arc::new(AtomicU64::new(0));
        let (c, path, file) = (count.clone(), p.clone(), File::create(&p).unwrap());
        let copy = std::thread::spawn(move || copy_capped(reader, &path, file, 4_000, &c));
        let out: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        writer.write_all(out.as_bytes()).unwrap();
        let segs = tail_segments(&p);
        let t = Instant::now();
        loop {
            let on_disk: String = segs.iter().map(|s| std::fs::read_to_string(s).unwrap_or_default()).collect();
            if on_disk.contains("line 9999\n") {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "the end is not on disk: {on_disk:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(count.load(Ordering::Relaxed) >= out.len() as u64 - 4_000, "{count:?}");
        let log = std::fs::read_to_string(&p).unwrap();
        assert!(log.contains(&*segs[0].to_string_lossy()) && log.contains(&*segs[1].to_string_lossy()), "{log}");
        drop(writer);
        let dropped = copy.join().unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().ends_with("line 9999\n"));
        assert_eq!(dropped, count.load(Ordering::Relaxed));
    }

    #[test]
    fn amounts_under_a_mib_are_said_in_kib_or_bytes() {
        assert_eq!(amount(300), "300 bytes");
        assert_eq!(amount(300 << 10), "300 KiB");
        assert_eq!(amount(3 << 20), "3.0 MiB");
    }

    #[tokio::test]
    async fn a_server_that_exits_is_seen_to_without_being_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let argv: Vec<String> = ["sh", "-c", "echo bye; exit 3"].iter().map(|s| s.to_string()).collect();
        let log = dir.path().join("log");
        let mut s = Server::start(&argv, free_ports(1).unwrap(), &log, 1 << 20).unwrap();
        let t = Instant::now();
        while !s.exited() {
            assert!(t.elapsed() < Duration::from_secs(10));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(status_code(s.reap().await.unwrap()), Some(3));
        assert_eq!(log_tail(&log, 5), "bye");
        let err = Server::start(&["/nonexistent/server".into()], 1, &dir.path().join("log2"), 1 << 20).err().unwrap();
        assert!(err.to_string().contains("cannot start \"/nonexistent/server\""), "{err}");
    }
}
