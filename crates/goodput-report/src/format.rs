//! How numbers read in human-facing formats (terminal, Markdown, HTML): one
//! place, so a value prints the same wherever it appears. CSV and JSON keep
//! full precision and never go through here.

use crate::metric::Unit;

/// A latency in milliseconds: two decimals, whole numbers once large.
pub fn ms(v: Option<f64>) -> String {
    match v {
        Some(x) if !x.is_finite() => "∞".into(),
        Some(x) if x.abs() >= 1e5 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    }
}

/// A duration given in milliseconds, read in seconds (`4.83 s`): what a
/// whole session takes.
pub fn seconds_of_ms(v: Option<f64>) -> String {
    v.map(|v| format!("{:.2} s", v / 1000.0)).unwrap_or("-".into())
}

/// A value in its unit, with the unit when it is not obvious from a header.
pub fn value(v: Option<f64>, unit: Unit) -> String {
    let Some(x) = v else { return "-".into() };
    if !x.is_finite() {
        return "∞".into();
    }
    match unit {
        Unit::Ms => ms(Some(x)),
        Unit::TokensPerS => format!("{x:.1}"),
        Unit::RequestsPerS => format!("{x:.3}"),
        Unit::Ratio => format!("{:.2}%", x * 100.0),
        Unit::Usd => usd(x),
        Unit::Count => format!("{x:.0}"),
        Unit::Plain => format!("{x:.2}"),
    }
}

/// Dollars with enough digits to tell small prices apart.
pub fn usd(x: f64) -> String {
    if x.abs() >= 0.01 || x == 0.0 {
        format!("${x:.3}")
    } else {
        format!("${x:.6}")
    }
}

/// A relative change (0.1 = +10%).
pub fn change(c: Option<f64>) -> String {
    match c {
        None => "-".into(),
        Some(x) if x.is_infinite() => if x > 0.0 { "+∞%" } else { "-∞%" }.into(),
        Some(x) => format!("{:+.1}%", x * 100.0),
    }
}

/// Seconds since the Unix epoch as a UTC date and time, `2026-01-31 12:00:00 UTC`.
///
/// ```
/// assert_eq!(goodput_report::format::utc(0.0), "1970-01-01 00:00:00 UTC");
/// assert_eq!(goodput_report::format::utc(951_782_400.5), "2000-02-29 00:00:00 UTC");
/// ```
pub fn utc(unix_s: f64) -> String {
    if !unix_s.is_finite() {
        return "-".into();
    }
    let t = goodput_core::civil::civil_utc(unix_s.floor() as i64);
    format!("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", t.year, t.month, t.day, t.hour, t.minute, t.second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_against_known_instants() {
        assert_eq!(utc(1_700_000_000.0), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc(-1.0), "1969-12-31 23:59:59 UTC");
        assert_eq!(utc(4_102_444_800.0), "2100-01-01 00:00:00 UTC");
    }

    #[test]
    fn values_by_unit() {
        assert_eq!(value(Some(0.1234), Unit::Ratio), "12.34%");
        assert_eq!(value(Some(1010.91), Unit::TokensPerS), "1010.9");
        assert_eq!(value(Some(0.000026), Unit::Usd), "$0.000026");
        assert_eq!(value(Some(0.824), Unit::Usd), "$0.824");
        assert_eq!(value(None, Unit::Ms), "-");
        assert_eq!(change(Some(-0.05)), "-5.0%");
        assert_eq!(change(Some(f64::INFINITY)), "+∞%");
    }
}
