//! The values of the text format both the parser and the histograms hold:
//! a series' labels, and floats as Prometheus writes them (`+Inf`, `NaN`).

use serde::{Deserialize, Deserializer, Serializer};
use std::collections::BTreeMap;

/// Label names to values. Ordered, so that a series has one identity however
/// the server ordered its labels.
pub type Labels = BTreeMap<String, String>;

/// `NaN`, `+Inf`, `-Inf` and decimal or scientific numbers: Rust's float
/// parser reads all of them (and a few spellings more, such as `inf`, which
/// Go's reader behind Prometheus accepts too).
pub(crate) fn parse_float(s: &str) -> Option<f64> {
    s.parse::<f64>().ok()
}

/// Floats in JSON as numbers, and `NaN`, `+Inf`, `-Inf` as the strings the
/// exposition format uses, since JSON has no such numbers.
pub(crate) mod prom_float {
    use super::*;

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if *v > 0.0 {
            s.serialize_str("+Inf")
        } else {
            s.serialize_str("-Inf")
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Number(f64),
            Text(String),
        }
        match Repr::deserialize(d)? {
            Repr::Number(v) => Ok(v),
            Repr::Text(t) => parse_float(&t).ok_or_else(|| serde::de::Error::custom(format!("not a float: {t:?}"))),
        }
    }
}
