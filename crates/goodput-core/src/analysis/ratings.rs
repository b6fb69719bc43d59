//! Ratings of what users feel (docs/metrics.md): TTFT and TPOT bands, speed against
//! human reading, and how well TTFT + TPOT × (n_out − 1) explains e2e.

use crate::analysis::metrics::{ms, RequestMetrics};
use crate::analysis::stats::Distribution;
use crate::doc::record::RequestRecord;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A band for one latency figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Band {
    Excellent,
    Acceptable,
    Marginal,
    Poor,
}

/// Band edges in milliseconds: excellent below `excellent`, acceptable up to
/// `acceptable`, poor above `poor`, marginal between.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Thresholds {
    pub excellent: f64,
    pub acceptable: f64,
    pub poor: f64,
}

impl Thresholds {
    pub fn band(&self, v_ms: f64) -> Band {
        if v_ms < self.excellent {
            Band::Excellent
        } else if v_ms <= self.acceptable {
            Band::Acceptable
        } else if v_ms > self.poor {
            Band::Poor
        } else {
            Band::Marginal
        }
    }
}

/// The defaults of docs/metrics.md ("Ratings"), configurable.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RatingThresholds {
    pub ttft: Thresholds,
    pub tpot: Thresholds,
    /// Human reading speed, tokens per second.
    pub reading_tokens_per_s: f64,
}

impl Default for RatingThresholds {
    fn default() -> Self {
        RatingThresholds {
            ttft: Thresholds { excellent: 200.0, acceptable: 800.0, poor: 1000.0 },
            tpot: Thresholds { excellent: 30.0, acceptable: 80.0, poor: 100.0 },
            reading_tokens_per_s: 5.0,
        }
    }
}

/// One rated figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Rated {
    pub value_ms: f64,
    pub band: Band,
}

/// `summary.ratings` of the result (docs/result.md).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Ratings {
    pub ttft_p50: Option<Rated>,
    pub ttft_p95: Option<Rated>,
    pub tpot_p50: Option<Rated>,
    pub tpot_p95: Option<Rated>,
    /// Stream speed at median TPOT over human reading speed (≈5 tokens/s).
    pub times_reading_speed: Option<f64>,
    /// The latency model e2e ≈ TTFT + TPOT × (n_out − k_first), checked per
    /// request (k_first: the tokens of the first output chunk, 1 when every
    /// chunk carries one, as TPOT divides by).
    pub latency_model: LatencyModel,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct LatencyModel {
    /// Median measured e2e over successful requests.
    pub measured_e2e_p50_ms: Option<f64>,
    /// TTFT p50 + TPOT p50 × (median n_out − k_first): what the summary figures predict.
    pub model_e2e_p50_ms: Option<f64>,
    /// (measured − model) / measured at the median.
    pub relative_deviation: Option<f64>,
    /// Per request, |e2e − (ttft + tpot × (n_out − k_first))| / e2e: zero
    /// when e2e ends at the last output chunk (as TPOT does), whatever the
    /// tokens per chunk; larger where the stream ends after it.
    pub mean_abs_relative_error: Option<f64>,
    pub max_abs_relative_error: Option<f64>,
}

/// The model's e2e: TTFT + TPOT × (n_out − 1), in milliseconds (`n − 1`: the
/// first token arrives at TTFT, each later one a TPOT after the last).
///
/// ```
/// // TTFT 800 ms and TPOT 50 ms over 100 tokens: about 5.8 s.
/// assert_eq!(goodput_core::analysis::ratings::model_e2e_ms(800.0, 50.0, 100), 5750.0);
/// ```
pub fn model_e2e_ms(ttft_ms: f64, tpot_ms: f64, n_out: u64) -> f64 {
    model_e2e_after_first_ms(ttft_ms, tpot_ms, n_out.saturating_sub(1))
}

/// The model's e2e as goodput's TPOT defines it: TTFT + TPOT ×
/// `after_first`, the tokens after the first output chunk (n_out −
/// k_first). With one token a chunk this is [`model_e2e_ms`]; with five
/// tokens a chunk, n − 1 had overstated the model by a chunk's four tokens
/// (e2e p50 161.5 ms against a model of 177.3 ms, −9.8%, every figure exact).
pub fn model_e2e_after_first_ms(ttft_ms: f64, tpot_ms: f64, after_first: u64) -> f64 {
    ttft_ms + tpot_ms * after_first as f64
}

/// `r`'s output tokens after its first output chunk (n_out − k_first),
/// the divisor of its TPOT.
fn after_first(r: &RequestRecord) -> Option<u64> {
    r.output_tokens.checked_sub(u64::from(r.chunks.first()?.tokens))
}

/// The percentiles the ratings band, whatever a run's `--percentiles`.
pub const RATED_PERCENTILES: [f64; 2] = [50.0, 95.0];

