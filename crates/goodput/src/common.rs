//! What every command shares: the tool's identity and the time, and lists
//! of names.

use anyhow::{bail, Result};
use goodput_core::Tool;

/// The commit this binary was built from (build.rs): a short hash, with
/// `-modified` when the tree differed from it; empty outside a git checkout.
pub const COMMIT: &str = env!("GOODPUT_COMMIT");

pub fn tool() -> Tool {
    Tool {
        name: "goodput".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        commit: Some(COMMIT.to_string()).filter(|c| !c.is_empty()),
    }
}

/// What `--version` prints after the name: `0.1.0 (commit 1a2b3c4d5e6f)`,
/// or the bare version when built outside git.
pub fn version() -> &'static str {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| match COMMIT {
        "" => env!("CARGO_PKG_VERSION").to_string(),
        c => format!("{} (commit {c})", env!("CARGO_PKG_VERSION")),
    })
}

pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// `unix_s` as an RFC 3339 UTC time to the millisecond, e.g. `2026-01-01T00:00:00.250Z`.
pub fn rfc3339(unix_s: f64) -> String {
    let ms = (unix_s * 1000.0).round() as i64;
    // Past the years `time` holds (±9999), which no start it parsed reaches,
    // the seconds themselves.
    let Ok(c) = time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)) else {
        return format!("{unix_s} s after 1970");
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        c.year(),
        u8::from(c.month()),
        c.day(),
        c.hour(),
        c.minute(),
        c.second(),
        ms.rem_euclid(1000)
    )
}

/// The names in a comma-separated list (`--model`, `--served-model-name`),
/// trimmed, empty ones dropped.
pub fn names(list: Option<&str>) -> Vec<String> {
    list.map_or_else(Vec::new, |l| l.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect())
}

/// [`names`] of the list `flag` gave, refusing a given list that names
/// nothing (`' , '`); empty when the flag was not given.
pub fn names_of(flag: &str, list: Option<&str>) -> Result<Vec<String>> {
    let named = names(list);
    match list {
        Some(l) if named.is_empty() => {
            bail!("{flag} '{l}' names no model: give a name, or several separated by commas")
        }
        _ => Ok(named),
    }
}
