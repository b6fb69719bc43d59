//! Calendar dates from Unix time, for the places that print one (report
//! headers, Ollama's `created_at` in the simulator), without a date crate.

/// A UTC instant as calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// The UTC calendar time of `unix_s` seconds since 1970-01-01 (Howard
/// Hinnant's civil_from_days: proleptic Gregorian, any sign).
pub fn civil_utc(unix_s: i64) -> CivilTime {
    let (days, rem) = (unix_s.div_euclid(86_400), unix_s.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    let rem = rem as u32;
    CivilTime { year, month, day, hour: rem / 3600, minute: rem % 3600 / 60, second: rem % 60 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        let t = |y, mo, d, h, mi, s| CivilTime { year: y, month: mo, day: d, hour: h, minute: mi, second: s };
        assert_eq!(civil_utc(0), t(1970, 1, 1, 0, 0, 0));
        assert_eq!(civil_utc(951_782_400), t(2000, 2, 29, 0, 0, 0));
        assert_eq!(civil_utc(1_700_000_000), t(2023, 11, 14, 22, 13, 20));
        assert_eq!(civil_utc(-1), t(1969, 12, 31, 23, 59, 59));
        assert_eq!(civil_utc(4_102_444_800), t(2100, 1, 1, 0, 0, 0));
    }
}
