//! A live run's stopping rules (`--until`, `--stop-on-slo`; docs/metrics.md,
//! "Stopping when the answer is known"): set up from the options, fed each
//! completed record by the run's sink, which stops sending once they
//! decide, and said in the result's `stop` with the run's other ways to end.

use crate::cli::{ShapeArgs, UntilArgs};
use anyhow::{bail, Result};
use goodput_core::analysis::interval::DEFAULT_CONFIDENCE;
use goodput_core::analysis::until::{
    slo_decidable, slo_undecidable_terms, Stop, StopReason, StoppingConfig, Until, Watch, DEFAULT_CAP_DURATION,
    DEFAULT_CAP_REQUESTS,
};
use goodput_core::{AnalysisOptions, RequestRecord};
use goodput_load::LoadPlan;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The stopping rules of one run, shared by its record sink and by what
/// reads their verdict after the run.
pub struct Rules {
    state: Mutex<State>,
}

struct State {
    watch: Watch,
    decided: Option<Stop>,
}

/// What the rules of a run are: each run (a sweep's point) starts its own
/// [`Rules`] from them.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The rules before their first record.
    fresh: Watch,
    config: StoppingConfig,
}

impl Spec {
    /// Fresh rules for one run of `plan`.
    pub fn rules(&self, plan: &LoadPlan) -> Arc<Rules> {
        Arc::new(Rules { state: Mutex::new(State { watch: self.watch_for(plan), decided: None }) })
    }

    /// The rules' watch for a run of `plan`, before its first record: one
    /// that knows the requests its start sends together
    /// ([`Watch::with_start_wave`]).
    pub fn watch_for(&self, plan: &LoadPlan) -> Watch {
        self.watch().with_start_wave(start_wave(plan))
    }

    /// The rules as the result's `config.stopping` gives them.
    pub fn config(&self) -> StoppingConfig {
        self.config.clone()
    }

    /// The rules' watch, before its first record (a virtual run feeds it).
    pub fn watch(&self) -> Watch {
        self.fresh.clone()
    }

    /// `stop`, as the rules of a run decided it, once the run's `records`
    /// have all completed (those in flight at the decision too): see
    /// [`Watch::settled`].
    pub fn settled(&self, stop: Stop, records: &[RequestRecord]) -> Stop {
        let mut w = self.watch();
        for r in records {
            w.absorb(r);
        }
        w.settled(stop)
    }

    /// Why a run of `plan` whose rules never decided stopped: the limit
    /// that came first, with the figures over all of its `records`.
    pub fn capped(&self, plan: &LoadPlan, records: &[RequestRecord]) -> Stop {
        let mut w = self.watch_for(plan);
        let mut by_end: Vec<&RequestRecord> = records.iter().collect();
        by_end.sort_by_key(|r| r.end);
        for r in by_end {
            let _ = w.observe(r);
        }
        w.capped(&limit_of(plan, records).1)
    }
}

/// The measured requests a run of `plan` sends together at its start: a
/// closed loop's users, all at once without a ramp-up, less those the
/// warm-up takes (none after a timed warm-up, which takes the start); none
/// for an open loop (its sends are its schedule's).
pub fn start_wave(plan: &LoadPlan) -> u64 {
    let closed = plan.rate.is_none() && plan.trace.is_none();
    match plan.concurrency {
        Some(c) if closed && plan.ramp_up.is_zero() && plan.warmup_time.is_zero() => {
            // A shard starts its share of the users (at most this many).
            let users = plan.shard.map_or(c as u64, |s| (c as u64).div_ceil(u64::from(s.count).max(1)));
            users.saturating_sub(plan.warmup)
        }
        _ => 0,
    }
}

