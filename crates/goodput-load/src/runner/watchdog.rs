//! The client's own stalls: a task on the run's runtime that wakes every
//! [`TICK`] and notes when it last ran, on the monotonic clock (which runs on
//! while the process is stopped). A gap between two sightings of the client
//! running longer than [`TICK`] + [`THRESHOLD`] is a stall: the process was
//! stopped (SIGSTOP), throttled or starved, or its runtime was held up, and
//! bytes that came meanwhile waited in the socket. Read stamps, the kernel's
//! included (which stamp a read with its last segment), cannot tell that
//! wait from the server's, so a request in flight over a stall is flagged
//! (`client_stalled`): its times are upper bounds. So is one that was due
//! (scheduled) during a stall and sent after it: its send was late by the
//! client's own fault (client queue time).
//!
//! A request's completion also looks at the clock before it is flagged, so
//! a stall the tick has not yet seen (the completion ran first after the
//! process went on) is still found, and no stall seen later can begin
//! before a completed request's end.

use goodput_core::{ClientStall, RequestRecord};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How often the watchdog wakes: each wake of the runtime costs CPU the
/// client takes from the server it measures (a 5 ms tick cost 14% more CPU
/// per streamed token at 300 streams, 25 ms about 3%, within the noise).
pub const TICK: Duration = Duration::from_millis(25);

/// Lateness beyond the tick that is a stall: two ticks, and several times
/// what a loaded machine's scheduler makes a waking thread wait (a CFS
/// period is 6 to 24 ms on a few cores) plus tokio's 1 ms timer, so busy
/// machines are not reported as stalled; yet under the TTFTs measured, and
/// short enough to catch a 100 ms CPU-quota period's throttling.
pub const THRESHOLD: Duration = Duration::from_millis(50);

/// The stalls seen so far, and when the client was last seen running.
#[derive(Debug)]
struct Seen {
    last: Instant,
    stalls: Vec<ClientStall>,
}

/// A running watchdog; [`Watchdog::finish`] stops it.
pub(crate) struct Watchdog {
    seen: Arc<Mutex<Seen>>,
    origin: Instant,
    tick: tokio::task::JoinHandle<()>,
}

impl Watchdog {
    /// Starts watching now, on the runtime this is called on, with stalls
    /// stamped from `origin`.
    pub(crate) fn start(origin: Instant) -> Watchdog {
        let seen = Arc::new(Mutex::new(Seen { last: Instant::now(), stalls: Vec::new() }));
        let ticking = seen.clone();
        let tick = tokio::spawn(async move {
            loop {
                tokio::time::sleep(TICK).await;
                drop(look(&ticking, origin));
            }
        });
        Watchdog { seen, origin, tick }
    }

    /// Flags `rec` when a stall seen until now overlaps its time from when
    /// it was due (`scheduled`) to its end: a stall before it was sent made
    /// the send late (client queue time that is the client's fault), one
    /// after made its times upper bounds.
    pub(crate) fn flag(&self, rec: &mut RequestRecord) {
        let seen = look(&self.seen, self.origin);
        let from = rec.scheduled.min(rec.sent);
        rec.client_stalled = seen.stalls.iter().rev().any(|s| s.touches(from, rec.end));
    }

    /// Stops watching, and gives the stalls seen, in order.
    pub(crate) fn finish(self) -> Vec<ClientStall> {
        self.tick.abort();
        let stalls = std::mem::take(&mut look(&self.seen, self.origin).stalls);
        stalls
    }
}

/// The client is running now: a stall when it was last seen too long ago.
fn look(seen: &Mutex<Seen>, origin: Instant) -> std::sync::MutexGuard<'_, Seen> {
    let now = Instant::now();
    let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
    if now.saturating_duration_since(s.last) > TICK + THRESHOLD {
        let start = s.last.saturating_duration_since(origin);
        s.stalls.push(ClientStall { start, end: now.saturating_duration_since(origin) });
    }
    s.last = s.last.max(now);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_runtime_that_keeps_running_has_no_stall() {
        let origin = Instant::now();
        let w = Watchdog::start(origin);
        tokio::time::sleep(Duration::from_secs(30)).await;
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::from_secs(1));
        rec.end = Duration::from_secs(29);
        w.flag(&mut rec);
        assert!(!rec.client_stalled);
        assert_eq!(w.finish(), Vec::new());
    }

    #[tokio::test(start_paused = true)]
    async fn a_clock_that_jumps_is_a_stall_and_flags_the_requests_over_it() {
        let origin = Instant::now();
        let w = Watchdog::start(origin);
        tokio::time::sleep(Duration::from_secs(1)).await;
        // The whole runtime held for 500 ms (as a stopped process is): the
        // clock moves on with no task run.
        tokio::time::advance(Duration::from_millis(500)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let flagged = |sent_ms: u64, end_ms: u64| {
            // Sent when it was due.
            let sent = Duration::from_millis(sent_ms);
            let mut rec = RequestRecord::new(0, sent, sent);
            rec.end = Duration::from_millis(end_ms);
            w.flag(&mut rec);
            rec.client_stalled
        };
        assert!(flagged(900, 1550), "in flight over the stall");
        assert!(flagged(1200, 1600), "in flight over it, sent during it");
        assert!(!flagged(100, 970), "ended before it (and the tick before it)");
        assert!(!flagged(1560, 1600), "sent after it");
        // Due during the stall and sent late after it: the send was late by
        // the client's fault, and the record says so.
        let mut rec = RequestRecord::new(0, Duration::from_millis(1200), Duration::from_millis(1560));
        rec.end = Duration::from_millis(1600);
        w.flag(&mut rec);
        assert!(rec.client_stalled, "due in the stall, sent after it");
        let stalls = w.finish();
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        let s = stalls[0];
        // From the last tick before the jump to the first after it: the
        // stop and at most a tick more.
        let ms = Duration::from_millis;
        assert!(s.start <= ms(1000) && s.start >= ms(1000) - TICK, "{s:?}");
        assert!(s.end >= ms(1500) && s.end <= ms(1501) + TICK, "{s:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_completion_sees_a_stall_before_the_tick_does() {
        // A watchdog whose tick never comes: the completion is the first
        // to run after the runtime was held 200 ms.
        let origin = Instant::now();
        let seen = Arc::new(Mutex::new(Seen { last: origin, stalls: Vec::new() }));
        let w = Watchdog { seen, origin, tick: tokio::spawn(std::future::pending()) };
        tokio::time::advance(Duration::from_millis(200)).await;
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::from_millis(50));
        rec.end = Duration::from_millis(250);
        w.flag(&mut rec);
        assert!(rec.client_stalled);
        assert_eq!(w.finish().len(), 1);
    }
}
