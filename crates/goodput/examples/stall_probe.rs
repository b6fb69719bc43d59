//! How often this machine takes a CPU away from whatever runs on it (a
//! hypervisor descheduling a virtual CPU, an interrupt storm): one thread
//! per CPU, pinned, at real-time priority so that nothing in the guest
//! delays it, wakes every millisecond and logs each wake-up more than
//! 0.5 ms late as a stall. A stall on the server's CPU delays its writes; a
//! stall over one chunk period on the client's CPU merges two chunks into
//! one read. `bench/client_overhead.sh` runs it beside the benchmark (with
//! `STALLS=1`) and `itl_error` lines the stalls up with the gaps.
//!
//! `cargo run --release --example stall_probe -- SECONDS OUT.csv` (Linux;
//! real-time priority needs root or CAP_SYS_NICE, else it runs at normal
//! priority and says so). It stops after SECONDS or at SIGTERM/SIGINT, and
//! then writes the stalls: cpu, start and end in Unix seconds.

#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_os = "linux")]
static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(target_os = "linux")]
extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

#[cfg(target_os = "linux")]
fn main() {
    use std::io::Write;
    let args: Vec<String> = std::env::args().collect();
    let (Some(secs), Some(out)) = (args.get(1).and_then(|s| s.parse::<f64>().ok()), args.get(2)) else {
        eprintln!("usage: stall_probe SECONDS OUT.csv");
        std::process::exit(2);
    };
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: Vec<_> =
        (0..cpus).map(|cpu| std::thread::spawn(move || probe(cpu, std::time::Duration::from_secs_f64(secs)))).collect();
    let mut f = std::io::BufWriter::new(std::fs::File::create(out).expect("a writable output file"));
    writeln!(f, "cpu,start_unix_s,end_unix_s").unwrap();
    for (cpu, t) in threads.into_iter().enumerate() {
        for (a, b) in t.join().expect("probe thread") {
            writeln!(f, "{cpu},{a:.6},{b:.6}").unwrap();
        }
    }
}

#[cfg(target_os = "linux")]
fn probe(cpu: usize, run: std::time::Duration) -> Vec<(f64, f64)> {
    // SAFETY: plain syscalls on this thread with valid, initialised arguments.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        let p = libc::sched_param { sched_priority: 99 };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
            eprintln!("stall_probe: no real-time priority on CPU {cpu}; stalls include the guest's own scheduling");
        }
    }
    let clock = |id| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to fill.
        unsafe { libc::clock_gettime(id, &mut ts) };
        ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
    };
    let period = 1_000_000i128;
    let start = clock(libc::CLOCK_MONOTONIC);
    let (mono0, unix0) = (start, clock(libc::CLOCK_REALTIME));
    let mut next = start + period;
    let mut stalls = Vec::new();
    while next < start + run.as_nanos() as i128 && !STOP.load(Ordering::Relaxed) {
        let ts = libc::timespec { tv_sec: (next / 1_000_000_000) as _, tv_nsec: (next % 1_000_000_000) as _ };
        // SAFETY: an absolute sleep on a valid timespec; no remainder is asked for.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        let now = clock(libc::CLOCK_MONOTONIC);
        if now - next > 500_000 {
            let unix = |mono: i128| (unix0 + mono - mono0) as f64 / 1e9;
            stalls.push((unix(next), unix(now)));
        }
        next = (now / period + 1) * period;
    }
    stalls
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("stall_probe runs on Linux only");
    std::process::exit(2);
}
