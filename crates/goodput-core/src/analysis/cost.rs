//! Cost from a price per GPU-hour and the GPU count (docs/metrics.md): what a
//! million tokens, a request, and a million *good* tokens cost at the
//! throughput measured.

#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The price of the hardware under test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct CostConfig {
    /// USD per GPU per hour.
    pub gpu_hour_usd: f64,
    pub gpus: u32,
}

/// The `cost` block of a result. A figure is `null` when its divisor is zero
/// (no tokens, no requests): an infinite price is not a number to print.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct CostReport {
    pub gpu_hour_usd: f64,
    pub gpus: u32,
    pub usd_per_hour: f64,
    pub usd_per_million_output_tokens: Option<f64>,
    pub usd_per_million_total_tokens: Option<f64>,
    /// Per million input (prompt) tokens: the price of an embeddings or
    /// rerank run, whose requests have no output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_million_input_tokens: Option<f64>,
    pub usd_per_request: Option<f64>,
    /// The honest one: cost per million output tokens of requests that met the SLO.
    pub usd_per_million_good_output_tokens: Option<f64>,
    /// Per multi-turn conversation, when the workload has sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_session: Option<f64>,
}

/// What `per_s` units cost per million at `usd_per_hour`.
///
/// ```
/// // $3/h at 4,000 output tokens/s is about $0.21 per million tokens.
/// let c = goodput_core::analysis::cost::usd_per_million(3.0, 4000.0).unwrap();
/// assert!((c - 0.2083).abs() < 1e-4);
/// ```
pub fn usd_per_million(usd_per_hour: f64, per_s: f64) -> Option<f64> {
    (per_s > 0.0).then(|| usd_per_hour / (per_s * 3600.0) * 1e6)
}

/// The dearest price per GPU-hour taken: a thousand times the dearest cloud
/// GPU's, and far below where a cost per million tokens overflows (a price
/// of 1e308 gave every point an infinite cost, and `plan` picked its worst).
pub const MAX_GPU_HOUR_USD: f64 = 10_000.0;

/// A price as a refusal names it: as typed, or in exponent form when it is
/// a million or more or below a thousandth (`1e308`, not its 309 digits).
pub fn price_text(usd: f64) -> String {
    crate::util::number_text(usd)
}

/// A price that cannot cost a run.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum CostError {
    #[error("--gpu-hour-usd must be a price of zero or more, not {0}")]
    Price(f64),
    #[error(
        "--gpu-hour-usd {} is more than a GPU costs an hour (at most {MAX_GPU_HOUR_USD}, past which costs overflow): \
         give USD per GPU-hour, e.g. 2.5",
        price_text(*.0)
    )]
    Dear(f64),
    #[error(
        "--gpu-hour-usd {0:e} is less than a millionth of a dollar an hour, where costs round to nothing and \
         tokens per dollar overflow: give 0 for hardware that costs nothing, or USD per GPU-hour, e.g. 2.5"
    )]
    Tiny(f64),
    #[error("--gpus must be at least 1")]
    NoGpus,
}

/// The cheapest price per GPU-hour taken above zero: a millionth of a
/// dollar (5e-324 had given "inf M tokens per dollar").
pub const MIN_GPU_HOUR_USD: f64 = 1e-6;

/// Why a price per GPU-hour cannot cost a run, if it cannot: not a number
/// of USD, zero or more ([`CostError::Price`]), dearer than
/// [`MAX_GPU_HOUR_USD`] ([`CostError::Dear`]), or above zero and below
/// [`MIN_GPU_HOUR_USD`] ([`CostError::Tiny`]).
pub fn price_fault(usd: f64) -> Option<CostError> {
    if !(usd.is_finite() && usd >= 0.0) {
        Some(CostError::Price(usd))
    } else if usd > MAX_GPU_HOUR_USD {
        Some(CostError::Dear(usd))
    } else if usd > 0.0 && usd < MIN_GPU_HOUR_USD {
        Some(CostError::Tiny(usd))
    } else {
        None
    }
}

impl CostConfig {
    pub fn validate(&self) -> Result<(), CostError> {
        if let Some(e) = price_fault(self.gpu_hour_usd) {
            return Err(e);
        }
        if self.gpus == 0 {
            return Err(CostError::NoGpus);
        }
        Ok(())
    }

    /// Prices a run from its throughputs (per second of the window).
    pub fn report(
        &self,
        output_tokens_per_s: f64,
        total_tokens_per_s: f64,
        requests_per_s: f64,
        good_output_tokens_per_s: Option<f64>,
        sessions_per_s: Option<f64>,
    ) -> CostReport {
        let usd_per_hour = self.gpu_hour_usd * self.gpus as f64;
        CostReport {
            gpu_hour_usd: self.gpu_hour_usd,
            gpus: self.gpus,
            usd_per_hour,
            usd_per_million_output_tokens: usd_per_million(usd_per_hour, output_tokens_per_s),
            usd_per_million_total_tokens: usd_per_million(usd_per_hour, total_tokens_per_s),
            usd_per_million_input_tokens: usd_per_million(usd_per_hour, total_tokens_per_s - output_tokens_per_s),
            usd_per_request: (requests_per_s > 0.0).then(|| usd_per_hour / (requests_per_s * 3600.0)),
            usd_per_million_good_output_tokens: usd_per_million(
                usd_per_hour,
                good_output_tokens_per_s.unwrap_or(output_tokens_per_s),
            ),
            usd_per_session: sessions_per_s.filter(|s| *s > 0.0).map(|s| usd_per_hour / (s * 3600.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_examples_to_the_cent() {
        let c = CostConfig { gpu_hour_usd: 3.0, gpus: 1 };
        let r = c.report(4000.0, 6000.0, 10.0, Some(2000.0), Some(0.5));
        assert_eq!((r.usd_per_million_output_tokens.unwrap() * 100.0).round() / 100.0, 0.21);
        assert!((r.usd_per_million_total_tokens.unwrap() - 3.0 / (6000.0 * 3600.0) * 1e6).abs() < 1e-12);
        assert!((r.usd_per_request.unwrap() - 3.0 / 36000.0).abs() < 1e-12);
        assert!(
            (r.usd_per_million_good_output_tokens.unwrap() - 2.0 * r.usd_per_million_output_tokens.unwrap()).abs()
                < 1e-12
        );
        assert!((r.usd_per_session.unwrap() - 3.0 / 1800.0).abs() < 1e-12, "$3/h at a session every 2 s");
        let eight = CostConfig { gpu_hour_usd: 2.5, gpus: 8 }.report(1000.0, 1000.0, 1.0, None, None);
        assert_eq!(eight.usd_per_hour, 20.0);
        assert_eq!(
            CostConfig { gpu_hour_usd: 3.0, gpus: 1 }.report(0.0, 0.0, 0.0, None, Some(0.0)).usd_per_request,
            None
        );
        assert!(CostConfig { gpu_hour_usd: 3.0, gpus: 0 }.validate().is_err());
    }
}
