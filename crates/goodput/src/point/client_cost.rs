//! The client's own cost on a run's result (its CPU, metered by
//! [`crate::cpu`]), with a warning when it may be what limits the run.

/// A client busier than this share of the machine's cores is warned about.
const CLIENT_BUSY: f64 = 0.8;

/// Puts the client's own cost on a run's result, with a warning when it
/// kept most of the machine busy.
pub(super) fn with_client_cost(result: &mut goodput_core::RunResult, cost: Option<goodput_core::ClientCost>) {
    result.warnings.extend(cost.as_ref().and_then(busy_client));
    result.client = cost;
}

/// Puts the client's own stalls on a run's result (none: nothing), with a
/// warning when requests were in flight over one.
pub(super) fn with_client_stalls(
    result: &mut goodput_core::RunResult,
    stalls: &[goodput_core::ClientStall],
    records: &[goodput_core::RequestRecord],
) {
    // A stall is a gap between two sightings of the client longer than the
    // tick and the threshold together: that gap is what the document gives.
    let gap = goodput_load::runner::STALL_TICK + goodput_load::runner::STALL_THRESHOLD;
    let stalls = goodput_core::ClientStalls::over(stalls, gap, records);
    result.warnings.extend(stalls.as_ref().and_then(stalled_client));
    result.client_stalls = stalls;
}

/// The warning for a client that stalled while requests were in flight.
fn stalled_client(s: &goodput_core::ClientStalls) -> Option<String> {
    (s.requests > 0).then(|| {
        format!(
            "the client itself stalled {} time(s), {:.0} ms in all (longest {:.0} ms), while {} request(s) were in \
             flight: their times may be late by as much (upper bounds, flagged client_stalled in the records). \
             Was the machine busy, the process stopped or CPU-throttled?",
            s.count, s.total_ms, s.longest_ms, s.requests
        )
    })
}

/// The warning for a client that kept most of the machine busy.
fn busy_client(c: &goodput_core::ClientCost) -> Option<String> {
    (c.cores > CLIENT_BUSY * c.cpus as f64).then(|| {
        format!(
            "the client kept {:.2} of the {} cores busy: it may be what limits the run. Run it on a machine of its \
             own or with fewer streams per process, and check its read lag",
            c.cores, c.cpus
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_that_keeps_most_of_the_machine_busy_is_warned_about() {
        let cost = |cores: f64| goodput_core::ClientCost { cores, cpus: 2, ..Default::default() };
        assert_eq!(busy_client(&cost(1.5)), None, "three quarters of two cores");
        let w = busy_client(&cost(1.7)).unwrap();
        assert!(w.starts_with("the client kept 1.70 of the 2 cores busy: it may be what limits the run"), "{w}");
    }

    #[test]
    fn a_stall_with_requests_in_flight_is_warned_about() {
        let stalls = |requests: u64| goodput_core::ClientStalls {
            count: 2,
            total_ms: 620.0,
            longest_ms: 540.0,
            requests,
            ..Default::default()
        };
        assert_eq!(stalled_client(&stalls(0)), None, "no request was in flight");
        let w = stalled_client(&stalls(3)).unwrap();
        assert!(w.starts_with("the client itself stalled 2 time(s), 620 ms in all (longest 540 ms), while 3"), "{w}");
    }
}
