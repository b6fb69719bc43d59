//! `--start-at`: a shard waits for the wall-clock instant every shard of
//! the run was given, so that they start together (docs/shards.md).

use crate::common;
use goodput_load::Control;

/// Waits for the wall-clock instant `t` (Unix seconds), or for a stop. An
/// instant already past is warned about and the run starts at once: the
/// shard's late start shows in its `started_unix_s`, and `merge` reports it.
pub(super) async fn wait_until(t: f64, control: &Control, quiet: bool) {
    let now = common::unix_now();
    if now > t {
        goodput_core::tell!(
            "warning: --start-at was {:.3} s ago; starting now (a late shard's start widens the merged run's clock \
             uncertainty)",
            now - t
        );
        return;
    }
    // A wait of hours is said even to a quiet run: it looks like a hang.
    if !quiet || t - now > crate::setup::LONG_WAIT.as_secs_f64() {
        let long = crate::setup::human_wait(goodput_core::clamped_secs(t - now));
        goodput_core::tell!("waiting {:.1} s ({long}) for --start-at {}", t - now, common::rfc3339(t));
    }
    tokio::select! {
        _ = tokio::time::sleep(goodput_core::clamped_secs(t - now).min(goodput_core::HORIZON)) => {}
        _ = control.stop.cancelled() => {}
    }
}
