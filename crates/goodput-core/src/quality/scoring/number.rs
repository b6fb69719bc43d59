//! `number`: the last number in the output equals the reference's, as
//! GSM8K-style answers are graded.

use regex::Regex;
use std::sync::OnceLock;

fn number_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"-?[0-9][0-9,]*(?:\.[0-9]+)?").expect("a valid pattern"))
}

/// The last number written in `text` (an optional minus, digits with
/// optional thousands commas, an optional decimal part), as a value.
///
/// ```
/// use goodput_core::quality::last_number;
/// assert_eq!(last_number("she has $1,234.50 left, not 3"), Some(3.0));
/// assert_eq!(last_number("-7 or 2.5"), Some(2.5));
/// assert_eq!(last_number("none"), None);
/// ```
pub fn last_number(text: &str) -> Option<f64> {
    let m = number_re().find_iter(text).last()?;
    m.as_str().replace(',', "").parse().ok()
}

/// A reference's number: what follows GSM8K's `####` marker when there is
/// one, else the last number in it.
pub fn reference_number(reference: &str) -> Option<f64> {
    let tail = reference.rsplit_once("####").map_or(reference, |(_, t)| t);
    last_number(tail)
}

/// 1 when the output's last number equals a reference's number, 0 when it
/// does not (or the output has none); `None` when a reference has no number,
/// so the scorer does not apply: an answer that may be said in words is not
/// graded by its digits (against the forms "carbon dioxide" and "CO2", a
/// right "carbon dioxide" had scored 0 by CO2's 2).
pub fn number(output: &str, references: &[String]) -> Option<f64> {
    let wanted: Vec<f64> = references.iter().filter_map(|r| reference_number(r)).collect();
    if wanted.is_empty() || wanted.len() < references.len() {
        return None;
    }
    let got = last_number(output);
    Some(f64::from(u8::from(got.is_some_and(|g| wanted.contains(&g)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_may_be_said_in_words_is_not_graded_by_digits() {
        // The repository's own question set: "carbon dioxide" or "CO2".
        let forms = ["carbon dioxide".to_string(), "CO2".to_string()];
        assert_eq!(number(" carbon dioxide", &forms), None, "the scorer does not apply");
        // Numbers in every form grade, against any of them.
        let forms = ["7".to_string(), "#### 7.0".to_string()];
        assert_eq!(number("It is 7.", &forms), Some(1.0));
        assert_eq!(number("It is 8.", &forms), Some(0.0));
    }
}
