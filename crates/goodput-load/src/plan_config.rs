//! A load plan as the result document writes it (`config.load`).

use crate::runner::LoadPlan;
use crate::schedule::Arrival;
use goodput_core::doc::config::{CancelConfig, LoadConfig, Rate};
use std::time::Duration;

fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// The `load` block of a plan: everything in it comes from the plan.
impl From<&LoadPlan> for LoadConfig {
    fn from(p: &LoadPlan) -> LoadConfig {
        LoadConfig {
            concurrency: p.concurrency.map(|c| c as u64),
            rate: p.rate.map(|r| Rate(r.0)),
            arrival: p.rate.map(|(_, a)| a.name().to_owned()),
            burstiness: match p.rate {
                Some((_, Arrival::Gamma { burstiness })) => Some(burstiness),
                _ => None,
            },
            trace: p.trace_source.as_ref().map(|t| t.file.clone()),
            trace_speed: p.trace_source.as_ref().map(|t| t.speed),
            requests: p.requests,
            duration: p.duration.map(human),
            warmup: Some(p.warmup),
            warmup_time: (!p.warmup_time.is_zero()).then(|| human(p.warmup_time)),
            ramp_up: (!p.ramp_up.is_zero()).then(|| human(p.ramp_up)),
            cancel: p.cancel.map(|c| CancelConfig { rate: c.rate, after: human(c.after) }),
            sessions: p.sessions.as_ref().map(crate::Sessions::config),
            grace: Some(human(p.grace)),
            seed: Some(p.seed),
            extra: Default::default(),
        }
    }
}
