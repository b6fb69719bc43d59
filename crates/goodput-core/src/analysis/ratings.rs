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
    /// The latency model e2e ≈ TTFT + TPOT × (n_out − 1), checked per request.
    pub latency_model: LatencyModel,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct LatencyModel {
    /// Median measured e2e over successful requests.
    pub measured_e2e_p50_ms: Option<f64>,
    /// TTFT p50 + TPOT p50 × (median n_out − 1): what the summary figures predict.
    pub model_e2e_p50_ms: Option<f64>,
    /// (measured − model) / measured at the median.
    pub relative_deviation: Option<f64>,
    /// Per request, |e2e − (ttft + tpot × (n_out − 1))| / e2e: zero when every
    /// chunk carries one token, larger when chunks bunch tokens unevenly.
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
    ttft_ms + tpot_ms * n_out.saturating_sub(1) as f64
}

/// The percentiles the ratings band, whatever a run's `--percentiles`.
pub const RATED_PERCENTILES: [f64; 2] = [50.0, 95.0];

/// Rates a run from its successful records and their TTFT and TPOT
/// distributions, which must hold [`RATED_PERCENTILES`].
pub fn rate(ok: &[&RequestRecord], ttft: &Distribution, tpot: &Distribution, th: &RatingThresholds) -> Ratings {
    let rated = |v: Option<f64>, t: &Thresholds| v.map(|value_ms| Rated { value_ms, band: t.band(value_ms) });
    let mut errs = Vec::new();
    for r in ok {
        if let (Some(e2e), Some(ttft), Some(tpot)) = (r.e2e(), r.ttft(), r.tpot()) {
            let e = ms(e2e);
            if e > 0.0 {
                errs.push((e - model_e2e_ms(ms(ttft), ms(tpot), r.output_tokens)).abs() / e);
            }
        }
    }
    let mut e2e: Vec<f64> = ok.iter().filter_map(|r| r.e2e()).map(ms).collect();
    let mut n_out: Vec<f64> = ok.iter().map(|r| r.output_tokens as f64).collect();
    let measured = Distribution::from_samples(&mut e2e, &[50.0]).p(50.0);
    let n50 = Distribution::from_samples(&mut n_out, &[50.0]).p(50.0);
    let model = match (ttft.p(50.0), tpot.p(50.0), n50) {
        (Some(a), Some(b), Some(n)) => Some(model_e2e_ms(a, b, n.round() as u64)),
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
}
