//! `summary.quality`: the run's scores, taken from the records alone, so a
//! saved run re-analysed (`goodput report`) gives the same figures.

use super::{add_stats, bleu_score, chrf_score, BleuStats, ChrfStats};
use crate::analysis::stats::percentile;
use crate::doc::record::RequestRecord;
use crate::util::hash::draw;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bootstrap resamples behind each 95% interval.
pub const BOOTSTRAP_RESAMPLES: u64 = 1000;

/// A score's mean over the requests it applied to, with a 95% percentile
/// bootstrap interval (1,000 resamples drawn from a fixed seed, so the same
/// records give the same interval).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ScoreMean {
    /// Requests scored.
    pub requests: u64,
    pub mean: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
}

/// The scores of a set of requests: the run's, or one model's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct QualityScores {
    /// Successful measured requests that had a reference and were scored.
    pub requests_scored: u64,
    /// Share of normalised exact matches (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<ScoreMean>,
    /// Share of answers whose last number is the reference's (0–1), over
    /// the requests whose reference holds a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<ScoreMean>,
    /// Mean ROUGE-L F1 (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rouge_l: Option<ScoreMean>,
    /// Mean sentence chrF (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrf: Option<ScoreMean>,
    /// Corpus BLEU (0–100), sacreBLEU's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bleu: Option<f64>,
    /// Corpus chrF (0–100), sacreBLEU's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrf_corpus: Option<f64>,
}

/// One model's scores, when the run spread its requests over several.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ModelQuality {
    pub model: String,
    #[serde(flatten)]
    pub scores: QualityScores,
}

/// `summary.quality`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct QualitySummary {
    #[serde(flatten)]
    pub scores: QualityScores,
    /// How alike the copies of each prompt came back (`--repeat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
    /// A row per model, when the scored requests went to several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_model: Vec<ModelQuality>,
}

/// How alike the answers to the same prompt are within a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Consistency {
    /// Prompts with at least two successful copies.
    pub prompts: u64,
    /// The most copies of one prompt (`--repeat`).
    pub repeats: u64,
    /// Share of those prompts whose copies all came back identical.
    pub identical_share: f64,
    /// Mean over prompts of the mean pairwise similarity of their copies:
    /// 1 − word-level edit distance ÷ the longer answer's words (1: identical).
    pub similarity_mean: f64,
    /// Median word position (0-based) where two copies that differ first
    /// differ; absent when none differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference_p50: Option<f64>,
}

/// The mean of `values` with its 95% bootstrap interval; `seed` names the
/// resampling stream.
pub fn mean_with_ci(values: &[f64], seed: u64) -> Option<ScoreMean> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let (lo, hi) = bootstrap_ci(n, seed, |pick| (0..n).map(|i| values[pick(i)]).sum::<f64>() / n as f64);
    Some(ScoreMean { requests: n as u64, mean, ci95_low: lo.min(mean), ci95_high: hi.max(mean) })
}

