//! Python's notion of whitespace, which the reference scorers split on.

/// `str.isspace()`: Unicode's White_Space plus the four information
/// separators U+001C..U+001F, which Python's `str.split()` also splits on.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `str.split()` with no argument.
pub fn py_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_space).filter(|w| !w.is_empty())
}

/// `' '.join(s.split())`.
pub fn py_squeeze(s: &str) -> String {
    py_split(s).collect::<Vec<_>>().join(" ")
}

/// `str.rstrip()`.
pub fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(is_py_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_as_python_does() {
        assert_eq!(py_split(" a\u{1c}b\u{a0}c\u{3000}\n").collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(py_squeeze("  x \t y "), "x y");
        assert_eq!(py_rstrip("x \u{2009}"), "x");
    }
}
