//! Repeated runs (`bench --runs N`, `estimate --runs N`): each run's
//! headline figures and their spread from run to run (docs/metrics.md,
//! "Spread across runs"). The document's top level is the first run, whole;
//! this block holds every run's figures beside it.

use crate::analysis::interval::t_quantile;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The runs of a repeated measurement and each figure's run-to-run spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Repeats {
    /// Runs made (fewer than asked when the command was stopped).
    pub n: u32,
    /// Runs asked for (`--runs`).
    pub asked: u32,
    /// Each run's seed, in order: the first run's, then one more each run,
    /// or all the same with `--same-seed`.
    pub seeds: Vec<u64>,
    #[serde(default)]
    pub same_seed: bool,
    /// The level of each spread's interval of the mean (`--confidence`).
    pub confidence: f64,
    pub runs: Vec<RepeatRun>,
    /// A figure per entry, in the order `compare` shows them; only figures
    /// some run has.
    pub spread: Vec<Spread>,
    /// What a reader should know: runs that could not differ, runs stopped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One run's headline figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RepeatRun {
    /// 1 for the first run (the document's top level), then 2, 3…
    pub index: u32,
    pub seed: u64,
    pub run_id: String,
    pub started_unix_s: f64,
    #[serde(default)]
    pub interrupted: bool,
    /// A failure storm stopped the run early (its document's `stop`): the
    /// server failed every request, and the runs after it were not made.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stormed: bool,
    /// Measured requests that completed and that failed.
    pub completed: u64,
    pub failed: u64,
    /// Each figure by its metric path (`ttft_ms.p99`, `output_tokens_per_s`,
    /// as `compare --fail-if` names them); a figure the run lacks is absent.
    pub figures: BTreeMap<String, f64>,
}

/// One figure across the runs: mean, sample standard deviation, range and
/// Student's t interval of the mean at `confidence`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Spread {
    /// The metric path (`ttft_ms.p99`).
    pub figure: String,
    /// Runs that had it.
    pub n: u32,
    pub mean: f64,
    /// Sample standard deviation (n − 1); absent for one run.
    pub sd: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// mean ± t(1 − (1 − confidence)/2, n − 1) · sd / √n, kept within what
    /// the figure can be (not below zero; a share not above one); absent
    /// for one run.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl Spread {
    /// The spread of `values` (one per run that has the figure) at `conf`;
    /// `None` for no value.
    pub fn of(figure: &str, values: &[f64], conf: f64) -> Option<Spread> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (sd, lo, hi) = if n >= 2 {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let sd = var.sqrt();
            let half = t_quantile(0.5 + conf / 2.0, (n - 1) as f64) * sd / (n as f64).sqrt();
            (Some(sd), Some(mean - half), Some(mean + half))
        } else {
            (None, None, None)
        };
        Some(Spread { figure: figure.into(), n: n as u32, mean, sd, min, max, lo, hi })
    }

    /// Standard deviation over mean; absent for one run or a zero mean.
    pub fn cv(&self) -> Option<f64> {
        self.sd.filter(|_| self.mean != 0.0).map(|sd| sd / self.mean.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_known_values() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample variance 32/7.
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Spread::of("x", &v, 0.95).unwrap();
        assert_eq!(s.n, 8);
        assert!((s.mean - 5.0).abs() < 1e-12);
        let sd = (32.0f64 / 7.0).sqrt();
        assert!((s.sd.unwrap() - sd).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // t(0.975, 7) = 2.364624 (tables).
        let half = 2.364624 * sd / 8f64.sqrt();
        assert!((s.hi.unwrap() - (5.0 + half)).abs() < 1e-5, "{s:?}");
        assert!((s.lo.unwrap() - (5.0 - half)).abs() < 1e-5);
    }

    /// A small deterministic generator (splitmix64) and normal draws by
    /// Box–Muller, so the test needs no crate.
    struct Draws(u64);

    impl Draws {
        fn unit(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u, v) = (self.unit().max(1e-300), self.unit());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }

    /// Over many sets of runs drawn from a known normal figure, the interval
    /// of the mean holds the true mean at about the level asked, for 3, 5
    /// and 10 runs and two levels.
    #[test]
    fn the_interval_of_the_mean_covers_at_its_level() {
        let mut d = Draws(7);
        for &(n, conf) in &[(3usize, 0.95), (5, 0.95), (10, 0.95), (5, 0.9)] {
            let trials = 4000;
            let mut held = 0;
            for _ in 0..trials {
                let v: Vec<f64> = (0..n).map(|_| 100.0 + 8.0 * d.normal()).collect();
                let s = Spread::of("x", &v, conf).unwrap();
                if s.lo.unwrap() <= 100.0 && 100.0 <= s.hi.unwrap() {
                    held += 1;
                }
            }
            let rate = f64::from(held) / f64::from(trials);
            // 4000 trials: the rate's own sd is about 0.35 points.
            assert!((rate - conf).abs() < 0.015, "{n} runs at {conf}: held {rate}");
        }
    }

    #[test]
    fn one_run_has_no_spread() {
        let s = Spread::of("x", &[3.0], 0.95).unwrap();
        assert_eq!((s.sd, s.lo, s.hi), (None, None, None));
        assert_eq!((s.min, s.max, s.mean), (3.0, 3.0, 3.0));
        assert!(Spread::of("x", &[], 0.95).is_none());
    }

    #[test]
    fn identical_runs_have_a_zero_width_interval() {
        let s = Spread::of("x", &[7.0, 7.0, 7.0], 0.9).unwrap();
        assert_eq!((s.sd, s.lo, s.hi), (Some(0.0), Some(7.0), Some(7.0)));
        assert_eq!(s.cv(), Some(0.0));
    }
}