/// A 95% percentile bootstrap interval of `stat` over resamples of `n`
/// items: `stat` gets a function from slot to the index drawn into it.
pub fn bootstrap_ci(n: usize, seed: u64, stat: impl Fn(&dyn Fn(usize) -> usize) -> f64) -> (f64, f64) {
    if n < 2 {
        let v = stat(&|i| i);
        return (v, v);
    }
    let mut stats: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|b| {
            let base = b * n as u64;
            stat(&|i| (draw(seed, base + i as u64) % n as u64) as usize)
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    (percentile(&stats, 2.5).unwrap_or(f64::NAN), percentile(&stats, 97.5).unwrap_or(f64::NAN))
}

/// Seeds of each score's resampling stream.
const SEED_EXACT: u64 = 0x9a11_0001;
const SEED_NUMBER: u64 = 0x9a11_0002;
const SEED_ROUGE: u64 = 0x9a11_0003;
const SEED_CHRF: u64 = 0x9a11_0004;

/// The scores of `records` that carry them.
pub fn scores_of(records: &[&RequestRecord]) -> QualityScores {
    // In the load plan's order, whatever order the records came in (a
    // records file holds them as they completed), so resamples repeat.
    let mut ok: Vec<&&RequestRecord> = records.iter().filter(|r| r.outcome.is_success()).collect();
    ok.sort_by_key(|r| r.id);
    let scored: Vec<&crate::quality::RequestQuality> = ok.iter().filter_map(|r| r.quality.as_deref()).collect();
    let mean = |f: &dyn Fn(&crate::quality::RequestQuality) -> Option<f64>, seed| {
        mean_with_ci(&scored.iter().filter_map(|q| f(q)).collect::<Vec<_>>(), seed)
    };
    let bleu: Vec<&BleuStats> = scored.iter().filter_map(|q| q.bleu_stats.as_ref()).collect();
    let chrf: Vec<&ChrfStats> = scored.iter().filter_map(|q| q.chrf_stats.as_ref()).collect();
    QualityScores {
        requests_scored: scored.len() as u64,
        exact: mean(&|q| q.exact, SEED_EXACT),
        number: mean(&|q| q.number, SEED_NUMBER),
        rouge_l: mean(&|q| q.rouge_l, SEED_ROUGE),
        chrf: mean(&|q| q.chrf, SEED_CHRF),
        bleu: (!bleu.is_empty()).then(|| {
            let mut total = [0u64; 10];
            bleu.iter().for_each(|s| add_stats(&mut total, s));
            bleu_score(&total)
        }),
        chrf_corpus: (!chrf.is_empty()).then(|| {
            let mut total = [0u64; 18];
            chrf.iter().for_each(|s| add_stats(&mut total, s));
            chrf_score(&total)
        }),
    }
}

/// `summary.quality` of the measured records (warm-up excluded): `None`
/// when no request was scored and none was repeated.
pub fn summarize(measured: &[&RequestRecord]) -> Option<QualitySummary> {
    let scores = scores_of(measured);
    let consistency = consistency(measured);
    if scores.requests_scored == 0 && consistency.is_none() {
        return None;
    }
    let mut groups: BTreeMap<&str, Vec<&RequestRecord>> = BTreeMap::new();
    for r in measured.iter().filter(|r| r.quality.is_some()) {
        if let Some(m) = &r.model {
            groups.entry(m.as_str()).or_default().push(r);
        }
    }
    let by_model = if groups.len() > 1 {
        groups.into_iter().map(|(m, recs)| ModelQuality { model: m.to_owned(), scores: scores_of(&recs) }).collect()
    } else {
        Vec::new()
    };
    Some(QualitySummary { scores, consistency, by_model })
}

/// The most cells [`edit_distance`] fills in the band it widens: past this,
/// the answers' middles (their common start and end set aside) are compared
/// on their first [`EDIT_CAPPED_WORDS`] words only.
const EDIT_CELLS: usize = 1 << 24;

/// How many words of each middle are compared once [`EDIT_CELLS`] would be
/// passed: the rest count a word an edit (an upper bound of the distance).
const EDIT_CAPPED_WORDS: usize = 4096;

/// Word-level edit distance (Levenshtein). Identical answers are 0 at once;
/// the common start and end are set aside; the rest is compared within a
/// band of diagonals that doubles until the distance is inside it
/// (Ukkonen's), so the work is about the length times the distance, not
/// the length squared (two 200,000-word answers had taken 40 s of CPU).
/// Where even that would pass [`EDIT_CELLS`] (long answers that differ
/// throughout), the middles' first [`EDIT_CAPPED_WORDS`] words are compared
/// and each word past them counts one edit: a bound, never below the true
/// distance.
fn edit_distance(a: &[u32], b: &[u32]) -> usize {
    if a == b {
        return 0;
    }
    let start = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[start..], &b[start..]);
    let end = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[..a.len() - end], &b[..b.len() - end]);
    // `b` the shorter: the band's rows run over it.
    let (a, b) = if a.len() < b.len() { (b, a) } else { (a, b) };
    if b.is_empty() {
        return a.len();
    }
    let mut k = (a.len() - b.len()).max(1);
    loop {
        if (b.len() + 1).saturating_mul(2 * k + 1) > EDIT_CELLS {
            break;
        }
        let d = banded_distance(a, b, k);
        if d <= k || k >= a.len() {
            return d;
        }
        k *= 2;
    }
    let (ca, cb) = (&a[..a.len().min(EDIT_CAPPED_WORDS)], &b[..b.len().min(EDIT_CAPPED_WORDS)]);
    banded_distance(ca, cb, ca.len().max(cb.len())) + (a.len() - ca.len()).max(b.len() - cb.len())
}

