//! The judging config file (`--config goodput.toml`): SLOs, a named price
//! list, and the rating thresholds, so a team writes them once. Flags given
//! on the command line win over the file.
//!
//! ```toml
//! slo = "ttft<=500ms,tpot<=50ms,ttft:p95<=300ms"
//! gpus = 2
//! price = "h100"                  # a key of [prices]
//! [prices]
//! h100 = 3.00                     # USD per GPU-hour
//! a100 = 1.80
//! [ratings.ttft]                  # milliseconds
//! excellent = 200
//! acceptable = 800
//! poor = 1000
//! [ratings.tpot]
//! excellent = 30
//! acceptable = 80
//! poor = 100
//! [ratings]
//! reading_tokens_per_s = 5
//! ```

use anyhow::{anyhow, bail, Result};
use goodput_core::analysis::cost::CostConfig;
use goodput_core::analysis::ratings::{RatingThresholds, Thresholds};
use goodput_core::Slo;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub slo: Option<String>,
    pub gpus: Option<u32>,
    /// A key of `prices`.
    pub price: Option<String>,
    /// USD per GPU-hour, by name.
    #[serde(default)]
    pub prices: BTreeMap<String, f64>,
    pub ratings: Option<RatingsFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatingsFile {
    pub ttft: Option<ThresholdsFile>,
    pub tpot: Option<ThresholdsFile>,
    pub reading_tokens_per_s: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdsFile {
    pub excellent: f64,
    pub acceptable: f64,
    pub poor: f64,
}

impl ThresholdsFile {
    fn check(&self, name: &str) -> Result<Thresholds> {
        if !(0.0 < self.excellent && self.excellent <= self.acceptable && self.acceptable <= self.poor) {
            bail!("[ratings.{name}] needs 0 < excellent ≤ acceptable ≤ poor (milliseconds)");
        }
        Ok(Thresholds { excellent: self.excellent, acceptable: self.acceptable, poor: self.poor })
    }
}

/// A TOML error as its place and message, without the line it quotes: the
/// line may hold a secret (an `api_key = "…"` the file has no key for).
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim_end();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message.to_string(),
    }
}

/// The names of a price list as an error gives them: the first dozen and
/// how many more (a list of 300,000 had made a 3 MB line).
fn some_names(prices: &BTreeMap<String, f64>) -> String {
    const SHOWN: usize = 12;
    let names: Vec<String> = prices.keys().take(SHOWN).map(|k| crate::output::shown(k)).collect();
    match prices.len().saturating_sub(SHOWN) {
        0 => names.join(", "),
        more => format!("{}, and {more} more", names.join(", ")),
    }
}

impl ConfigFile {
    pub fn read(path: &Path) -> Result<ConfigFile> {
        let text = goodput_core::util::input::read_text(path, "--config", goodput_core::util::input::SETTINGS_CAP)?;
        toml::from_str(&text).map_err(|e| anyhow!("--config {}: {}", path.display(), toml_error(&text, &e)))
    }

    pub fn slo(&self) -> Result<Option<Slo>> {
        self.slo
            .as_deref()
            .map(|s| s.parse().map_err(|e: goodput_core::SloError| anyhow!("slo in the config: {e}")))
            .transpose()
    }

    /// The price named by `price` (or by `--price`), per GPU-hour.
    pub fn price(&self, name: Option<&str>) -> Result<Option<f64>> {
        let name = match (name.or(self.price.as_deref()), self.prices.len()) {
            (Some(name), _) => name,
            (None, 0) => return Ok(None),
            // A list of one: that is the price.
            (None, 1) => self.prices.keys().next().map(String::as_str).unwrap_or_default(),
            (None, _) => bail!(
                "the config lists several prices ({}) and names none: pick one with --price NAME, or price = \"NAME\" in the file",
                some_names(&self.prices)
            ),
        };
        // A GPU's price whatever case or alias names it (`--price H100`
        // for `h100 = 2.5`, or `h100-sxm`), where one entry alone is that GPU.
        let name = match self.prices.get_key_value(name) {
            Some((k, _)) => k.as_str(),
            None => {
                let gpu = |n: &str| goodput_sim::engine::GpuSpec::canonical_id(n).ok();
                let asked = gpu(name);
                let same: Vec<&String> = self
                    .prices
                    .keys()
                    .filter(|k| k.eq_ignore_ascii_case(name) || gpu(k).is_some_and(|g| Some(g) == asked))
                    .collect();
                match same[..] {
                    [k] => k.as_str(),
                    _ => name,
                }
            }
        };
        match self.prices.get(name) {
            // Checked here, so that the refusal names the file's entry, not --gpu-hour-usd.
            Some(&p) => match goodput_core::analysis::cost::price_fault(p) {
                None => Ok(Some(p)),
                Some(goodput_core::analysis::cost::CostError::Dear(_)) => bail!(
                    "[prices] {name} = {} in the config is more than a GPU costs an hour (at most {})",
                    goodput_core::analysis::cost::price_text(p),
                    goodput_core::analysis::cost::MAX_GPU_HOUR_USD
                ),
                Some(goodput_core::analysis::cost::CostError::Tiny(_)) => bail!(
                    "[prices] {name} = {p:e} in the config is less than a millionth of a dollar an hour: give 0 for \
                     hardware that costs nothing"
                ),
                Some(_) => {
                    bail!("[prices] {name} = {p} in the config: a price per GPU-hour is a number of USD, zero or more")
                }
            },
            None => bail!(
                "no price named '{name}' in [prices]; known: {}",
                if self.prices.is_empty() { "none".to_string() } else { some_names(&self.prices) }
            ),
        }
    }

