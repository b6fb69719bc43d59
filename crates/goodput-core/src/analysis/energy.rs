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
    /// included); 0 for a run whose client received no output tokens
    /// (embeddings, rerank, every request failed), whatever the engine
    /// counted (an embeddings server counts a "generation token" a request).
    pub output_tokens: u64,
    /// energy ÷ output tokens; `null` without output tokens.
    pub joules_per_output_token: Option<f64>,
    /// energy ÷ seconds, all GPUs together.
    pub mean_power_w: Option<f64>,
    /// GPUs the power is drawn by, where known.
    pub gpus: Option<u32>,
    /// What the GPUs are provisioned for: TDP × GPUs (the simulated engine's
    /// catalog), or the GPUs' power limits as DCGM reports them.
    pub provisioned_w: Option<f64>,
    /// The run's output tokens/s (the summary's) per provisioned megawatt:
    /// what a datacenter's power budget buys; `null` without output tokens,
    /// or without provisioned watts for every GPU the energy covers.
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
        // A run with no output (embeddings, rerank, every request failed)
        // has no figure per output token: an embeddings server's one
        // "generation token" a request is none, and 0 tok/s per MW no rate.
        let has_output = positive(output_tokens_per_s).is_some();
        let output_tokens = if has_output { output_tokens } else { 0 };
        EnergyReport {
            source,
            energy_j,
            seconds,
            output_tokens,
            joules_per_output_token: (output_tokens > 0 && has_output).then(|| energy_j / output_tokens as f64),
            mean_power_w: positive(seconds).map(|s| energy_j / s),
            gpus,
            provisioned_w: provisioned_w.and_then(positive),
            output_tokens_per_s_per_provisioned_mw: provisioned_w
                .and_then(positive)
                .filter(|_| has_output)
                .map(|w| output_tokens_per_s / (w / 1e6)),
        }
    }

    /// The report, or why its figures cannot be the GPUs' draw: a mean
    /// power above what they are provisioned for by more than
    /// [`POWER_MARGIN`] (GPUs hold to their power limits; a brief excursion
    /// past one does not move a mean so far). The likely cause is an energy
    /// counter's total since boot taken as drawn in the run, or power limits
    /// reported for fewer GPUs than the energy counters cover.
    pub fn checked(self) -> Result<EnergyReport, String> {
        let (Some(p), Some(w)) = (self.mean_power_w, self.provisioned_w) else { return Ok(self) };
        if p <= w * POWER_MARGIN {
            return Ok(self);
        }
        let per_token =
            self.joules_per_output_token.map(|j| format!(", {j:.3} J per output token")).unwrap_or_default();
        let whence = match self.source {
            EnergySource::Scraped => {
                "an energy counter's total since boot counted as drawn in the run (a counter reset the \
                 exporter did not show as one), or power limits reported for fewer GPUs than the energy \
                 counters cover"
            }
            EnergySource::Model => "a power model that does not fit the GPUs' catalog entry",
        };
        Err(format!(
            "energy withheld: {:.0} J over {:.1} s is a mean {p:.0} W{per_token}, more than the {w:.0} W the GPUs \
             are provisioned for; the likely cause is {whence}",
            self.energy_j, self.seconds
        ))
    }
}

/// How far above its provisioned watts a mean power may be before
/// [`EnergyReport::checked`] refuses it.
pub const POWER_MARGIN: f64 = 1.25;

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

    /// An embeddings run: the server counted a "generation token" a
    /// request and the client received none. No figure per output token
    /// (it had said 2.249 J per output token and 0 tok/s per MW).
    #[test]
    fn a_run_without_output_tokens_has_no_output_figures() {
        let r = EnergyReport::new(EnergySource::Scraped, 2465.0, 4.0, 1096, Some(2), Some(1400.0), 0.0);
        assert_eq!((r.output_tokens, r.joules_per_output_token), (0, None));
        assert_eq!(r.output_tokens_per_s_per_provisioned_mw, None);
        assert_eq!((r.mean_power_w, r.provisioned_w), (Some(2465.0 / 4.0), Some(1400.0)));
    }

    #[test]
    fn a_mean_power_far_above_what_is_provisioned_is_withheld() {
        // 800 W on two 700 W GPUs is theirs; 1.77 MW is a since-boot total.
        let fair = EnergyReport::new(EnergySource::Scraped, 4000.0, 5.0, 4500, Some(2), Some(1400.0), 900.0);
        assert_eq!(fair.clone().checked(), Ok(fair));
        let at_the_margin =
            EnergyReport::new(EnergySource::Scraped, 1750.0 * 5.0, 5.0, 4500, Some(2), Some(1400.0), 900.0);
        assert!(at_the_margin.checked().is_ok());
        let boot = EnergyReport::new(EnergySource::Scraped, 1769005.0 * 5.0, 5.0, 4500, Some(2), Some(1400.0), 900.0);
        let why = boot.checked().unwrap_err();
        assert!(why.starts_with("energy withheld: 8845025 J over 5.0 s is a mean 1769005 W"), "{why}");
        assert!(why.contains("1400 W") && why.contains("since boot"), "{why}");
        // Nothing to check against without a power limit.
        let unknown = EnergyReport::new(EnergySource::Scraped, 1e9, 5.0, 4500, None, None, 900.0);
        assert!(unknown.checked().is_ok());
    }
}