/// The edit distance of `a` and `b` (`b` no longer) over alignments within
/// `k` diagonals of the main one (`k` ≥ their lengths' difference): exact
/// when the distance is at most `k`, above `k` otherwise.
fn banded_distance(a: &[u32], b: &[u32], k: usize) -> usize {
    const FAR: usize = usize::MAX / 4;
    let n = a.len();
    // Row i holds the distances of b[..i] to a[..j], j within k of i.
    let mut prev: Vec<usize> = (0..=n).map(|j| if j <= k { j } else { FAR }).collect();
    let mut row = vec![FAR; n + 1];
    for (i, y) in b.iter().enumerate() {
        let i = i + 1;
        let lo = i.saturating_sub(k).max(1);
        let hi = (i + k).min(n);
        row[lo - 1] = if lo == 1 { i } else { FAR };
        #[cfg(test)]
        tests::CELLS.with(|c| c.set(c.get() + (hi + 1).saturating_sub(lo) as u64));
        for j in lo..=hi {
            let sub = prev[j - 1] + usize::from(a[j - 1] != *y);
            row[j] = sub.min(prev[j] + 1).min(row[j - 1] + 1);
        }
        if hi < n {
            row[hi + 1] = FAR;
        }
        std::mem::swap(&mut prev, &mut row);
    }
    prev[n].min(FAR)
}

/// 1 − edit distance ÷ the longer length (1 for two empty answers).
pub fn similarity(a: &[u32], b: &[u32]) -> f64 {
    let longer = a.len().max(b.len());
    if longer == 0 {
        return 1.0;
    }
    1.0 - edit_distance(a, b) as f64 / longer as f64
}

