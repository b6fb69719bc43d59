//! The figures vLLM's `bench serve` prints, computed its way, beside
//! goodput's own (`vllm` in a result).

use super::Summary;
use crate::analysis::metrics::{ms, RequestMetrics};
use crate::analysis::stats::{percentile_key, Distribution};
use crate::doc::record::RequestRecord;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The run under the names and formulas of vLLM's `bench serve` (0.33):
/// TPOT is (e2e − ttft)/(n_out − 1), ITL is the raw gap between the payloads
/// it counts as output, throughput is over completed requests. TTFT and the
/// request's end are stamped where vLLM 0.33 stamps them: the first and last
/// payloads whose delta has text, `reasoning` or a tool call, or an empty
/// `content` without a `role` (`_choice_has_streamed_output`). An empty
/// keep-alive before the first token counts, so vLLM's TTFT can be well
/// below goodput's (`summary.ttft_ms`) on a server that sends one, and its
/// ITL then has one long gap a request, from the keep-alive to the first
/// token; the role-only opening chunk does not count
/// ([`RequestMetrics::ttft_vllm`], [`RequestMetrics::vllm_edge_gaps`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct VllmCompat {
    pub completed: u64,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub duration: f64,
    pub request_throughput: f64,
    pub output_throughput: f64,
    pub total_token_throughput: f64,
    pub mean_ttft_ms: Option<f64>,
    pub median_ttft_ms: Option<f64>,
    pub std_ttft_ms: Option<f64>,
    pub p99_ttft_ms: Option<f64>,
    pub mean_tpot_ms: Option<f64>,
    pub median_tpot_ms: Option<f64>,
    pub std_tpot_ms: Option<f64>,
    pub p99_tpot_ms: Option<f64>,
    pub mean_itl_ms: Option<f64>,
    pub median_itl_ms: Option<f64>,
    pub std_itl_ms: Option<f64>,
    pub p99_itl_ms: Option<f64>,
    pub mean_e2el_ms: Option<f64>,
    pub median_e2el_ms: Option<f64>,
    pub std_e2el_ms: Option<f64>,
    pub p99_e2el_ms: Option<f64>,
    /// `p{N}_{metric}_ms` for every other requested percentile, as vLLM's
    /// `--metric-percentiles` names them.
    #[serde(flatten)]
    pub other_percentiles: BTreeMap<String, Option<f64>>,
}

/// vLLM's figures; `itl` the distribution of every gap vLLM's ITL has in
/// `ok`, at the percentiles given.
pub(super) fn vllm_compat(
    ok: &[&RequestRecord],
    s: &Summary,
    ps: &[f64],
    dur: f64,
    itl: impl FnOnce(&[f64]) -> Distribution,
) -> VllmCompat {
    let ps_all: Vec<f64> = {
        let mut v = ps.to_vec();
        for p in [50.0, 99.0] {
            if !v.contains(&p) {
                v.push(p);
            }
        }
        v
    };
    let from = |f: &dyn Fn(&RequestRecord) -> Vec<Duration>| {
        let mut v: Vec<f64> = ok.iter().flat_map(|r| f(r)).map(ms).collect();
        Distribution::from_samples(&mut v, &ps_all)
    };
    let ttft = from(&|r| r.ttft_vllm().into_iter().collect());
    let tpot = from(&|r| r.tpot_vllm().into_iter().collect());
    let itl = itl(&ps_all);
    let e2el = from(&|r| r.e2e_vllm().into_iter().collect());
    let per_s = |x: f64| if dur > 0.0 { x / dur } else { 0.0 };
    let mut other = BTreeMap::new();
    for (name, d) in [("ttft", &ttft), ("tpot", &tpot), ("itl", &itl), ("e2el", &e2el)] {
        for &p in ps {
            if p != 99.0 {
                let key = percentile_key(p).replace('_', ".");
                other.insert(format!("{key}_{name}_ms"), d.p(p));
            }
        }
    }
    VllmCompat {
        completed: s.requests.completed,
        total_input_tokens: s.tokens.input,
        total_output_tokens: s.tokens.output,
        duration: dur,
        request_throughput: per_s(s.requests.completed as f64),
        output_throughput: per_s(s.tokens.output as f64),
        total_token_throughput: per_s(s.tokens.input as f64 + s.tokens.output as f64),
        mean_ttft_ms: ttft.mean,
        median_ttft_ms: ttft.p(50.0),
        std_ttft_ms: ttft.std,
        p99_ttft_ms: ttft.p(99.0),
        mean_tpot_ms: tpot.mean,
        median_tpot_ms: tpot.p(50.0),
        std_tpot_ms: tpot.std,
        p99_tpot_ms: tpot.p(99.0),
        mean_itl_ms: itl.mean,
        median_itl_ms: itl.p(50.0),
        std_itl_ms: itl.std,
        p99_itl_ms: itl.p(99.0),
        mean_e2el_ms: e2el.mean,
        median_e2el_ms: e2el.p(50.0),
        std_e2el_ms: e2el.std,
        p99_e2el_ms: e2el.p(99.0),
        other_percentiles: other,
    }
}
