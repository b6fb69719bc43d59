//! `exact`: normalised exact match, as the SQuAD v1.1 evaluation script
//! normalises answers (lower case, ASCII punctuation removed, the articles
//! a/an/the removed, whitespace collapsed).

use super::text::py_squeeze;

/// SQuAD's `normalize_answer`.
///
/// ```
/// use goodput_core::quality::normalize_answer;
/// assert_eq!(normalize_answer("The  Cat, sat!"), "cat sat");
/// assert_eq!(normalize_answer("An anthem"), "anthem");
/// ```
pub fn normalize_answer(s: &str) -> String {
    let lower = s.to_lowercase();
    let no_punct: String = lower.chars().filter(|c| !c.is_ascii_punctuation()).collect();
    py_squeeze(&remove_articles(&no_punct))
}

/// `re.sub(r'\b(a|an|the)\b', ' ', text)`: a maximal run of word characters
/// (Python's `\w`: alphanumeric or `_`) that is exactly an article becomes a
/// space.
fn remove_articles(text: &str) -> String {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(word) {
        out.push_str(&rest[..start]);
        let run = &rest[start..];
        let end = run.find(|c: char| !word(c)).unwrap_or(run.len());
        let w = &run[..end];
        out.push_str(if matches!(w, "a" | "an" | "the") { " " } else { w });
        rest = &run[end..];
    }
    out.push_str(rest);
    out
}

/// 1 when the output matches any reference after normalisation, else 0.
pub fn exact(output: &str, references: &[String]) -> f64 {
    let out = normalize_answer(output);
    f64::from(u8::from(references.iter().any(|r| normalize_answer(r) == out)))
}
