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
/// one, else the last number in it that stands as a word of its own. The
/// digits of a name (`CO2`, `H2O`, `2nd`) are no number to grade by: with
/// them, an answer of "carbon dioxide" against the forms "carbon dioxide"
/// and "CO2" had scored 0.
///
/// ```
/// use goodput_core::quality::reference_number;
/// assert_eq!(reference_number("#### 1,234"), Some(1234.0));
/// assert_eq!(reference_number("3 apples"), Some(3.0));
/// assert_eq!(reference_number("CO2"), None);
/// assert_eq!(reference_number("the 2nd"), None);
/// ```
pub fn reference_number(reference: &str) -> Option<f64> {
    let tail = reference.rsplit_once("####").map_or(reference, |(_, t)| t);
    let alone = |m: &regex::Match| {
        let before = tail[..m.start()].chars().next_back();
        let after = tail[m.end()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphabetic)
    };
    let m = number_re().find_iter(tail).filter(alone).last()?;
    m.as_str().replace(',', "").parse().ok()
}

/// 1 when the output's last number equals a reference's number, 0 when it
/// does not (or the output has none); `None` when no reference has a number,
/// so the scorer does not apply.
pub fn number(output: &str, references: &[String]) -> Option<f64> {
    let wanted: Vec<f64> = references.iter().filter_map(|r| reference_number(r)).collect();
    if wanted.is_empty() {
        return None;
    }
    let got = last_number(output);
    Some(f64::from(u8::from(got.is_some_and(|g| wanted.contains(&g)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digits_of_a_name_are_no_number_to_grade_by() {
        // The repository's own question set: "carbon dioxide" or "CO2".
        let forms = ["carbon dioxide".to_string(), "CO2".to_string()];
        assert_eq!(number(" carbon dioxide", &forms), None, "the scorer does not apply");
        // A number among the forms still grades, against any of them.
        let forms = ["seven".to_string(), "7".to_string()];
        assert_eq!(number("It is 7.", &forms), Some(1.0));
        assert_eq!(number("It is 8.", &forms), Some(0.0));
    }
}
