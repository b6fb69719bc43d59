//! Multi-turn sessions (README, "Use"): conversations whose every turn carries
//! the history before it. What a run's records say about them: how many
//! finished, how long a whole conversation took, and how each turn fared as
//! its context grew.

use crate::analysis::metrics::{ms, RequestMetrics};
use crate::analysis::stats::Distribution;
use crate::doc::record::{Outcome, RequestRecord};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `summary.sessions` block, present when the run's load had sessions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SessionSummary {
    /// Measured sessions that sent at least one turn.
    pub started: u64,
    /// Every planned turn succeeded.
    pub completed: u64,
    /// A turn failed, which ends its session (its history has a hole).
    pub failed: u64,
    /// Ended before its last turn with no turn failed: the run stopped
    /// (end of `--duration`, Ctrl-C) or a turn was cancelled.
    pub cut: u64,
    /// Completed sessions per second of the measurement window.
    pub per_s: f64,
    /// Turns of each completed session.
    pub turns: Distribution,
    /// A completed session from its first turn's send to its last turn's end,
    /// think time included: what one conversation takes.
    pub duration_ms: Distribution,
    /// Succeeded turns by their place in the session.
    pub by_turn: Vec<TurnStats>,
}

/// How the `turn`-th turns of all sessions fared.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct TurnStats {
    /// 1 for the opening turn.
    pub turn: u32,
    /// Succeeded turns at this place.
    pub requests: u64,
    /// Mean input tokens: the history grows turn by turn.
    pub input_tokens_mean: f64,
    /// Mean prompt tokens the server served from its prefix cache, where its
    /// usage reported them (`prompt_tokens_details.cached_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens_mean: Option<f64>,
    pub ttft_ms: Distribution,
}