/// The rules `a` asks for, judged at the confidence of `opts` and against
/// its SLO; `None` when none is asked for.
pub fn spec(a: &UntilArgs, opts: &AnalysisOptions) -> Result<Option<Spec>> {
    let until = if a.until.is_empty() { None } else { Some(Until::join(&a.until)?) };
    let slo = match (&opts.slo, a.stop_on_slo) {
        (_, false) => None,
        (Some(s), true) if slo_decidable(s) => Some(s),
        (Some(s), true) if !slo_undecidable_terms(s).is_empty() => bail!(
            "--stop-on-slo cannot decide --slo {s} before the run's end: {} a corpus score of the whole run, with \
             no interval to judge as it goes; add a term it can decide (a percentile objective, a per-request \
             limit, or a mean score such as exact>=0.8), or drop --stop-on-slo",
            is_are(&slo_undecidable_terms(s))
        ),
        (_, true) => bail!(
            "--stop-on-slo needs a latency SLO to decide: give --slo with percentile objectives or per-request \
             limits, e.g. --slo 'ttft:p95<=200ms'"
        ),
    };
    if let Some(s) = slo {
        let undecidable = slo_undecidable_terms(s);
        if !undecidable.is_empty() {
            // Said once, though --runs and a sweep set the rules up again.
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                goodput_core::tell!(
                    "note: --stop-on-slo: {} a corpus score of the whole run, not judged before its end, so the run \
                     stops early only where another term is decided missed, never as met (the SLO is judged on every \
                     request at the end)",
                    is_are(&undecidable)
                )
            });
        }
    }
    let confidence = opts.confidence.unwrap_or(DEFAULT_CONFIDENCE);
    let config = StoppingConfig { until: until.as_ref().map(|u| u.to_string()), stop_on_slo: a.stop_on_slo };
    Ok(Watch::new(until.as_ref(), slo, confidence).map(|fresh| Spec { fresh, config }))
}

/// `bleu>=20 is` or `bleu>=20 and chrf_corpus>=50 are`.
fn is_are(terms: &[String]) -> String {
    match terms {
        [one] => format!("{one} is"),
        _ => format!("{} are each", terms.join(" and ")),
    }
}

/// A run with stopping rules and neither --requests nor --duration runs
/// at most [`DEFAULT_CAP_REQUESTS`] requests or [`DEFAULT_CAP_DURATION`],
/// whichever comes first (a trace's end bounds it already).
pub fn cap(plan: &mut LoadPlan, shape: &ShapeArgs) {
    if shape.requests.is_none() && shape.duration.is_none() && plan.trace.is_none() {
        plan.requests = Some(DEFAULT_CAP_REQUESTS);
        plan.duration = Some(DEFAULT_CAP_DURATION);
    }
}

impl Rules {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one completed record; once the rules decide, stops sending
    /// (`stop`: what is in flight finishes within the grace, as on Ctrl-C),
    /// and takes what then completes without deciding again.
    pub fn observe(&self, r: &RequestRecord, stop: &CancellationToken) {
        let mut s = self.state();
        if s.decided.is_some() {
            s.watch.absorb(r);
            return;
        }
        if let Some(d) = s.watch.observe(r) {
            s.decided = Some(d);
            stop.cancel();
        }
    }

    /// Whether the rules ended the run.
    pub fn decided(&self) -> bool {
        self.state().decided.is_some()
    }
}

/// Why a run of `plan` with `records` stopped: its rules' decision (with
/// what the requests in flight at it did to the figures), else
/// Ctrl-C, else the limit that ended sending (with rules, `cap`: they did
/// not decide within it).
pub fn stop_of(rules: Option<&Rules>, interrupted: bool, plan: &LoadPlan, records: &[RequestRecord]) -> Stop {
    if let Some(r) = rules {
        let s = r.state();
        if let Some(d) = s.decided.clone() {
            return s.watch.settled(d);
        }
    }
    let plain = |reason| Stop { reason, detail: String::new(), at_requests: None, looks: None };
    if interrupted {
        return plain(StopReason::Interrupted);
    }
    let (reason, limit) = limit_of(plan, records);
    match rules {
        Some(r) => r.state().watch.capped(&limit),
        None => plain(reason),
    }
}

/// Which of `plan`'s limits ended sending, and in words.
fn limit_of(plan: &LoadPlan, records: &[RequestRecord]) -> (StopReason, String) {
    let measured = records.iter().filter(|r| !r.warmup).count() as u64;
    match (plan.requests, plan.duration) {
        (_, Some(d)) if plan.requests.is_none_or(|n| measured < n) => {
            (StopReason::Duration, format!("its duration of {}", goodput_core::util::duration_text(d)))
        }
        (Some(n), _) => (StopReason::Requests, format!("the run's {n} requests")),
        (None, _) => (StopReason::Requests, "the trace's end".to_string()),
    }
}