    pub fn ratings(&self) -> Result<RatingThresholds> {
        let mut r = RatingThresholds::default();
        if let Some(f) = &self.ratings {
            if let Some(t) = &f.ttft {
                r.ttft = t.check("ttft")?;
            }
            if let Some(t) = &f.tpot {
                r.tpot = t.check("tpot")?;
            }
            if let Some(x) = f.reading_tokens_per_s {
                if x.is_nan() || x <= 0.0 {
                    bail!("[ratings] reading_tokens_per_s must be positive");
                }
                r.reading_tokens_per_s = x;
            }
        }
        Ok(r)
    }
}

/// The SLO, price and ratings of a command: its flags over its config file.
pub struct Judging {
    pub slo: Option<Slo>,
    pub cost: Option<CostConfig>,
    pub ratings: RatingThresholds,
    /// The GPU count given, by `--gpus` or the file, whether or not a price
    /// was: a saved run's price is then for that many GPUs.
    pub gpus: Option<u32>,
}

/// `default_gpus` applies when neither `--gpus` nor the file says (the
/// simulated engine's tensor-parallel degree, say).
pub fn judging(j: &crate::cli::JudgeArgs, default_gpus: u32) -> Result<Judging> {
    let file = match &j.config {
        Some(p) => ConfigFile::read(p)?,
        None => ConfigFile::default(),
    };
    if j.price.is_some() && j.config.is_none() {
        bail!("--price names an entry of a price list: give the list with --config FILE ([prices] table)");
    }
    let mut slo = match &j.slo {
        Some(s) => Some(s.clone()),
        None => file.slo()?,
    };
    if let Some(a) = j.attainment {
        match slo.as_mut() {
            Some(s) => {
                // Two shares on one command line: which was meant is unclear (the flag had silently won).
                if let Some(own) = j.slo.as_ref().and_then(|s| s.attainment).filter(|&own| (own - a).abs() > 1e-9) {
                    let (own, a) = (crate::cli::share_text(own), crate::cli::share_text(a));
                    bail!(
                        "--attainment {a} and --slo's attainment>={own} set the same target, the share of requests \
                         that must be good, to two values: give it once (drop --attainment, or the SLO's \
                         attainment term)"
                    );
                }
                // The flag wins over the file's SLO's term, as flags win over the file.
                s.attainment = Some(a)
            }
            None => bail!("--attainment is the share of requests that must meet the SLO: give the SLO too (--slo 'ttft<=200ms', or a config with slo = \"...\")"),
        }
    }
    let price = match j.gpu_hour_usd {
        Some(p) => Some(p),
        None => file.price(j.price.as_deref())?,
    };
    if file.gpus == Some(0) {
        bail!("gpus = 0 in the config: a server runs on one GPU or more");
    }
    let given = j.gpus.or(file.gpus);
    // -0 is zero: it had printed "$-0.00/GPU-hour" and -0.0 in every cost field.
    let cost = price
        .map(|p| if p == 0.0 { 0.0 } else { p })
        .map(|p| CostConfig { gpu_hour_usd: p, gpus: given.unwrap_or(default_gpus) });
    if let Some(c) = &cost {
        c.validate()?;
    }
    Ok(Judging { slo, cost, ratings: file.ratings()?, gpus: given })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_slo_prices_and_ratings() {
        let c: ConfigFile = toml::from_str(
            "slo = \"ttft<=500ms,tpot:p95<=50ms\"\ngpus = 2\nprice = \"h100\"\n[prices]\nh100 = 3.0\na100 = 1.8\n\
             [ratings.ttft]\nexcellent = 100\nacceptable = 300\npoor = 500\n",
        )
        .unwrap();
        assert_eq!(c.slo().unwrap().unwrap().to_string(), "ttft<=500ms,tpot:p95<=50ms");
        assert_eq!(c.price(None).unwrap(), Some(3.0));
        assert_eq!(c.price(Some("a100")).unwrap(), Some(1.8));
        assert!(c.price(Some("tpu")).unwrap_err().to_string().contains("known: a100, h100"));
        assert_eq!(c.ratings().unwrap().ttft.excellent, 100.0);
        assert!(toml::from_str::<ConfigFile>("sloo = \"x\"").is_err(), "unknown keys are errors");
        // The error names the place and the key, not the line's value.
        let text = "gpus = 2\napi_key = \"sk-SECRET\"\n";
        let e = toml::from_str::<ConfigFile>(text).unwrap_err();
        let said = super::toml_error(text, &e);
        assert!(said.starts_with("line 2, column 1: unknown field `api_key`"), "{said}");
        assert!(!said.contains("SECRET"), "{said}");
        let bad: ConfigFile = toml::from_str("[ratings.tpot]\nexcellent = 90\nacceptable = 80\npoor = 100\n").unwrap();
        assert!(bad.ratings().is_err());
        // A list too long to print whole is named by its first dozen.
        let many =
            ConfigFile { prices: (0..300_000).map(|i| (format!("gpu{i:06}"), 1.0)).collect(), ..Default::default() };
        let e = many.price(None).unwrap_err().to_string();
        assert!(e.len() < 400 && e.contains("gpu000011, and 299988 more"), "{e}");
        // A list of prices and no choice: one is the price, several are a question.
        let one: ConfigFile = toml::from_str("[prices]\nh100 = 2.5\n").unwrap();
        assert_eq!(one.price(None).unwrap(), Some(2.5));
        let two: ConfigFile = toml::from_str("[prices]\nh100 = 2.5\na100 = 1.5\n").unwrap();
        let err = two.price(None).unwrap_err().to_string();
        assert!(err.contains("several prices (a100, h100)") && err.contains("--price NAME"), "{err}");
        assert_eq!(two.price(Some("a100")).unwrap(), Some(1.5));
        assert_eq!(ConfigFile::default().price(None).unwrap(), None);
    }

    /// A GPU's price is found whatever case or catalog alias names it; a
    /// name two entries could be is refused, as a name none is.
    #[test]
    fn a_gpu_price_is_found_by_any_of_its_names() {
        let c: ConfigFile = toml::from_str("[prices]\nh100 = 2.5\nA100 = 1.5\nspot = 0.9\n").unwrap();
        for (name, usd) in [("H100", 2.5), ("h100-sxm", 2.5), ("NVIDIA_H100", 2.5), ("a100", 1.5), ("SPOT", 0.9)] {
            assert_eq!(c.price(Some(name)).unwrap(), Some(usd), "{name}");
        }
        let err = c.price(Some("h200")).unwrap_err().to_string();
        assert!(err.contains("no price named 'h200'") && err.contains("known: A100, h100, spot"), "{err}");
        let both: ConfigFile = toml::from_str("[prices]\nh100 = 2.5\nH100 = 3.0\n").unwrap();
        assert_eq!(both.price(Some("H100")).unwrap(), Some(3.0));
        assert!(both.price(Some("h100-sxm")).is_err());
    }

    #[test]
    fn a_gpus_flag_wins_over_the_file_even_at_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("goodput.toml");
        std::fs::write(&path, "gpus = 4\nprice = \"h100\"\n[prices]\nh100 = 2.0\n").unwrap();
        let judge = |gpus: Option<u32>| crate::cli::JudgeArgs {
            slo: None,
            attainment: None,
            fail_on_slo: false,
            fail_on_unsteady: false,
            confidence: 0.95,
            gpu_hour_usd: None,
            gpus,
            config: Some(path.clone()),
            price: None,
        };
        let gpus_of = |j: &crate::cli::JudgeArgs| judging(j, 8).unwrap().cost.unwrap().gpus;
        assert_eq!(gpus_of(&judge(Some(1))), 1, "--gpus 1 given on the command line");
        assert_eq!(gpus_of(&judge(None)), 4, "the file's count without the flag");
        std::fs::write(&path, "price = \"h100\"\n[prices]\nh100 = 2.0\n").unwrap();
        assert_eq!(gpus_of(&judge(None)), 8, "the engine's default with neither");
        // The file's own values are refused naming the file's entries.
        for (text, says) in [
            ("price = \"h100\"\n[prices]\nh100 = -3.0\n", "[prices] h100 = -3 in the config"),
            ("price = \"h100\"\n[prices]\nh100 = 1e9\n", "[prices] h100 = 1e9 in the config"),
            ("gpus = 0\nprice = \"h100\"\n[prices]\nh100 = 2.0\n", "gpus = 0 in the config"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = judging(&judge(None), 8).err().unwrap().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