/// The sessions of `measured` (warm-up excluded), or `None` when no record
/// belongs to one. `window_s` is the measurement window's length.
pub fn summarize(measured: &[&RequestRecord], percentiles: &[f64], window_s: f64) -> Option<SessionSummary> {
    let mut sessions: BTreeMap<u64, Vec<&RequestRecord>> = BTreeMap::new();
    for r in measured {
        if let Some(s) = r.session {
            sessions.entry(s.id).or_default().push(r);
        }
    }
    if sessions.is_empty() {
        return None;
    }
    let mut out = SessionSummary { started: sessions.len() as u64, ..Default::default() };
    let (mut turns, mut durations) = (Vec::new(), Vec::new());
    for recs in sessions.values() {
        let planned = recs.iter().filter_map(|r| r.session).map(|s| s.turns).max().unwrap_or(0);
        if recs.iter().any(|r| matches!(r.outcome, Outcome::Failed { .. })) {
            out.failed += 1;
        } else if recs.len() as u32 == planned && recs.iter().all(|r| r.outcome.is_success()) {
            out.completed += 1;
            turns.push(planned as f64);
            let first = recs.iter().map(|r| r.sent).min().unwrap_or_default();
            let last = recs.iter().map(|r| r.end).max().unwrap_or_default();
            durations.push(ms(last.saturating_sub(first)));
        } else {
            out.cut += 1;
        }
    }
    out.per_s = if window_s > 0.0 { out.completed as f64 / window_s } else { 0.0 };
    out.turns = Distribution::from_samples(&mut turns, percentiles);
    out.duration_ms = Distribution::from_samples(&mut durations, percentiles);

    let mut by_turn: BTreeMap<u32, Vec<&RequestRecord>> = BTreeMap::new();
    for r in measured.iter().filter(|r| r.outcome.is_success()) {
        if let Some(s) = r.session {
            by_turn.entry(s.turn).or_default().push(r);
        }
    }
    out.by_turn = by_turn
        .into_iter()
        .map(|(turn, recs)| {
            let n = recs.len() as f64;
            let cached: Vec<u64> = recs.iter().filter_map(|r| r.counts.usage_cached_prompt).collect();
            let mut ttft: Vec<f64> = recs.iter().filter_map(|r| r.ttft()).map(ms).collect();
            TurnStats {
                turn,
                requests: recs.len() as u64,
                input_tokens_mean: recs.iter().map(|r| r.input_tokens as f64).sum::<f64>() / n,
                cached_tokens_mean: (!cached.is_empty())
                    .then(|| cached.iter().map(|&c| c as f64).sum::<f64>() / cached.len() as f64),
                ttft_ms: Distribution::from_samples(&mut ttft, percentiles),
            }
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::{Channel, FailureKind, OutputChunk, SessionTurn};
    use std::time::Duration;

    /// Turn `turn` of `turns` in session `id`, sent at `sent` ms, its one
    /// chunk `ttft` ms later, with `input` tokens of which `cached` cached.
    fn turn(id: u64, turn: u32, turns: u32, sent: u64, ttft: u64, input: u64, cached: u64) -> RequestRecord {
        let ms = Duration::from_millis;
        let mut r = RequestRecord::new(id * 10 + turn as u64, ms(sent), ms(sent));
        r.chunks = vec![OutputChunk { t: ms(sent + ttft), tokens: 1, channel: Channel::Content }].into();
        r.end = ms(sent + ttft);
        r.output_tokens = 1;
        r.input_tokens = input;
        r.counts.usage_cached_prompt = Some(cached);
        r.outcome = Outcome::Success;
        r.session = Some(SessionTurn { id, turn, turns });
        r
    }

    #[test]
    fn completed_failed_and_cut_sessions_and_turn_by_turn_figures() {
        let failed = {
            let mut r = turn(2, 2, 2, 1000, 50, 300, 0);
            r.outcome = Outcome::Failed { kind: FailureKind::Timeout, message: "slow".into() };
            r
        };
        let records = [
            // Session 0: two turns, 1 s apart, the second one 100 tokens longer and mostly cached.
            turn(0, 1, 2, 0, 200, 100, 0),
            turn(0, 2, 2, 1200, 100, 200, 96),
            // Session 1: three turns planned, the run stopped after one.
            turn(1, 1, 3, 0, 300, 100, 0),
            // Session 2: its second turn failed.
            turn(2, 1, 2, 0, 100, 100, 0),
            failed,
        ];
        let measured: Vec<&RequestRecord> = records.iter().collect();
        let s = summarize(&measured, &[50.0], 4.0).unwrap();
        assert_eq!((s.started, s.completed, s.failed, s.cut), (3, 1, 1, 1));
        assert_eq!(s.per_s, 0.25);
        assert_eq!(s.turns.mean, Some(2.0));
        assert_eq!(s.duration_ms.max, Some(1300.0), "first send to last end");
        assert_eq!(s.by_turn.len(), 2);
        let (t1, t2) = (&s.by_turn[0], &s.by_turn[1]);
        assert_eq!((t1.turn, t1.requests, t1.input_tokens_mean), (1, 3, 100.0));
        assert_eq!(t1.ttft_ms.p(50.0), Some(200.0));
        assert_eq!((t2.turn, t2.requests, t2.input_tokens_mean, t2.cached_tokens_mean), (2, 1, 200.0, Some(96.0)));
        // No sessions, no block.
        let plain = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        assert_eq!(summarize(&[&plain], &[50.0], 1.0), None);
    }

    proptest::proptest! {
        /// Whatever the turns' outcomes and how many came back, every
        /// session is completed, failed or cut, once; a completed one has all
        /// its turns; the turns counted by place add up to the successes.
        #[test]
        fn every_session_is_counted_once(
            sessions in proptest::collection::vec((1u32..5, proptest::collection::vec(0u8..3, 0..5)), 1..20)
        ) {
            let mut records = Vec::new();
            for (id, (turns, outcomes)) in sessions.iter().enumerate() {
                for (k, o) in outcomes.iter().take(*turns as usize).enumerate() {
                    let mut r = turn(id as u64, k as u32 + 1, *turns, 10 * k as u64, 5, 10, 0);
                    r.outcome = match o {
                        0 => Outcome::Success,
                        1 => Outcome::Failed { kind: FailureKind::HttpStatus, message: "500".into() },
                        _ => Outcome::Cancelled,
                    };
                    records.push(r);
                }
            }
            let measured: Vec<&RequestRecord> = records.iter().collect();
            let Some(s) = summarize(&measured, &[50.0], 1.0) else {
                proptest::prop_assert!(records.is_empty());
                return Ok(());
            };
            proptest::prop_assert_eq!(s.started, s.completed + s.failed + s.cut);
            let full = sessions.iter().filter(|(t, o)| o.len() >= *t as usize && o[..*t as usize].iter().all(|x| *x == 0));
            proptest::prop_assert_eq!(s.completed, full.count() as u64);
            let ok = records.iter().filter(|r| r.outcome.is_success()).count() as u64;
            proptest::prop_assert_eq!(s.by_turn.iter().map(|t| t.requests).sum::<u64>(), ok);
        }
    }
}
