//! The measurement window of a run.

#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The measurement window [T1, T2] on the run's clock.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Window {
    pub start_s: f64,
    pub end_s: f64,
    pub duration_s: f64,
}
