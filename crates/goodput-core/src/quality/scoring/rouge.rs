//! `rouge_l`: ROUGE-L F1 as Google's `rouge-score` computes it by default
//! (`RougeScorer(['rougeL'])`: no stemmer, its default tokenizer;
//! `score_multi` keeps the best reference).

/// rouge-score's `tokenize`: lower-cased, every run of characters other
/// than `a-z0-9` a separator, the `a-z0-9` runs the tokens.
pub fn rouge_tokens(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    lower
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Length of the longest common subsequence, bit-parallel (Hyyrö 2004):
/// one machine word covers 64 positions of `a`, so a long answer against a
/// long reference costs `|a|·|b|/64` word operations.
fn lcs(a: &[String], b: &[String]) -> usize {
    let words = a.len().div_ceil(64);
    if words == 0 || b.is_empty() {
        return 0;
    }
    // Where each token of `a` stands, as a bit mask.
    let mut masks: std::collections::HashMap<&str, Vec<u64>> = std::collections::HashMap::new();
    for (i, t) in a.iter().enumerate() {
        masks.entry(t.as_str()).or_insert_with(|| vec![0; words])[i / 64] |= 1 << (i % 64);
    }
    let mut v = vec![u64::MAX; words];
    for t in b {
        let Some(m) = masks.get(t.as_str()) else { continue };
        // V = (V + (V & M)) | (V & !M), the addition carried across words.
        let mut carry = 0u64;
        for (vw, &mw) in v.iter_mut().zip(m) {
            let u = *vw & mw;
            let (s1, c1) = vw.overflowing_add(u);
            let (s2, c2) = s1.overflowing_add(carry);
            carry = u64::from(c1 || c2);
            *vw = s2 | (*vw & !mw);
        }
    }
    // The LCS is the number of zero bits; those past `a`'s end stay 1
    // (the `V & !M` term restores any carry into them).
    v.iter().map(|w| w.count_zeros() as usize).sum()
}

/// ROUGE-L F1 of `output` against one reference (`_score_lcs`).
fn rouge_l_one(reference: &[String], output: &[String]) -> f64 {
    if reference.is_empty() || output.is_empty() {
        return 0.0;
    }
    let l = lcs(reference, output) as f64;
    let precision = l / output.len() as f64;
    let recall = l / reference.len() as f64;
    if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    }
}

/// ROUGE-L F1 against the best of the references (`score_multi`).
///
/// ```
/// use goodput_core::quality::rouge_l;
/// assert_eq!(rouge_l("the cat sat", &["the cat sat".into()]), 1.0);
/// assert!((rouge_l("a cat", &["the cat sat".into()]) - 0.4).abs() < 1e-12);
/// ```
pub fn rouge_l(output: &str, references: &[String]) -> f64 {
    let out = rouge_tokens(output);
    references.iter().map(|r| rouge_l_one(&rouge_tokens(r), &out)).fold(0.0, f64::max)
}
