//! A slice of a run's time, for re-analysing part of a run (`goodput report
//! --window`): the steady state without the ramp, the minute a deploy went
//! out, the stretch before Ctrl-C.

use crate::RequestRecord;
use std::collections::HashMap;
use std::time::Duration;

/// `[from, to)` on the run's clock (the records' zero); no `to` runs to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeSlice {
    pub from: Duration,
    pub to: Option<Duration>,
}

impl TimeSlice {
    pub fn contains(&self, t: Duration) -> bool {
        t >= self.from && self.to.is_none_or(|to| t < to)
    }

    /// The measured records the slice holds: those sent inside it, whole
    /// (a request that ends after the slice keeps its whole latency, so the
    /// analysis window reaches its end). A session's turns stay together:
    /// it is in when its first turn was sent inside. Warm-up stays out.
    pub fn select(&self, records: &[RequestRecord]) -> Vec<RequestRecord> {
        let mut session_start: HashMap<u64, Duration> = HashMap::new();
        for r in records {
            if let Some(s) = &r.session {
                let t = session_start.entry(s.id).or_insert(r.sent);
                *t = (*t).min(r.sent);
            }
        }
        records
            .iter()
            .filter(|r| !r.warmup)
            .filter(|r| {
                let start = r.session.as_ref().and_then(|s| session_start.get(&s.id)).copied().unwrap_or(r.sent);
                self.contains(start)
            })
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionTurn;

    fn rec(id: u64, sent_ms: u64, session: Option<(u64, u32)>) -> RequestRecord {
        let sent = Duration::from_millis(sent_ms);
        let mut r = RequestRecord::new(id, sent, sent);
        r.end = sent + Duration::from_millis(500);
        r.session = session.map(|(id, turn)| SessionTurn { id, turn, turns: 2 });
        r
    }

    #[test]
    fn requests_are_in_by_their_send_and_sessions_by_their_first_turn() {
        let mut warm = rec(0, 100, None);
        warm.warmup = true;
        let records = vec![
            warm,
            rec(1, 900, None),
            rec(2, 1000, None),
            rec(3, 1999, None),
            rec(4, 2000, None),
            // A session that starts before the slice and goes on inside it: out.
            rec(5, 800, Some((7, 0))),
            rec(6, 1500, Some((7, 1))),
            // One that starts inside and ends after it: in, whole.
            rec(7, 1800, Some((8, 0))),
            rec(8, 2600, Some((8, 1))),
        ];
        let slice = TimeSlice { from: Duration::from_secs(1), to: Some(Duration::from_secs(2)) };
        let ids: Vec<u64> = slice.select(&records).iter().map(|r| r.id).collect();
        assert_eq!(ids, [2, 3, 7, 8]);
        let open = TimeSlice { from: Duration::ZERO, to: None };
        assert_eq!(open.select(&records).len(), records.len() - 1, "all but the warm-up");
    }
}