/// Rates a run from its successful records and their TTFT and TPOT
/// distributions, which must hold [`RATED_PERCENTILES`].
pub fn rate(ok: &[&RequestRecord], ttft: &Distribution, tpot: &Distribution, th: &RatingThresholds) -> Ratings {
    let rated = |v: Option<f64>, t: &Thresholds| v.map(|value_ms| Rated { value_ms, band: t.band(value_ms) });
    let mut errs = Vec::new();
    for r in ok {
        if let (Some(e2e), Some(ttft), Some(tpot), Some(k)) = (r.e2e(), r.ttft(), r.tpot(), after_first(r)) {
            let e = ms(e2e);
            if e > 0.0 {
                errs.push((e - model_e2e_after_first_ms(ms(ttft), ms(tpot), k)).abs() / e);
            }
        }
    }
    let mut e2e: Vec<f64> = ok.iter().filter_map(|r| r.e2e()).map(ms).collect();
    let mut n_out: Vec<f64> = ok.iter().filter_map(|r| after_first(r)).map(|k| k as f64).collect();
    let measured = Distribution::from_samples(&mut e2e, &[50.0]).p(50.0);
    let n50 = Distribution::from_samples(&mut n_out, &[50.0]).p(50.0);
    let model = match (ttft.p(50.0), tpot.p(50.0), n50) {
        (Some(a), Some(b), Some(n)) => Some(model_e2e_after_first_ms(a, b, n.round() as u64)),
        _ => None,
    };
    let n = errs.len();
    Ratings {
        ttft_p50: rated(ttft.p(50.0), &th.ttft),
        ttft_p95: rated(ttft.p(95.0), &th.ttft),
        tpot_p50: rated(tpot.p(50.0), &th.tpot),
        tpot_p95: rated(tpot.p(95.0), &th.tpot),
        times_reading_speed: tpot.p(50.0).filter(|&t| t > 0.0).map(|t| 1000.0 / t / th.reading_tokens_per_s),
        latency_model: LatencyModel {
            measured_e2e_p50_ms: measured,
            model_e2e_p50_ms: model,
            relative_deviation: match (measured, model) {
                (Some(m), Some(p)) if m > 0.0 => Some((m - p) / m),
                _ => None,
            },
            mean_abs_relative_error: (n > 0).then(|| errs.iter().sum::<f64>() / n as f64),
            max_abs_relative_error: errs.iter().copied().reduce(f64::max),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_follow_the_defaults() {
        let t = RatingThresholds::default();
        assert_eq!(t.ttft.band(150.0), Band::Excellent);
        assert_eq!(t.ttft.band(800.0), Band::Acceptable);
        assert_eq!(t.ttft.band(900.0), Band::Marginal);
        assert_eq!(t.ttft.band(1200.0), Band::Poor);
        assert_eq!(t.tpot.band(29.0), Band::Excellent);
        assert_eq!(t.tpot.band(80.0), Band::Acceptable);
        assert_eq!(t.tpot.band(95.0), Band::Marginal);
        assert_eq!(t.tpot.band(101.0), Band::Poor);
    }

    #[test]
    fn worked_examples() {
        // TTFT 800 ms, TPOT 50 ms, 100 tokens ≈ 5.8 s.
        assert!((model_e2e_ms(800.0, 50.0, 100) / 1000.0 - 5.8).abs() < 0.06);
        // The chatbot: TTFT 1.2 s, TPOT 80 ms, 50 tokens: 5.12 s with n − 1
        // (5.2 s with n); poor on TTFT.
        assert_eq!(model_e2e_ms(1200.0, 80.0, 50), 5120.0);
        assert_eq!(RatingThresholds::default().ttft.band(1200.0), Band::Poor);
        assert_eq!(RatingThresholds::default().tpot.band(80.0), Band::Acceptable);
    }

    /// Probe 82: four chunks of five tokens, every figure exact (TTFT 100,
    /// chunks 20 ms apart: TPOT 60/15 = 4 ms, e2e 160 ms). With n − 1 the
    /// check had read −9.8%; with n − k_first it is exact.
    #[test]
    fn the_model_takes_the_first_chunks_tokens_as_tpot_does() {
        use crate::doc::record::{Channel, Outcome, OutputChunk};
        use std::time::Duration;
        let recs: Vec<RequestRecord> = (0..3)
            .map(|i| {
                let mut r = RequestRecord::new(i, Duration::ZERO, Duration::ZERO);
                r.chunks = (0..4)
                    .map(|c| OutputChunk {
                        t: Duration::from_millis(100 + 20 * c),
                        tokens: 5,
                        channel: Channel::Content,
                    })
                    .collect();
                r.end = Duration::from_millis(160);
                r.output_tokens = 20;
                r.outcome = Outcome::Success;
                r
            })
            .collect();
        let ok: Vec<&RequestRecord> = recs.iter().collect();
        let dist = |v: f64| Distribution::from_samples(&mut [v; 3], &RATED_PERCENTILES);
        let m = rate(&ok, &dist(100.0), &dist(4.0), &RatingThresholds::default()).latency_model;
        assert_eq!((m.measured_e2e_p50_ms, m.model_e2e_p50_ms), (Some(160.0), Some(160.0)));
        assert!(m.relative_deviation.unwrap().abs() < 1e-12, "{m:?}");
        assert!(m.max_abs_relative_error.unwrap() < 1e-12, "{m:?}");
    }
}
