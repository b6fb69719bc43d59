//! How names are compared: case, spaces and underscores aside.

pub(super) fn normalise(name: &str) -> String {
    name.trim().to_ascii_lowercase().chars().map(|c| if c == '_' || c == ' ' { '-' } else { c }).collect()
}
