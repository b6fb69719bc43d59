//! The process's open-file limit: raised at start, and checked against the
//! streams a run asks for.

use anyhow::{bail, Result};

/// Files a run holds open beside its connections: its own, the runtime's,
/// the scrapes', the outputs'.
const SPARE_FILES: u64 = 64;

/// That `concurrency` streams have the open files they need (one socket
/// each, two with the embedded server on the other end, and some to spare),
/// refused before the run, saying how many, rather than failing thousands
/// of connects on the client's own limit. The soft limit was already raised
/// to the hard one at start.
/// `streams` is the most that can be open at once: `concurrency`, or fewer
/// when the run sends fewer requests than that in all.
pub fn check_open_files(concurrency: usize, streams: u64, embedded: bool) -> Result<()> {
    let Some(limit) = open_file_limit() else { return Ok(()) };
    let need = streams.min(concurrency as u64).saturating_mul(if embedded { 2 } else { 1 }).saturating_add(SPARE_FILES);
    if need > limit {
        bail!(
            "-c {concurrency} needs about {need} open files ({}one socket a stream and {SPARE_FILES} to spare), \
             and this process may open {limit}: raise the limit (ulimit -n {need}, or the hard limit in \
             /etc/security/limits.conf), or lower -c",
            if embedded { "the embedded server's end too: " } else { "" }
        );
    }
    Ok(())
}

/// [`check_open_files`] for a load plan's cap: a count of requests with no
/// time bound opens no more streams than it sends.
pub fn check_plan(plan: &goodput_load::LoadPlan, embedded: bool) -> Result<()> {
    let Some(c) = plan.concurrency else { return Ok(()) };
    let streams = match (plan.requests, plan.duration, plan.warmup_time.is_zero()) {
        (Some(n), None, true) => n.saturating_add(plan.warmup),
        _ => u64::MAX,
    };
    check_open_files(c, streams, embedded)
}

/// The least a live run keeps in memory a request: its record, stamps and
/// analysis (measured 1.3 KB with 4 output tokens, `bench -n 40000` against
/// `-n 5000` under `/usr/bin/time`; each output token adds its stamps).
const LIVE_BYTES_PER_REQUEST: u64 = 1 << 10;

/// That a run's records fit in the memory this machine has free, refused
/// before it starts where even the least a request takes does not: a long
/// soak at a high rate (`--rate 3000 --duration 24h`, 259 million requests)
/// had run for hours towards running out. Runs whose count cannot be known
/// ahead (a closed loop bounded by time) are not checked. `shards`: the
/// command can split a run over machines (`--shard`), and the fix says so.
pub fn check_memory(plan: &goodput_load::LoadPlan, shards: bool) -> Result<()> {
    let Some(free) = goodput_core::util::input::available_memory() else { return Ok(()) };
    let units = plan.total_requests().or_else(|| {
        let (rate, _) = plan.rate.filter(|r| r.0.is_finite())?;
        let time = plan.sending_time()?.as_secs_f64() + plan.ramp_up.as_secs_f64() / 2.0;
        let n = rate * time;
        Some(match plan.shard {
            Some(s) => (n / f64::from(s.count)) as u64,
            None => n as u64,
        })
    });
    let Some(n) = units else { return Ok(()) };
    let need = n.saturating_mul(LIVE_BYTES_PER_REQUEST);
    if need > free {
        let gb = |b: u64| b as f64 / f64::from(1u32 << 30);
        bail!(
            "this run would send about {n} requests and keep each one's record in memory, at least {:.1} GB in \
             all, and this machine has {:.1} GB free: give fewer -n, a shorter --duration or a lower --rate{}",
            gb(need),
            gb(free),
            if shards { ", or split it over machines (--shard I/N)" } else { "" }
        );
    }
    Ok(())
}

/// Thousands of concurrent streams need as many sockets: lifts the soft
/// open-file limit to the hard one, once at start.
pub fn raise_open_file_limit() {
    #[cfg(unix)]
    if let Some(mut lim) = nofile().filter(|l| l.rlim_cur < l.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: setrlimit only reads the struct we pass.
        let _ = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}

/// The soft limit on open files, where there is one.
fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    if let Some(lim) = nofile().filter(|l| l.rlim_cur != libc::RLIM_INFINITY) {
        // rlim_t is u64 on Linux, not on every Unix.
        #[allow(clippy::unnecessary_cast)]
        return Some(lim.rlim_cur as u64);
    }
    None
}

/// The process's open-file limits.
#[cfg(unix)]
fn nofile() -> Option<libc::rlimit> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit only writes the struct we pass.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim)
}
