//! Answers across runs (`goodput compare`): requests of two runs paired by
//! prompt, the share whose answers are identical, and each score's change
//! with a paired bootstrap interval.

use super::summary::bootstrap_ci;
use crate::doc::record::RequestRecord;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One score's change from the baseline over the paired requests.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PairedChange {
    /// Pairs where both requests were scored.
    pub pairs: u64,
    /// Mean of (run − baseline) over those pairs.
    pub change: f64,
    /// 95% paired bootstrap interval of the change.
    pub ci95_low: f64,
    pub ci95_high: f64,
}

/// How a run's answers differ from the baseline's on the same prompts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct AnswerChange {
    /// Index of the run in the comparison (≥ 1; 0 is the baseline).
    pub run: usize,
    /// Successful measured requests paired with one of the baseline's by
    /// prompt (the k-th asking of a prompt with the baseline's k-th).
    pub pairs: u64,
    /// Share of the pairs whose answers are identical (equal output hashes).
    pub identical_share: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<PairedChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<PairedChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rouge_l: Option<PairedChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrf: Option<PairedChange>,
}

/// Successful measured requests by prompt hash, each prompt's in plan order.
fn by_prompt(records: &[RequestRecord]) -> BTreeMap<&str, Vec<&RequestRecord>> {
    let mut m: BTreeMap<&str, Vec<&RequestRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.warmup && r.outcome.is_success()) {
        if let Some(h) = &r.prompt_hash {
            m.entry(h.as_str()).or_default().push(r);
        }
    }
    for v in m.values_mut() {
        v.sort_by_key(|r| r.id);
    }
    m
}

/// `run`'s answers against `base`'s; `None` when no request pairs up (the
/// records carry no prompt hashes, or the prompts differ).
pub fn compare_answers(base: &[RequestRecord], run: &[RequestRecord], index: usize) -> Option<AnswerChange> {
    let (b, r) = (by_prompt(base), by_prompt(run));
    let pairs: Vec<(&RequestRecord, &RequestRecord)> = b
        .iter()
        .filter_map(|(h, bs)| r.get(h).map(|rs| bs.iter().copied().zip(rs.iter().copied())))
        .flatten()
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let hashed: Vec<bool> = pairs
        .iter()
        .filter(|(x, y)| x.output_hash.is_some() && y.output_hash.is_some())
        .map(|(x, y)| x.output_hash == y.output_hash)
        .collect();
    let change = |name: &str, seed: u64| {
        let d: Vec<f64> = pairs
            .iter()
            .filter_map(|(x, y)| Some(y.quality.as_ref()?.get(name)? - x.quality.as_ref()?.get(name)?))
            .collect();
        if d.is_empty() {
            return None;
        }
        let n = d.len();
        let mean = d.iter().sum::<f64>() / n as f64;
        let (lo, hi) = bootstrap_ci(n, seed, |pick| (0..n).map(|i| d[pick(i)]).sum::<f64>() / n as f64);
        Some(PairedChange { pairs: n as u64, change: mean, ci95_low: lo.min(mean), ci95_high: hi.max(mean) })
    };
    Some(AnswerChange {
        run: index,
        pairs: pairs.len() as u64,
        identical_share: if hashed.is_empty() {
            0.0
        } else {
            hashed.iter().filter(|&&s| s).count() as f64 / hashed.len() as f64
        },
        exact: change("exact", 0x9a12_0001),
        number: change("number", 0x9a12_0002),
        rouge_l: change("rouge_l", 0x9a12_0003),
        chrf: change("chrf", 0x9a12_0004),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::Outcome;
    use std::time::Duration;

    fn run(answers: &[&str]) -> Vec<RequestRecord> {
        answers
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let mut r = RequestRecord::new(i as u64, Duration::ZERO, Duration::ZERO);
                r.outcome = Outcome::Success;
                r.prompt_hash = Some(format!("p{}", i % 50));
                r.output_hash = Some(crate::util::hash::text_hash(a));
                r.quality = crate::quality::score(a, &["right".to_string()], &[]).map(Box::new);
                r
            })
            .collect()
    }

    #[test]
    fn pairs_by_prompt_and_bounds_the_change() {
        let base = run(&["right"; 100]);
        // The run gets the last 10 of 100 wrong (prompts p40..p49, second asking).
        let answers: Vec<&str> = (0..100).map(|i| if i >= 90 { "wrong" } else { "right" }).collect();
        let c = compare_answers(&base, &run(&answers), 1).unwrap();
        assert_eq!((c.pairs, c.run), (100, 1));
        assert!((c.identical_share - 0.9).abs() < 1e-12);
        let e = c.exact.unwrap();
        assert!((e.change + 0.1).abs() < 1e-12);
        assert!(e.ci95_low < -0.1 && e.ci95_high > -0.1 && e.ci95_high < 0.0, "{e:?}");
        // Nothing pairs with another prompt set.
        let mut other = run(&["right"; 3]);
        other.iter_mut().for_each(|r| r.prompt_hash = Some("elsewhere".into()));
        assert!(compare_answers(&base, &other, 1).is_none());
    }
}
