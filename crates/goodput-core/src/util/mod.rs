//! Utilities the rest of the crate and its users share: bounded reading of
//! input files ([`input`]), deterministic draws ([`hash`]), secrets kept out
//! of what is written ([`redact`]), durations as integer nanoseconds in
//! serde ([`serde_ns`]), the simulated engine's tokens ([`words`]), and
//! numbers and durations as a message names them.

pub mod hash;
pub mod input;
pub mod redact;
pub(crate) mod serde_ns;
pub mod words;

/// A number as a message names it: as written, or in exponent form from a
/// million on and below a thousandth (`1e308` and `1e-300`, not their
/// hundreds of digits).
pub fn number_text(v: f64) -> String {
    if v != 0.0 && !(1e-3..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// `v` rounded to `digits` significant digits, as a number (a fitted
/// constant's, a threshold's last digits are the search's, not the data's);
/// zero and what is not finite as they are.
///
/// ```
/// use goodput_core::util::round_significant;
/// assert_eq!(round_significant(0.349_123, 4), 0.3491);
/// assert_eq!(round_significant(645.04, 4), 645.0);
/// assert_eq!(round_significant(123_456.0, 3), 123_000.0);
/// ```
pub fn round_significant(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(digits - 1 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

/// A duration as people write it in a sentence: `250 ms`, `1.2 s`, `3 min
/// 20 s`, `1 h 5 min`, `2 days 3 h`; `0 s` for none. Below a minute, one
/// unit (ns, µs, ms or s) to its thousandth, trailing zeros dropped; from a
/// minute on, whole days, hours and minutes and the seconds left to the
/// millisecond, a part that is zero left out. It rounds before it picks the
/// unit, so 999.9996 ms is `1 s`, not `1000 ms`. For a value a flag takes
/// back (an echoed command line), humantime's `1.2s`-style text is the one.
///
/// ```
/// use std::time::Duration;
/// use goodput_core::util::duration_text;
/// assert_eq!(duration_text(Duration::from_millis(1200)), "1.2 s");
/// assert_eq!(duration_text(Duration::from_secs(3900)), "1 h 5 min");
/// ```
pub fn duration_text(d: std::time::Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0 s".into();
    }
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    // Thousandths of each unit, rounded half up: an exact integer count.
    let thousandths = |unit: u128| (ns * 1_000 + unit / 2) / unit;
    for (unit, name) in [(1_000, "µs"), (1_000_000, "ms")] {
        let t = thousandths(unit);
        if t < 1_000_000 {
            return format!("{} {name}", decimal(t));
        }
    }
    let ms = thousandths(1_000_000_000);
    if ms < 60_000 {
        return format!("{} s", decimal(ms));
    }
    let (days, hours, minutes, rest) = (ms / 86_400_000, ms / 3_600_000 % 24, ms / 60_000 % 60, ms % 60_000);
    let mut parts = Vec::new();
    if days > 0 {
        parts.push(format!("{days} day{}", if days == 1 { "" } else { "s" }));
    }
    if hours > 0 {
        parts.push(format!("{hours} h"));
    }
    if minutes > 0 {
        parts.push(format!("{minutes} min"));
    }
    if rest > 0 {
        parts.push(format!("{} s", decimal(rest)));
    }
    parts.join(" ")
}

/// `t` thousandths as a decimal, trailing zeros dropped: 1200 → `1.2`.
fn decimal(t: u128) -> String {
    let (whole, frac) = (t / 1_000, t % 1_000);
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{}", format!("{frac:03}").trim_end_matches('0'))
    }
}

/// `n` with commas between its thousands: `20,000,000`.
///
/// ```
/// assert_eq!(goodput_core::util::thousands(1_234_567), "1,234,567");
/// assert_eq!(goodput_core::util::thousands(999), "999");
/// ```
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_named_as_written() {
        use super::number_text;
        assert_eq!(number_text(1e-300), "1e-300");
        assert_eq!(number_text(1e308), "1e308");
        assert_eq!(number_text(-3.0), "-3");
        assert_eq!(number_text(0.0), "0");
        assert_eq!(number_text(1.625), "1.625");
    }

    #[test]
    fn durations_read_as_people_write_them() {
        use super::duration_text as t;
        use std::time::Duration;
        let ms = Duration::from_millis;
        assert_eq!(t(Duration::ZERO), "0 s");
        // Below a millisecond: nanoseconds, then microseconds.
        assert_eq!(t(Duration::from_nanos(1)), "1 ns");
        assert_eq!(t(Duration::from_nanos(999)), "999 ns");
        assert_eq!(t(Duration::from_nanos(1_000)), "1 µs");
        assert_eq!(t(Duration::from_nanos(1_500)), "1.5 µs");
        assert_eq!(t(Duration::from_nanos(250_000)), "250 µs");
        // Milliseconds, to the microsecond, and rounded before the unit is
        // chosen: never `1000 ms` nor `60 s`.
        assert_eq!(t(ms(250)), "250 ms");
        assert_eq!(t(Duration::from_micros(1_250)), "1.25 ms");
        assert_eq!(t(Duration::from_micros(999_900)), "999.9 ms");
        assert_eq!(t(Duration::from_nanos(999_999_600)), "1 s");
        assert_eq!(t(Duration::from_nanos(999_999_400)), "999.999 ms");
        assert_eq!(t(Duration::from_nanos(999_999_500)), "1 s");
        assert_eq!(t(Duration::from_nanos(59_999_600_000)), "1 min");
        // Seconds, to the millisecond.
        assert_eq!(t(ms(1_000)), "1 s");
        assert_eq!(t(ms(1_200)), "1.2 s");
        assert_eq!(t(ms(59_999)), "59.999 s");
        // Minutes, hours and days, a part that is zero left out.
        assert_eq!(t(Duration::from_secs(60)), "1 min");
        assert_eq!(t(Duration::from_secs(180)), "3 min");
        assert_eq!(t(Duration::from_secs(200)), "3 min 20 s");
        assert_eq!(t(ms(90_500)), "1 min 30.5 s");
        assert_eq!(t(Duration::from_secs(3_600)), "1 h");
        assert_eq!(t(Duration::from_secs(3_900)), "1 h 5 min");
        assert_eq!(t(Duration::from_secs(3_605)), "1 h 5 s");
        assert_eq!(t(Duration::from_secs(86_400)), "1 day");
        assert_eq!(t(Duration::from_secs(1_000_000)), "11 days 13 h 46 min 40 s");
        assert_eq!(t(Duration::MAX), "213503982334601 days 7 h 16 s");
    }
}