/// `summary.quality.consistency`: the successful copies of each repeated
/// prompt (records with `repeat`, grouped by `prompt_hash`).
pub fn consistency(measured: &[&RequestRecord]) -> Option<Consistency> {
    let mut groups: BTreeMap<&str, Vec<&RequestRecord>> = BTreeMap::new();
    for r in measured.iter().filter(|r| r.outcome.is_success() && r.repeat.is_some()) {
        if let Some(h) = &r.prompt_hash {
            groups.entry(h.as_str()).or_default().push(r);
        }
    }
    let groups: Vec<Vec<&RequestRecord>> = groups.into_values().filter(|g| g.len() >= 2).collect();
    if groups.is_empty() {
        return None;
    }
    let empty = Vec::new();
    let words = |r: &RequestRecord| r.output_words.clone().unwrap_or_else(|| empty.clone());
    let (mut identical, mut sim_sum, mut firsts) = (0u64, 0.0, Vec::new());
    for g in &groups {
        let ws: Vec<Vec<u32>> = g.iter().map(|r| words(r)).collect();
        let same_hash = g.windows(2).all(|p| p[0].output_hash.is_some() && p[0].output_hash == p[1].output_hash);
        identical += u64::from(same_hash && ws.windows(2).all(|p| p[0] == p[1]));
        let (mut pair_sum, mut pairs) = (0.0, 0u64);
        for i in 0..ws.len() {
            for j in i + 1..ws.len() {
                pair_sum += similarity(&ws[i], &ws[j]);
                pairs += 1;
                if ws[i] != ws[j] {
                    let first = ws[i].iter().zip(&ws[j]).take_while(|(x, y)| x == y).count();
                    firsts.push(first as f64);
                }
            }
        }
        sim_sum += pair_sum / pairs as f64;
    }
    firsts.sort_by(f64::total_cmp);
    let n = groups.len() as f64;
    Some(Consistency {
        prompts: groups.len() as u64,
        repeats: groups.iter().map(|g| g.len() as u64).max().unwrap_or(0),
        identical_share: identical as f64 / n,
        similarity_mean: sim_sum / n,
        first_difference_p50: percentile(&firsts, 50.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::Outcome;
    use crate::quality::score;
    use std::time::Duration;

    fn rec(id: u64, out: &str, refs: &[&str]) -> RequestRecord {
        let mut r = RequestRecord::new(id, Duration::ZERO, Duration::ZERO);
        r.outcome = Outcome::Success;
        let refs: Vec<String> = refs.iter().map(|s| s.to_string()).collect();
        r.quality = score(out, &refs, &[]).map(Box::new);
        r
    }

    #[test]
    fn means_and_corpus_scores_come_from_the_records() {
        let recs: Vec<RequestRecord> =
            (0..10)
                .map(|i| {
                    if i < 8 {
                        rec(i, "The answer is 4", &["answer is 4"])
                    } else {
                        rec(i, "no idea", &["answer is 4"])
                    }
                })
                .collect();
        let refs: Vec<&RequestRecord> = recs.iter().collect();
        let s = summarize(&refs).unwrap();
        assert_eq!(s.scores.requests_scored, 10);
        let exact = s.scores.exact.clone().unwrap();
        assert!((exact.mean - 0.8).abs() < 1e-12);
        assert!(exact.ci95_low < 0.8 && exact.ci95_high > 0.8 && exact.ci95_low >= 0.0 && exact.ci95_high <= 1.0);
        assert_eq!(s.scores.number.as_ref().unwrap().mean, 0.8);
        assert!(s.scores.bleu.unwrap() > 0.0 && s.scores.chrf_corpus.unwrap() > 0.0);
        // The same records give the same interval.
        assert_eq!(summarize(&refs).unwrap(), s);
    }

    #[test]
    fn a_bootstrap_interval_covers_the_mean_and_narrows_with_more_requests() {
        let small: Vec<f64> = (0..20).map(|i| f64::from(u8::from(i % 2 == 0))).collect();
        let large: Vec<f64> = (0..2000).map(|i| f64::from(u8::from(i % 2 == 0))).collect();
        let (a, b) = (mean_with_ci(&small, 1).unwrap(), mean_with_ci(&large, 1).unwrap());
        assert!(a.ci95_low < 0.5 && a.ci95_high > 0.5);
        assert!(b.ci95_high - b.ci95_low < (a.ci95_high - a.ci95_low) / 4.0);
        // ±1.96·sqrt(0.25/2000) ≈ ±0.022.
        assert!((b.ci95_high - b.ci95_low - 0.044).abs() < 0.01, "{b:?}");
    }

    #[test]
    fn consistency_of_repeated_prompts() {
        let mut recs = Vec::new();
        for (p, outs) in [("p1", ["a b c d", "a b c d"]), ("p2", ["a b c d", "a b x d"])] {
            for (k, o) in outs.iter().enumerate() {
                let mut r = rec(0, o, &["a"]);
                r.prompt_hash = Some(p.into());
                r.repeat = Some(k as u32);
                r.output_hash = Some(crate::util::hash::text_hash(o));
                r.output_words = Some(crate::util::hash::word_hashes(o));
                recs.push(r);
            }
        }
        let refs: Vec<&RequestRecord> = recs.iter().collect();
        let c = consistency(&refs).unwrap();
        assert_eq!((c.prompts, c.repeats), (2, 2));
        assert_eq!(c.identical_share, 0.5);
        assert!((c.similarity_mean - (1.0 + 0.75) / 2.0).abs() < 1e-12);
        assert_eq!(c.first_difference_p50, Some(2.0));
    }

    /// The full table, as `edit_distance` was: the reference it is held to.
    fn full_table(a: &[u32], b: &[u32]) -> usize {
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        let mut row = vec![0; b.len() + 1];
        for (i, x) in a.iter().enumerate() {
            row[0] = i + 1;
            for (j, y) in b.iter().enumerate() {
                row[j + 1] = (prev[j] + usize::from(x != y)).min(prev[j + 1] + 1).min(row[j] + 1);
            }
            std::mem::swap(&mut prev, &mut row);
        }
        prev[b.len()]
    }

    #[test]
    fn the_banded_distance_is_the_full_tables() {
        // A small alphabet, so the answers share words and runs in places.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as u32
        };
        for _ in 0..3000 {
            let (la, lb) = (next(40) as usize, next(40) as usize);
            let a: Vec<u32> = (0..la).map(|_| next(4)).collect();
            let mut b: Vec<u32> = (0..lb).map(|_| next(4)).collect();
            if next(3) == 0 {
                // A near copy: a few words changed, one dropped.
                b = a.clone();
                for _ in 0..next(4) {
                    if !b.is_empty() {
                        let at = next(b.len() as u64) as usize;
                        b[at] = next(6);
                    }
                }
                if !b.is_empty() && next(2) == 0 {
                    b.remove(next(b.len() as u64) as usize);
                }
            }
            assert_eq!(edit_distance(&a, &b), full_table(&a, &b), "{a:?} {b:?}");
            assert_eq!(similarity(&a, &b), 1.0 - full_table(&a, &b) as f64 / la.max(b.len()).max(1) as f64);
        }
        let words = |s: &str| crate::util::hash::word_hashes(s);
        assert_eq!(similarity(&words("a b c d"), &words("a b x d")), 0.75);
        assert_eq!(similarity(&[], &[]), 1.0);
    }

    thread_local! {
        /// The cells [`banded_distance`] filled on this thread.
        pub(super) static CELLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// Two 200,000-word answers (`--repeat` of a long answer) are compared
    /// in bounded work: the full table had taken 40 s of CPU for one pair.
    /// The work is counted in cells, which any machine fills alike (a bound
    /// of 10 s of wall time had failed at 17.6 s on two busy cores, eight
    /// tests at a time, at opt-level 0).
    #[test]
    fn long_answers_are_compared_in_bounded_time() {
        let n = 200_000u32;
        let a: Vec<u32> = (0..n).map(|i| i % 50).collect();
        // The band's doublings, each within EDIT_CELLS, then the capped table.
        let most = (2 * EDIT_CELLS + EDIT_CAPPED_WORDS * (2 * EDIT_CAPPED_WORDS + 1)) as u64;
        // Each pair's distance and the cells it took, within the bound.
        let cells = |f: &dyn Fn() -> usize| {
            CELLS.with(|c| c.set(0));
            let d = f();
            let filled = CELLS.with(|c| c.get());
            assert!(filled <= most, "{filled} cells for one pair, past {most}");
            (d, filled)
        };
        assert_eq!(cells(&|| usize::from(similarity(&a, &a.clone()) == 1.0)), (1, 0), "equal: no table");
        let mut one = a.clone();
        one[n as usize / 2] = 999;
        let (d, filled) = cells(&|| edit_distance(&a, &one));
        assert_eq!((d, filled), (1, 1), "one word apart: its common start and end set aside, one cell");
        let mut few = a.clone();
        few.remove(10);
        few.insert(150_000, 7);
        few[190_000] = 998;
        let (d, filled) = cells(&|| edit_distance(&a, &few));
        assert!(d == 3 && filled > 0, "{d} {filled}");
        // Different throughout: a bound, never below the distance.
        let other: Vec<u32> = (0..n).map(|i| 100 + i % 7).collect();
        let (d, filled) = cells(&|| edit_distance(&a, &other));
        assert!(d == n as usize && filled > 0, "{d} {filled}");
        let shifted: Vec<u32> = (0..n + 5000).map(|i| (i * 7 + 3) % 50).collect();
        let (d, filled) = cells(&|| edit_distance(&a, &shifted));
        assert!((5000..=(n as usize + 5000)).contains(&d) && filled > 0, "{d} {filled}");
        // Under a hundredth of the full table of that pair (200,001 × 205,001 cells).
        assert!(most * 100 < u64::from(n + 1) * u64::from(n + 5001), "{most}");
    }
}
