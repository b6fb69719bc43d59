//! Answer quality beside speed, one request at a time: the scorers of
//! docs/metrics.md (`exact`, `number`, `rouge_l`, `bleu`, `chrf`), each
//! matching its reference implementation (SQuAD's evaluation, rouge-score,
//! sacreBLEU) on the fixture in tests/fixtures/quality, and the scores a
//! record keeps. What a run's scores add up to is in `quality`.

mod bleu;
mod chrf;
mod exact;
mod number;
mod rouge;
mod text;

pub use bleu::{add_stats, bleu_score, bleu_stats, tokenize_13a, BleuStats, BLEU_ORDER};
pub use chrf::{chrf, chrf_score, chrf_stats, ChrfStats, CHRF_ORDER};
pub use exact::{exact, normalize_answer};
pub use number::{last_number, number, reference_number};
pub use rouge::{rouge_l, rouge_tokens};

#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One scorer, as `--score` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Scorer {
    Exact,
    Number,
    RougeL,
    Bleu,
    Chrf,
}

impl Scorer {
    pub const ALL: [Scorer; 5] = [Scorer::Exact, Scorer::Number, Scorer::RougeL, Scorer::Bleu, Scorer::Chrf];

    pub fn as_str(self) -> &'static str {
        match self {
            Scorer::Exact => "exact",
            Scorer::Number => "number",
            Scorer::RougeL => "rouge-l",
            Scorer::Bleu => "bleu",
            Scorer::Chrf => "chrf",
        }
    }
}

impl fmt::Display for Scorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--score` name that is no scorer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scorer '{0}': expected exact, number, rouge-l, bleu or chrf")]
pub struct UnknownScorer(pub String);

impl FromStr for Scorer {
    type Err = UnknownScorer;

    fn from_str(s: &str) -> Result<Self, UnknownScorer> {
        match s.trim().to_ascii_lowercase().as_str() {
            "exact" => Ok(Scorer::Exact),
            "number" => Ok(Scorer::Number),
            "rouge-l" | "rouge_l" | "rougel" => Ok(Scorer::RougeL),
            "bleu" => Ok(Scorer::Bleu),
            "chrf" => Ok(Scorer::Chrf),
            other => Err(UnknownScorer(other.to_string())),
        }
    }
}

/// A request's scores against its reference(s), kept in its record
/// (`quality`). The means of docs/metrics.md are taken over these; corpus
/// BLEU and chrF add up the statistics, so a saved run is re-scored
/// without its text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RequestQuality {
    /// Normalised exact match against any reference: 1 or 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<f64>,
    /// The output's last number equals the reference's: 1 or 0 (absent when
    /// no reference holds a number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<f64>,
    /// ROUGE-L F1 (0–1) against the best reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rouge_l: Option<f64>,
    /// Sentence chrF (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrf: Option<f64>,
    /// sacreBLEU's BLEU statistics of the request: `[hyp_len, ref_len,
    /// correct 1..4, total 1..4]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bleu_stats: Option<BleuStats>,
    /// sacreBLEU's chrF statistics against the best reference: `[hyp, ref,
    /// match]` for each character order 1..6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrf_stats: Option<ChrfStats>,
}

impl RequestQuality {
    /// A per-request score by the name an SLO uses (`exact`, `number`,
    /// `rouge_l`, `chrf`).
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "exact" => self.exact,
            "number" => self.number,
            "rouge_l" => self.rouge_l,
            "chrf" => self.chrf,
            _ => None,
        }
    }
}

/// Scores `output` against `references` with `scorers` (all of them when
/// empty). No reference, no scores.
pub fn score(output: &str, references: &[String], scorers: &[Scorer]) -> Option<RequestQuality> {
    if references.is_empty() {
        return None;
    }
    let on = |s| scorers.is_empty() || scorers.contains(&s);
    let mut q = RequestQuality::default();
    if on(Scorer::Exact) {
        q.exact = Some(exact(output, references));
    }
    if on(Scorer::Number) {
        q.number = number(output, references);
    }
    if on(Scorer::RougeL) {
        q.rouge_l = Some(rouge_l(output, references));
    }
    if on(Scorer::Bleu) {
        q.bleu_stats = Some(bleu_stats(output, references));
    }
    if on(Scorer::Chrf) {
        let stats = chrf_stats(output, references);
        q.chrf = Some(chrf_score(&stats));
        q.chrf_stats = Some(stats);
    }
    Some(q)
}
