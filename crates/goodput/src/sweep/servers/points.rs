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
/// and its verdict, the cost the run priced, and the energy figures where
/// the run has them (scraped from DCGM, or the engine's power model).
pub fn frontier_point(p: &SweepPoint, gpus: u32, percentile: f64, attainment: f64) -> FrontierPoint {
    let r = &p.result;
    let s = &r.summary;
    let tput = s.throughput.output_tokens_per_s;
    let tpot = s.tpot_ms.p(percentile).filter(|t| *t > 0.0);
    // The run's energy report, as `bench` gives it: the GPUs' energy
    // counters over the window (DCGM) with their power limits, or the
    // simulated engine's power model for a prediction; none where the
    // figures were withheld. (The server signals' raw figure had been taken,
    // unchecked, and a prediction's and the power limits' were dropped.)
    let energy = r.energy.as_ref();
    let positive = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
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
        joules_per_output_token: energy.and_then(|e| e.joules_per_output_token).and_then(positive),
        output_tokens_per_s_per_mw: energy.and_then(|e| e.output_tokens_per_s_per_provisioned_mw).and_then(positive),
        completed: s.requests.completed,
        failed: s.requests.failed,
        steady: s.stability.as_ref().map(|st| st.steady),
        client_stalled: crate::output::client_stalled(r),
        spec_decode: goodput_core::doc::frontier::PointSpecDecode::of(r),
        extra: Default::default(),
    }
}
