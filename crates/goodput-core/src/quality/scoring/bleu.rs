//! Corpus BLEU as sacreBLEU computes it with its defaults (`BLEU()`: the
//! `13a` tokenizer, case kept, 4-gram, exponential smoothing), from the
//! per-segment sufficient statistics each record keeps.

use super::chrf::{clipped_matches, counted};
use super::text::{py_rstrip, py_split, py_squeeze};
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The n-gram order.
pub const BLEU_ORDER: usize = 4;

/// One segment's statistics, as sacreBLEU's `_compute_segment_statistics`
/// lays them out: `[hyp_len, ref_len, correct_1..4, total_1..4]`. They add
/// up over a corpus.
pub type BleuStats = [u64; 2 + 2 * BLEU_ORDER];

fn rules() -> &'static [(Regex, &'static str); 4] {
    static RULES: OnceLock<[(Regex, &'static str); 4]> = OnceLock::new();
    RULES.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("a valid pattern");
        [
            // Western punctuation and symbols on their own.
            (re(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), " ${1} "),
            // Period and comma unless preceded by a digit …
            (re(r"([^0-9])([\.,])"), "${1} ${2} "),
            // … unless followed by a digit.
            (re(r"([\.,])([^0-9])"), " ${1} ${2}"),
            // A dash after a digit.
            (re(r"([0-9])(-)"), "${1} ${2} "),
        ]
    })
}

/// sacreBLEU's `13a` tokenizer (mteval-v13a), applied after `rstrip` as
/// `BLEU._preprocess_segment` does.
///
/// ```
/// use goodput_core::quality::tokenize_13a;
/// assert_eq!(tokenize_13a("Hello, world! It costs 1,000.50 &amp; 2-3."), "Hello , world ! It costs 1,000.50 & 2 - 3 .");
/// ```
pub fn tokenize_13a(line: &str) -> String {
    let mut line = py_rstrip(line).replace("<skipped>", "").replace("-\n", "").replace('\n', " ");
    if line.contains('&') {
        line = line.replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">");
    }
    let mut line = format!(" {line} ");
    for (re, with) in rules() {
        line = re.replace_all(&line, *with).into_owned();
    }
    py_squeeze(&line)
}

/// Each order's n-grams of token numbers, packed exactly into a `u128`
/// (four 32-bit numbers), sorted and counted.
fn ngrams(tokens: &[u32]) -> [Vec<(u128, u64)>; BLEU_ORDER] {
    std::array::from_fn(|n| {
        let mut grams: Vec<u128> =
            tokens.windows(n + 1).map(|g| g.iter().fold(0u128, |k, &t| (k << 32) | u128::from(t))).collect();
        grams.sort_unstable();
        counted(&grams)
    })
}

/// The statistics of one output against its references: the reference
/// length closest to the output's (the shorter on a tie), and clipped
/// n-gram matches against the most each reference holds of each n-gram.
pub fn bleu_stats(output: &str, references: &[String]) -> BleuStats {
    // Tokens are numbered from 1, so that a shorter n-gram never packs to a
    // longer one's key.
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut number = |line: &str| -> Vec<u32> {
        py_split(&tokenize_13a(line))
            .map(|t| {
                let next = ids.len() as u32 + 1;
                *ids.entry(t.to_owned()).or_insert(next)
            })
            .collect()
    };
    let hyp = number(output);
    let refs: Vec<Vec<u32>> = references.iter().map(|r| number(r)).collect();
    // The most each reference holds of each n-gram.
    let mut most: [Vec<(u128, u64)>; BLEU_ORDER] = Default::default();
    for r in &refs {
        for (m, grams) in most.iter_mut().zip(ngrams(r)) {
            *m = merge_max(m, &grams);
        }
    }
    let mut closest: Option<(usize, usize)> = None;
    for r in &refs {
        let diff = hyp.len().abs_diff(r.len());
        match closest {
            Some((d, len)) if diff > d || (diff == d && r.len() >= len) => {}
            _ => closest = Some((diff, r.len())),
        }
    }
    let mut stats = [0u64; 2 + 2 * BLEU_ORDER];
    stats[0] = hyp.len() as u64;
    stats[1] = closest.map_or(0, |(_, len)| len as u64);
    for (n, grams) in ngrams(&hyp).iter().enumerate() {
        stats[2 + BLEU_ORDER + n] = grams.iter().map(|&(_, c)| c).sum();
        stats[2 + n] = clipped_matches(grams, &most[n]);
    }
    stats
}

/// Two counted lists merged, each key with the larger count.
fn merge_max(a: &[(u128, u64)], b: &[(u128, u64)]) -> Vec<(u128, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if j == b.len() || (i < a.len() && a[i].0 < b[j].0) {
            out.push(a[i]);
            i += 1;
        } else if i == a.len() || b[j].0 < a[i].0 {
            out.push(b[j]);
            j += 1;
        } else {
            out.push((a[i].0, a[i].1.max(b[j].1)));
            i += 1;
            j += 1;
        }
    }
    out
}

/// BLEU (0–100) from summed statistics: sacreBLEU's `compute_bleu` with
/// exponential smoothing and no effective order.
pub fn bleu_score(stats: &BleuStats) -> f64 {
    let (sys_len, ref_len) = (stats[0] as f64, stats[1] as f64);
    let correct = &stats[2..2 + BLEU_ORDER];
    let total = &stats[2 + BLEU_ORDER..];
    let bp = if sys_len < ref_len {
        if sys_len > 0.0 {
            (1.0 - ref_len / sys_len).exp()
        } else {
            0.0
        }
    } else {
        1.0
    };
    if correct.iter().all(|&c| c == 0) {
        return 0.0;
    }
    let mut precisions = [0.0f64; BLEU_ORDER];
    let mut smooth = 1.0f64;
    for n in 0..BLEU_ORDER {
        if total[n] == 0 {
            break;
        }
        precisions[n] = if correct[n] == 0 {
            smooth *= 2.0;
            100.0 / (smooth * total[n] as f64)
        } else {
            100.0 * correct[n] as f64 / total[n] as f64
        };
    }
    let log = |p: f64| if p > 0.0 { p.ln() } else { -9_999_999_999.0 };
    let sum = precisions.iter().fold(0.0, |s, &p| s + log(p));
    bp * (sum / BLEU_ORDER as f64).exp()
}

/// Adds one segment's statistics into a corpus total.
pub fn add_stats<const N: usize>(total: &mut [u64; N], one: &[u64; N]) {
    for (t, x) in total.iter_mut().zip(one) {
        *t += x;
    }
}
