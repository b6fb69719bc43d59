//! The client's own CPU over a run, measured on every `bench`: the process's
//! CPU time (`getrusage`, which keeps the time of threads that have ended)
//! less that of the threads of a server goodput started itself (the embedded
//! simulator's runtime, the fixed profile's emitter and timer), read from
//! each thread's `/proc/self/task/<tid>/schedstat`. Linux only; elsewhere
//! nothing is reported.

use goodput_core::{ClientCost, RequestRecord};
use std::time::Instant;

/// Thread names (as `/proc` keeps them, cut at 15 bytes) of the servers
/// goodput runs in its own process.
const SERVER_THREADS: [&str; 3] = ["goodput-embedde", "goodput-sim-emi", "goodput-precise"];

/// A measurement started before the first request.
pub struct Meter {
    started: Instant,
    process_s: f64,
    /// Each server thread alive at the start (thread id) and its CPU seconds then.
    server_s: Vec<(String, f64)>,
}

impl Meter {
    /// Starts measuring now; `None` where the clocks cannot be read.
    pub fn start() -> Option<Meter> {
        Some(Meter { started: Instant::now(), process_s: process_cpu_s()?, server_s: server_threads_cpu_s() })
    }

    /// The client's CPU seconds since the start: the process's less what
    /// each server thread alive now ran since then (since it began, for one
    /// begun since). A server thread that ended in between is not there to
    /// read: its time since the start stays in the client's (an excess, never
    /// a negative share that would put more than every core in the client).
    fn cpu_s(&self) -> Option<f64> {
        let process = process_cpu_s()? - self.process_s;
        let server: f64 = server_threads_cpu_s()
            .iter()
            .map(|(tid, now)| {
                let then = self.server_s.iter().find(|(t, _)| t == tid).map_or(0.0, |(_, s)| *s);
                (now - then).max(0.0)
            })
            .sum();
        Some((process - server).max(0.0))
    }

    /// The cores the client has kept busy since the start, on average: for
    /// the live view.
    pub fn cores(&self) -> Option<f64> {
        let wall_s = self.started.elapsed().as_secs_f64();
        Some(self.cpu_s()? / wall_s).filter(|_| wall_s > 0.0)
    }

    /// The client's cost from the start until now, over `records`.
    pub fn finish(self, records: &[RequestRecord]) -> Option<ClientCost> {
        let wall_s = self.started.elapsed().as_secs_f64();
        let cpu_s = self.cpu_s()?;
        let cores = if wall_s > 0.0 { cpu_s / wall_s } else { 0.0 };
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Some(ClientCost::over(cpu_s, wall_s, cores, cpus, records))
    }
}

/// User and system CPU seconds of the whole process, ended threads included.
#[cfg(target_os = "linux")]
fn process_cpu_s() -> Option<f64> {
    // SAFETY: getrusage writes one plain struct that we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some(s(u.ru_utime) + s(u.ru_stime))
}

#[cfg(not(target_os = "linux"))]
fn process_cpu_s() -> Option<f64> {
    None
}

