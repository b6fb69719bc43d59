//! Durations travel as integer nanoseconds so that a saved record reads back
//! bit-for-bit and `report` recomputes exactly the live run's numbers.

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(nanos(d))
}

/// `d` in nanoseconds, the most a u64 holds past 584 years (a cast had
/// wrapped, and a time past it read back as a small one).
fn nanos(d: &Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_nanos(u64::deserialize(d)?))
}

pub mod option {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&nanos(d)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_nanos))
    }
}
