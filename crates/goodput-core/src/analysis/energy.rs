//! Energy per configuration (docs/metrics.md, "Energy"): joules per output
//! token, and output tokens per second per provisioned megawatt (TDP × GPUs),
//! from the simulated engine's power model or from the GPUs' own energy
//! counters scraped during a live run.

#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a run's joules come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EnergySource {
    /// The simulated engine's power model (`estimate`; docs/simulator.md).
    Model,
    /// The GPUs' energy counters (DCGM's `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`
    /// or Triton's `nv_energy_consumption`), scraped during the run.
    Scraped,
}

/// The `energy` block of a result. A figure is `null` when what it divides
/// by is zero or unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct EnergyReport {
    pub source: EnergySource,
    /// Joules the GPUs drew over `seconds`.
    pub energy_j: f64,
    /// The span the joules cover: the simulated run from its start to its
    /// last token, or the scrape window.
    pub seconds: f64,
    /// Output tokens generated over that span (the engine's count, warm-up
    /// included).
    pub output_tokens: u64,
    /// energy ÷ output tokens.
    pub joules_per_output_token: Option<f64>,
    /// energy ÷ seconds, all GPUs together.
    pub mean_power_w: Option<f64>,
    /// GPUs the power is drawn by, where known.
    pub gpus: Option<u32>,
    /// What the GPUs are provisioned for: TDP × GPUs (the simulated engine's
    /// catalog), or the GPUs' power limits as DCGM reports them.
    pub provisioned_w: Option<f64>,
    /// The run's output tokens/s (the summary's) per provisioned megawatt:
    /// what a datacenter's power budget buys.
    pub output_tokens_per_s_per_provisioned_mw: Option<f64>,
}

impl EnergyReport {
    /// A report from joules over a span and its tokens, and the run's output
    /// tokens/s against the provisioned watts.
    pub fn new(
        source: EnergySource,
        energy_j: f64,
        seconds: f64,
        output_tokens: u64,
        gpus: Option<u32>,
        provisioned_w: Option<f64>,
        output_tokens_per_s: f64,
    ) -> EnergyReport {
        let positive = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
        EnergyReport {
            source,
            energy_j,
            seconds,
            output_tokens,
            joules_per_output_token: (output_tokens > 0).then(|| energy_j / output_tokens as f64),
            mean_power_w: positive(seconds).map(|s| energy_j / s),
            gpus,
            provisioned_w: provisioned_w.and_then(positive),
            output_tokens_per_s_per_provisioned_mw: provisioned_w
                .and_then(positive)
                .map(|w| output_tokens_per_s / (w / 1e6)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        // Two 700 W GPUs drawing 900 J/s for 10 s while 9,000 tokens come
        // out at 1,000 tokens/s: 1 J a token, 1,000 / 0.0014 MW.
        let r = EnergyReport::new(EnergySource::Model, 9000.0, 10.0, 9000, Some(2), Some(1400.0), 1000.0);
        assert_eq!(r.joules_per_output_token, Some(1.0));
        assert_eq!(r.mean_power_w, Some(900.0));
        let per_mw = r.output_tokens_per_s_per_provisioned_mw.unwrap();
        assert!((per_mw - 1000.0 / 0.0014).abs() < 1e-6, "{per_mw}");
        let none = EnergyReport::new(EnergySource::Scraped, 0.0, 0.0, 0, None, None, 0.0);
        assert_eq!((none.joules_per_output_token, none.mean_power_w), (None, None));
        assert_eq!(none.output_tokens_per_s_per_provisioned_mw, None);
    }
}
