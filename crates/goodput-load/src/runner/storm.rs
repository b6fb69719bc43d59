//! A failure storm: the server (or whatever stands at the URL) fails every
//! request at once, and a closed loop resends as fast as it fails, piling up
//! failed records by the thousand a second (a closed loop against a closed
//! port sent 221,323 requests in 8 s, and held half a gigabyte of them). A
//! run in a storm stops sending early: it measures nothing but the failure.

use goodput_core::{Outcome, RequestRecord};
use std::time::Duration;

/// Failures in a row, with no success between, that may be a storm…
pub const FAILURES: u64 = 1000;

/// …when no request has succeeded for this long either (since the run's
/// start, when none has): a healthy run's sporadic errors, and a server's
/// brief hiccup, never stop a run.
pub const QUIET: Duration = Duration::from_secs(10);

/// Failures in a row that are a storm sooner, once none has succeeded for
/// [`FLOOD_QUIET`]: a loop that fails tens of thousands of requests a
/// second holds a record of each (about 2 KB), and would pile up a
/// gigabyte before [`QUIET`] passed.
pub const FLOOD: u64 = 50_000;

/// How long a [`FLOOD`] must have gone without a success: a server's
/// restart of a second or two (its port closed, a proxy's instant 502s)
/// fails requests as fast, and is no storm.
pub const FLOOD_QUIET: Duration = Duration::from_secs(3);

/// The records seen so far, as far as a storm goes.
#[derive(Debug, Default)]
pub(crate) struct Storm {
    /// Failures since the last success.
    failed: u64,
    /// The first of them, in words.
    first: Option<String>,
    /// The end of the last success (zero: the run's start).
    last_success: Duration,
    /// The storm was told (a run stops once).
    told: bool,
}

impl Storm {
    /// Takes the next record to complete; gives why the run should stop
    /// when it completes a storm (once). A cancelled request neither fails
    /// nor succeeds; nor does a refusal whose user waits out its
    /// `Retry-After` (such refusals come no faster than the server asks,
    /// and a quota's had stopped a run as a storm).
    pub(crate) fn observe(&mut self, r: &RequestRecord) -> Option<String> {
        if super::sender::retry_wait(r).is_some() {
            return None;
        }
        match &r.outcome {
            Outcome::Success => {
                *self = Storm { last_success: self.last_success.max(r.end), ..Storm::default() };
                None
            }
            Outcome::Failed { kind, message } => {
                self.failed += 1;
                self.first.get_or_insert_with(|| format!("{kind}: {message}"));
                let quiet = r.end.saturating_sub(self.last_success);
                let storm =
                    (self.failed >= FAILURES && quiet >= QUIET) || (self.failed >= FLOOD && quiet >= FLOOD_QUIET);
                if self.told || !storm {
                    return None;
                }
                self.told = true;
                let since =
                    if self.last_success.is_zero() { "since the run's start" } else { "since the last success" };
                Some(format!(
                    "a failure storm: every one of the last {} requests failed, and none succeeded in the {:.1} s \
                     {since}, so the run stopped sending early (a closed loop resends as fast as its requests \
                     fail); first failure: {}",
                    self.failed,
                    quiet.as_secs_f64(),
                    self.first.as_deref().unwrap_or("none")
                ))
            }
            Outcome::Cancelled => None,
        }
    }
}
