//! chrF as sacreBLEU computes it with its defaults (`CHRF()`: character
//! n-grams up to 6, no word n-grams, β = 2, whitespace removed, case kept,
//! effective-order averaging): per sentence, and per corpus from the
//! statistics each record keeps.

use super::text::is_py_space;

/// The character n-gram order.
pub const CHRF_ORDER: usize = 6;
const BETA: f64 = 2.0;

/// One segment's statistics against its best reference, as sacreBLEU lays
/// them out: `[hyp, ref, match]` for each order 1..6. They add up over a
/// corpus.
pub type ChrfStats = [u64; 3 * CHRF_ORDER];

/// Each order's n-grams, packed exactly into a `u128` (six 21-bit
/// characters), sorted and counted: `(n-gram, count)` in order.
fn char_ngrams(chars: &[char]) -> Vec<Vec<(u128, u64)>> {
    (1..=CHRF_ORDER)
        .map(|n| {
            let mut grams: Vec<u128> =
                chars.windows(n).map(|g| g.iter().fold(0u128, |k, &c| (k << 21) | u128::from(u32::from(c)))).collect();
            grams.sort_unstable();
            counted(&grams)
        })
        .collect()
}

/// Runs of equal keys in a sorted list, as `(key, count)`.
pub(super) fn counted(sorted: &[u128]) -> Vec<(u128, u64)> {
    let mut out: Vec<(u128, u64)> = Vec::new();
    for &g in sorted {
        match out.last_mut() {
            Some((k, c)) if *k == g => *c += 1,
            _ => out.push((g, 1)),
        }
    }
    out
}

/// `Σ min(a[g], b[g])` over two counted lists.
pub(super) fn clipped_matches(a: &[(u128, u64)], b: &[(u128, u64)]) -> u64 {
    let (mut i, mut j, mut m) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                m += a[i].1.min(b[j].1);
                i += 1;
                j += 1;
            }
        }
    }
    m
}

fn no_space(s: &str) -> Vec<char> {
    s.chars().filter(|&c| !is_py_space(c)).collect()
}

/// sacreBLEU's `_compute_f_score` (0–100) without epsilon smoothing.
pub fn chrf_score(stats: &ChrfStats) -> f64 {
    let factor = BETA * BETA;
    let (mut avg_prec, mut avg_rec, mut order) = (0.0f64, 0.0f64, 0u32);
    for s in stats.chunks_exact(3) {
        let (n_hyp, n_ref, n_match) = (s[0], s[1], s[2]);
        if n_hyp > 0 && n_ref > 0 {
            avg_prec += n_match as f64 / n_hyp as f64;
            avg_rec += n_match as f64 / n_ref as f64;
            order += 1;
        }
    }
    if order == 0 {
        return 0.0;
    }
    avg_prec /= f64::from(order);
    avg_rec /= f64::from(order);
    if avg_prec + avg_rec == 0.0 {
        return 0.0;
    }
    let score = (1.0 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec);
    100.0 * score
}

/// The statistics against the reference that gives the best sentence chrF
/// (the first of equals).
pub fn chrf_stats(output: &str, references: &[String]) -> ChrfStats {
    let hyp = no_space(output);
    let hyp_ngrams = char_ngrams(&hyp);
    let mut best = ([0u64; 3 * CHRF_ORDER], -1.0f64);
    for r in references {
        let r = no_space(r);
        let ref_ngrams = char_ngrams(&r);
        let mut stats = [0u64; 3 * CHRF_ORDER];
        for (n, (h, rf)) in hyp_ngrams.iter().zip(&ref_ngrams).enumerate() {
            let hyp_count: u64 = h.iter().map(|&(_, c)| c).sum();
            stats[3 * n] = if rf.is_empty() { 0 } else { hyp_count };
            stats[3 * n + 1] = rf.iter().map(|&(_, c)| c).sum();
            stats[3 * n + 2] = clipped_matches(h, rf);
        }
        let f = chrf_score(&stats);
        if f > best.1 {
            best = (stats, f);
        }
    }
    best.0
}

/// Sentence chrF (0–100): sacreBLEU's `sentence_chrf`.
///
/// ```
/// use goodput_core::quality::chrf;
/// assert_eq!(chrf("same text", &["same text".into()]), 100.0);
/// assert_eq!(chrf("", &["text".into()]), 0.0);
/// ```
pub fn chrf(output: &str, references: &[String]) -> f64 {
    chrf_score(&chrf_stats(output, references))
}
