//! A measured sweep point as a point of the frontier document.

use goodput_core::analysis::slo::{Slo, SloMetric};
use goodput_core::doc::frontier::FrontierPoint;
use goodput_core::doc::sweep::{meets_slo, SweepPoint};

/// The percentile the frontier's latencies are given at: the SLO's TPOT
/// objective's, else its TTFT objective's, else 50.
pub fn frontier_percentile(slo: Option<&Slo>) -> f64 {
    let of = |m: SloMetric| slo.and_then(|s| s.objectives.iter().find(|o| o.metric == m)).map(|o| o.percentile);
    of(SloMetric::Tpot).or_else(|| of(SloMetric::Ttft)).unwrap_or(50.0)
}

/// One steady point of a configuration on `gpus` GPUs: its throughput per
/// GPU, the speed a user sees (1000 / TPOT at `percentile`), TTFT, goodput
/// and its verdict, the cost the run priced, and the energy per token where
/// the GPUs' energy counter was scraped (DCGM).
pub fn frontier_point(p: &SweepPoint, gpus: u32, percentile: f64, attainment: f64) -> FrontierPoint {
    let r = &p.result;
    let s = &r.summary;
    let tput = s.throughput.output_tokens_per_s;
    let tpot = s.tpot_ms.p(percentile).filter(|t| *t > 0.0);
    let joules = r
        .server_signals
        .as_ref()
        .and_then(|sig| sig.window.energy_per_output_token_joules)
        .filter(|j| j.is_finite() && *j > 0.0);
    FrontierPoint {
        load: p.load,
        output_tokens_per_s: tput,
        output_tokens_per_s_per_gpu: tput / f64::from(gpus.max(1)),
        tokens_per_s_per_user: tpot.map(|t| 1000.0 / t),
        ttft_ms: s.ttft_ms.p(percentile),
        tpot_ms: tpot,
        goodput_tokens_per_s: s.goodput.as_ref().map(|g| g.output_tokens_per_s),
        meets_slo: meets_slo(r, attainment),
        usd_per_million_output_tokens: r.cost.as_ref().and_then(|c| c.usd_per_million_output_tokens),
        joules_per_output_token: joules,
        // Per provisioned megawatt needs the GPUs' rated power, which a
        // measured server does not give.
        output_tokens_per_s_per_mw: None,
        completed: s.requests.completed,
        failed: s.requests.failed,
        steady: s.stability.as_ref().map(|st| st.steady),
        client_stalled: crate::output::client_stalled(r),
        extra: Default::default(),
    }
}
