//! Issue 30: a client starved of CPU never passes a late time off as the
//! server's. `goodput bench` runs pinned to one core at a lower priority,
//! beside a busy loop pinned to the same core, against a fixed-timing server
//! (on the test's own runtime, free to use the other cores) that logs when it
//! wrote each chunk: every TTFT is within a few milliseconds of the server's
//! own, or the record says it is an upper bound.

use crate::cmd::{records, serving};
use goodput_core::RequestMetrics;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Pins the calling thread (and the threads it starts) to `cpu`.
#[cfg(target_os = "linux")]
fn pin(cpu: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET stays inside it
    // for a cpu below CPU_SETSIZE, which sched_getaffinity gave.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        set
    };
    set_affinity(&set)
}

/// Keeps the calling thread (and the threads it starts) off `cpu`, where
/// another CPU is to be had.
#[cfg(target_os = "linux")]
fn avoid(cpu: usize) -> std::io::Result<()> {
    let mut set = allowed();
    // SAFETY: cpu is below CPU_SETSIZE (allowed() gave it).
    unsafe { libc::CPU_CLR(cpu, &mut set) };
    match (0..libc::CPU_SETSIZE as usize).any(|c| unsafe { libc::CPU_ISSET(c, &set) }) {
        true => set_affinity(&set),
        false => Ok(()),
    }
}

#[cfg(target_os = "linux")]
fn set_affinity(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: a whole cpu_set_t, of the size given.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The CPUs the calling thread may run on.
#[cfg(target_os = "linux")]
fn allowed() -> libc::cpu_set_t {
    // SAFETY: sched_getaffinity fills the set it is given, of the size given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
        set
    }
}

/// The last CPU this thread may run on.
#[cfg(target_os = "linux")]
fn a_cpu() -> usize {
    let set = allowed();
    // SAFETY: c is below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).rev().find(|&c| unsafe { libc::CPU_ISSET(c, &set) }).expect("a CPU to run on")
}

/// How far a TTFT that is not marked a bound may be from the server's: the
/// 2 ms a read's bytes may spread over unmarked, and the server's own
/// jitter on a busy machine. A stamp late by the client's starvation (tens
/// of ms and more here) is far past it.
const FEW_MS: f64 = 5.0;

#[cfg(target_os = "linux")]
#[test]
fn a_starved_client_reads_ttft_within_a_few_ms_of_the_truth_or_marks_it_a_bound() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let (log, rec) = (dir.path().join("writes.jsonl"), dir.path().join("rec.jsonl"));
    // A token every 5 ms: a client late by more than that finds two or
    // more in the socket, with the last one's stamp.
    let profile = goodput_sim::fixed::FixedProfile {
        ttft: Duration::from_millis(30),
        itl: Duration::from_millis(5),
        tokens_per_chunk: 1,
        ..Default::default()
    };
    // The server's threads, made now, keep off the client's CPU (where
    // there is another): the busy loop is to starve the client, not them.
    let cpu = a_cpu();
    let restore = allowed();
    avoid(cpu).unwrap();
    let (_rt, url) = serving(goodput_sim::fixed::FixedServer::logging_writes(profile, &log).unwrap());
    set_affinity(&restore).unwrap();
    let mut bench = std::process::Command::new(assert_cmd::cargo::cargo_bin("goodput"));
    bench
        .args(["bench", "-q", "--no-metrics", "--url", &url, "-n", "48", "-c", "6", "--warmup", "6"])
        .args(["--output-tokens", "12", "--input-tokens", "8", "--header", "X-Request-Id: {request}"])
        .arg("--records")
        .arg(&rec)
        .arg("-o")
        .arg(dir.path().join("run.json"))
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: between fork and exec the child makes two system calls, no
    // allocation, no lock.
    unsafe {
        bench.pre_exec(move || {
            pin(cpu)?;
            // A lower priority than the busy loop's: the client gets a tenth
            // of the core while both want it.
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
            Ok(())
        });
    }
    let mut child = bench.spawn().unwrap();
    // The busy loop starts once the client has started (a starved start
    // would take seconds), and ends with it.
    let waited = Instant::now();
    while std::fs::read_to_string(&rec).map_or(0, |t| t.lines().count()) < 1 {
        assert!(waited.elapsed() < Duration::from_secs(60), "no record after a minute");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let busy = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            pin(cpu).unwrap();
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let output = child.wait_with_output();
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    let output = output.unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    // The server's time from each request's arrival to its first chunk's write.
    let deadline = Instant::now() + Duration::from_secs(5);
    let truth: std::collections::HashMap<String, f64> = loop {
        let text = std::fs::read_to_string(&log).unwrap();
        if text.lines().count() >= 54 || Instant::now() > deadline {
            break goodput_sim::fixed::first_writes_ms(&text).unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let recs = records(&rec);
    assert_eq!(recs.len(), 54, "48 measured and 6 warm-up");
    let (mut near, mut bound, mut lines) = (0, 0, Vec::new());
    // Each user's first request opens its connection, and that opening
    // (the client's connect and the server's accept) counts in TTFT as the
    // network's: the warm-up, on every user's first request, leaves it out.
    for r in recs.iter().filter(|r| !r.warmup) {
        let ttft = r.ttft().expect("every request streamed its output").as_secs_f64() * 1e3;
        let true_ttft = truth[&r.id.to_string()];
        // The server writes the response head as it takes the request, and
        // its log counts from then: a server late to take it (on a loaded
        // machine) makes the head late by as much, which is the server's
        // time, not the client's. So the client's lateness is the lesser of
        // TTFT's and TTFT counted from the head's arrival.
        let from_head = (r.chunks.at(0).t - r.first_byte.unwrap()).as_secs_f64() * 1e3;
        let late = (ttft - true_ttft).min(from_head - true_ttft);
        let marked = r.ttft_bound || r.client_stalled;
        lines.push(format!(
            "{}: {ttft:.2} ms against {true_ttft:.2} (lag {:?}, shared {}, bound {}, ttft_bound {}, stalled {})",
            r.id, r.read_lag_max, r.shared_reads, r.bound_chunks, r.ttft_bound, r.client_stalled
        ));
        // Never early: the stamp is when the bytes came, after the write began.
        assert!(ttft - true_ttft > -1.0, "request {} read before the server wrote: {}", r.id, lines.join("\n"));
        assert!(late <= FEW_MS || marked, "request {} late by {late:.1} ms, unmarked:\n{}", r.id, lines.join("\n"));
        near += usize::from(late <= FEW_MS);
        bound += usize::from(marked);
    }
    // The busy loop did starve the client: its reads fell behind somewhere in
    // the run (a chunk or a TTFT marked a bound, a stall, or bytes left a
    // millisecond or more in the socket). Whether that lateness landed on a
    // first token is chance: the scheduler may run the client just then, and
    // every TTFT is then right, which the loop above accepts.
    let starved = recs.iter().filter(|r| !r.warmup).any(|r| {
        r.bound_chunks > 0
            || r.ttft_bound
            || r.client_stalled
            || r.read_lag_max.is_some_and(|l| l >= Duration::from_millis(1))
    });
    assert!(starved, "the client never fell behind: was it starved?\n{}", lines.join("\n"));
    eprintln!("{near} within {FEW_MS} ms, {bound} marked a bound:\n{}", lines.join("\n"));
}