/// Each in-process server thread alive now (its thread id) and the CPU
/// seconds it has run.
fn server_threads_cpu_s() -> Vec<(String, f64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    let mut threads = Vec::new();
    for task in tasks.flatten() {
        let dir = task.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !SERVER_THREADS.iter().any(|s| name.trim_end() == *s) {
            continue;
        }
        // The first field: nanoseconds this thread has run.
        let ran = std::fs::read_to_string(dir.join("schedstat")).ok();
        let s = ran.and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok()).unwrap_or(0.0) * 1e-9;
        threads.push((task.file_name().to_string_lossy().into_owned(), s));
    }
    threads
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// This thread's own CPU seconds.
    fn thread_cpu_s() -> f64 {
        // SAFETY: clock_gettime writes one plain struct that we own.
        let mut t: libc::timespec = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) }, 0);
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    }

    /// Burns `ms` of this thread's CPU time: the same work however busy the
    /// machine is (burning for `ms` of wall time got a third of that on a
    /// loaded 2-core machine, and failed the lower bound).
    fn burn(ms: u64) {
        let until = thread_cpu_s() + ms as f64 * 1e-3;
        let mut x = 0u64;
        while thread_cpu_s() < until {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
    }

    #[test]
    fn the_clients_cpu_leaves_out_a_server_thread_of_its_own() {
        let meter = Meter::start().unwrap();
        // A "server" thread of the process, named as the embedded one is,
        // busy while the client thread mostly sleeps.
        // It stays until the meter has read: a thread gone is no longer
        // there to be left out (on a busy machine it once ended first).
        let (read, wait_read) = std::sync::mpsc::channel::<()>();
        let (burned, wait_burned) = std::sync::mpsc::channel::<()>();
        let server = std::thread::Builder::new()
            .name("goodput-embedded".into())
            .spawn(move || {
                burn(1000);
                burned.send(()).unwrap();
                let _ = wait_read.recv();
            })
            .unwrap();
        // The server's whole second is spent before the client's 50 ms.
        wait_burned.recv().unwrap();
        burn(50);
        // Read while the server thread still runs, as bench reads it.
        let process_s = meter.process_s;
        let cost = meter.finish(&[]).unwrap();
        let process = process_cpu_s().unwrap() - process_s;
        read.send(()).unwrap();
        server.join().unwrap();
        // At least this thread's 50 ms (less a few µs: getrusage and the
        // server thread's schedstat are not read at the same instant), and
        // the server's second left out of the process's CPU over the same
        // span. Other tests of this binary run beside it, in the same
        // process, and their time is in the process's and the client's
        // alike: an upper bound on the client's alone (0.5 s) failed on a
        // loaded machine.
        assert!(cost.cpu_s >= 0.045, "at least the client's 50 ms: {cost:?}");
        assert!(process - cost.cpu_s >= 0.9, "the server's 1 s left out of the process's {process} s: {cost:?}");
        assert!(cost.wall_s >= 1.0 && cost.cpus >= 1, "{cost:?}");
        assert_eq!(cost.cpu_us_per_output_token, None, "no tokens, no rate");
        // The live view's figure: the busy share since its start, so times
        // the wall time since then (a little more than the meter's own) at
        // least the 100 ms burned (as above, less a few µs), and never more
        // than every core busy.
        let live = Meter::start().unwrap();
        let t = Instant::now();
        burn(100);
        let cores = live.cores().unwrap();
        let wall = t.elapsed().as_secs_f64();
        assert!(cores * wall >= 0.095 && cores <= cost.cpus as f64 + 0.1, "{cores} cores over {wall} s");
        // A server thread that ran 300 ms before the start and ends before
        // the read: its time before the start is in neither reading's
        // difference, so the client's cannot come out as that 300 ms (it did
        // when a thread gone was taken as a negative server share). Here
        // rather than in a test of its own: a server thread of another test
        // ending inside this test's window would put its time in this
        // client's.
        let (go, wait_go) = std::sync::mpsc::channel::<()>();
        let (ready, wait_ready) = std::sync::mpsc::channel::<()>();
        let server = std::thread::Builder::new()
            .name("goodput-embedded".into())
            .spawn(move || {
                burn(300);
                ready.send(()).unwrap();
                let _ = wait_go.recv();
            })
            .unwrap();
        wait_ready.recv().unwrap();
        let meter = Meter::start().unwrap();
        go.send(()).unwrap();
        server.join().unwrap();
        let cost = meter.finish(&[]).unwrap();
        // Far from the server's 300 ms (other tests of this binary run
        // beside it, and their time is in the client's). No bound on the
        // cores here: over this window of well under a millisecond, the
        // clocks read a few µs apart made it 2.16 cores of 2 on CI.
        assert!(cost.cpu_s < 0.1, "{cost:?}");
    }
}
