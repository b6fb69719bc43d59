//! Runs that spread their requests over several models behind one server
//! (`--model a,b`, e.g. LoRA adapters): how each model fared.

use crate::analysis::metrics::{ms, RequestMetrics};
use crate::analysis::stats::Distribution;
use crate::doc::record::RequestRecord;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One model's share of a run: a row of `summary.by_model`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ModelStats {
    pub model: String,
    /// Measured requests sent to it.
    pub requests: u64,
    pub completed: u64,
    pub failed: u64,
    /// Its successful requests' output tokens per second of the run's window.
    pub output_tokens_per_s: f64,
    pub ttft_ms: Distribution,
    pub tpot_ms: Distribution,
}

/// A row per model of `measured` (warm-up excluded), in name order; empty
/// when no record names its model (a run of one model).
pub fn by_model(measured: &[&RequestRecord], percentiles: &[f64], window_s: f64) -> Vec<ModelStats> {
    let mut groups: BTreeMap<&str, Vec<&RequestRecord>> = BTreeMap::new();
    for r in measured {
        if let Some(m) = &r.model {
            groups.entry(m.as_str()).or_default().push(r);
        }
    }
    groups
        .into_iter()
        .map(|(model, recs)| {
            let ok: Vec<&&RequestRecord> = recs.iter().filter(|r| r.outcome.is_success()).collect();
            let dist = |f: &dyn Fn(&RequestRecord) -> Option<std::time::Duration>| {
                let mut v: Vec<f64> = ok.iter().filter_map(|r| f(r)).map(ms).collect();
                Distribution::from_samples(&mut v, percentiles)
            };
            let tokens = crate::analysis::stats::total(ok.iter().map(|r| r.output_tokens));
            ModelStats {
                model: model.to_owned(),
                requests: recs.len() as u64,
                completed: ok.len() as u64,
                failed: recs.iter().filter(|r| r.outcome.failure_kind().is_some()).count() as u64,
                output_tokens_per_s: if window_s > 0.0 { tokens as f64 / window_s } else { 0.0 },
                ttft_ms: dist(&|r| r.ttft()),
                tpot_ms: dist(&|r| r.tpot()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::{FailureKind, Outcome, OutputChunk};
    use crate::Channel;
    use std::time::Duration;

    fn rec(model: &str, ttft_ms: u64, ok: bool) -> RequestRecord {
        let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.model = Some(model.into());
        let t = Duration::from_millis(ttft_ms);
        r.chunks = vec![
            OutputChunk { t, tokens: 1, channel: Channel::Content },
            OutputChunk { t: t + Duration::from_millis(10), tokens: 1, channel: Channel::Content },
        ]
        .into();
        r.output_tokens = 2;
        r.end = t + Duration::from_millis(10);
        r.outcome = if ok {
            Outcome::Success
        } else {
            Outcome::Failed { kind: FailureKind::HttpStatus, message: "HTTP 404".into() }
        };
        r
    }

    #[test]
    fn each_model_is_summarised_apart() {
        let recs = [rec("b", 100, true), rec("a", 20, true), rec("a", 40, true), rec("b", 0, false)];
        let refs: Vec<&RequestRecord> = recs.iter().collect();
        let rows = by_model(&refs, &[50.0], 2.0);
        let names: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!((rows[0].requests, rows[0].completed, rows[0].failed), (2, 2, 0));
        assert_eq!((rows[1].requests, rows[1].completed, rows[1].failed), (2, 1, 1));
        assert_eq!(rows[0].ttft_ms.p(50.0), Some(30.0));
        assert_eq!(rows[1].ttft_ms.p(50.0), Some(100.0), "a failed request's times do not count");
        assert_eq!(rows[0].output_tokens_per_s, 2.0);
        assert_eq!(rows[0].tpot_ms.p(50.0), Some(10.0));
        let single = [RequestRecord::new(0, Duration::ZERO, Duration::ZERO)];
        assert!(by_model(&single.iter().collect::<Vec<_>>(), &[50.0], 1.0).is_empty());
    }
}
