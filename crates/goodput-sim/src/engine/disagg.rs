//! Prefill/decode disaggregation: a pool of prefill instances and a pool of
//! decode instances (each on `tp` × `pp` GPUs, times its ranks when it is
//! an expert-parallel group), and the link that carries a
//! request's KV cache from the first to the second (docs/simulator.md,
//! "Prefill/decode disaggregation").

use super::catalog::SlidingWindow;
use super::config::EngineConfig;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The pools' sizes and the KV link between them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Disaggregation {
    /// Prefill instances.
    pub prefill: u32,
    /// Decode instances.
    pub decode: u32,
    /// Each pool's tensor-parallel size where it is not `--tp`
    /// (`--pd 4xTP1:1xTP4`): `None` runs that pool on `--tp`.
    #[serde(default)]
    pub prefill_tp: Option<u32>,
    #[serde(default)]
    pub decode_tp: Option<u32>,
    /// Each pool's expert-parallel size where it is not `--ep`
    /// (`--pd 1xEP8:1xEP16`): each instance one group of EP / TP ranks.
    #[serde(default)]
    pub prefill_ep: Option<u32>,
    #[serde(default)]
    pub decode_ep: Option<u32>,
    /// The KV link's bandwidth per GPU and direction, Gb/s: `None` takes
    /// the catalog's default (see [`KvLink::new`]).
    #[serde(default)]
    pub link_gbps: Option<f64>,
    /// A transfer's fixed cost (set-up, completion notice), µs: `None`
    /// takes the default of the link's kind.
    #[serde(default)]
    pub link_latency_us: Option<f64>,
}

/// A transfer's fixed cost within an NVLink domain and across nodes, µs. Assumptions
/// of this model (an RDMA read's set-up and the completion notice), not
/// measurements: `--kv-link-latency-us` sets it.
pub const NVLINK_LATENCY_US: f64 = 10.0;
pub const NETWORK_LATENCY_US: f64 = 50.0;
/// The most instances one pool may have.
pub const MAX_INSTANCES: u32 = 1024;

impl Disaggregation {
    /// `P:D` (as `--pd` takes it), the link's defaults. Either side may name
    /// its pool's tensor-parallel size, `NxTPk` (`4xTP1:1xTP4`: four
    /// prefill instances of one GPU, one decode instance of four), and its
    /// expert-parallel size, `NxEPm` (`1xEP8:1xEP16`), or both
    /// (`1xTP2xEP8`); a side without one runs on `--tp` and `--ep`.
    pub fn parse(text: &str) -> Result<Disaggregation, String> {
        let bad = || {
            format!(
                "--pd {text:?} is not P:D; give the prefill and decode instances as two whole numbers, e.g. --pd 1:1 or \
                 --pd 2:3, each optionally with its pool's tensor- or expert-parallel size, e.g. --pd 4xTP1:1xTP4 or \
                 --pd 1xEP8:1xEP16"
            )
        };
        let [(prefill, prefill_tp, prefill_ep), (decode, decode_tp, decode_ep)] =
            goodput_core::doc::config::pd_sides(text).ok_or_else(bad)?;
        Ok(Disaggregation {
            prefill,
            decode,
            prefill_tp,
            decode_tp,
            prefill_ep,
            decode_ep,
            link_gbps: None,
            link_latency_us: None,
        })
    }

    /// The prefill pool's and the decode pool's (instances, TP, EP), each on
    /// its own sizes where these name them, else on `tp` and `ep`: what
    /// [`goodput_core::doc::config::pool_gpus`] counts.
    pub fn pools(&self, tp: u32, ep: u32) -> [(u32, u32, u32); 2] {
        [
            (self.prefill, self.prefill_tp.unwrap_or(tp), self.prefill_ep.unwrap_or(ep)),
            (self.decode, self.decode_tp.unwrap_or(tp), self.decode_ep.unwrap_or(ep)),
        ]
    }

    /// The most data-parallel ranks an instance of either pool has (EP / TP
    /// at its sizes; 1 without expert parallelism).
    pub fn most_ranks(&self, tp: u32, ep: u32) -> u32 {
        self.pools(tp, ep).iter().map(|&(_, tp, ep)| goodput_core::doc::config::ep_ranks(tp, ep)).max().unwrap_or(1)
    }

    /// `units` copies of these pools as one: P and D times the units, each
    /// pool's sizes as they are (beside `pd`, a plan's `dp` counts units).
    pub fn times(self, units: u32) -> Disaggregation {
        Disaggregation {
            prefill: self.prefill.saturating_mul(units),
            decode: self.decode.saturating_mul(units),
            ..self
        }
    }

    /// `P:D` and any pool's own TP and EP, as [`Disaggregation::parse`]
    /// takes it.
    pub fn spec(&self) -> String {
        let side = |n: u32, tp: Option<u32>, ep: Option<u32>| {
            let mut s = n.to_string();
            if let Some(tp) = tp {
                s += &format!("xTP{tp}");
            }
            if let Some(ep) = ep {
                s += &format!("xEP{ep}");
            }
            s
        };
        format!(
            "{}:{}",
            side(self.prefill, self.prefill_tp, self.prefill_ep),
            side(self.decode, self.decode_tp, self.decode_ep)
        )
    }

    /// Whether either pool names a size of its own.
    pub fn names_sizes(&self) -> bool {
        [self.prefill_tp, self.decode_tp, self.prefill_ep, self.decode_ep].iter().any(Option::is_some)
    }

    /// The same pools with `tp` and `ep` as `--tp` and `--ep`, in the form
    /// the rest of the engine keeps: the prefill pool's TP and EP
    /// (returned, for `--tp` and `--ep`) and the decode pool's own only
    /// where they differ from them.
    pub fn canonical(self, tp: u32, ep: u32) -> (u32, u32, Disaggregation) {
        let (p, d) = (self.prefill_tp.unwrap_or(tp), self.decode_tp.unwrap_or(tp));
        let (pe, de) = (self.prefill_ep.unwrap_or(ep), self.decode_ep.unwrap_or(ep));
        let pd = Disaggregation {
            prefill_tp: None,
            decode_tp: (d != p).then_some(d),
            prefill_ep: None,
            decode_ep: (de != pe).then_some(de),
            ..self
        };
        (p, pe, pd)
    }

    /// Whether the pools run on different tensor-parallel sizes, given the
    /// default `tp`.
    pub fn split_tp(&self, tp: u32) -> bool {
        self.prefill_tp.unwrap_or(tp) != self.decode_tp.unwrap_or(tp)
    }

    /// Whether the pools run on different expert-parallel sizes, given the
    /// default `ep`.
    pub fn split_ep(&self, ep: u32) -> bool {
        self.prefill_ep.unwrap_or(ep) != self.decode_ep.unwrap_or(ep)
    }

    /// Both pools' instances.
    pub fn instances(&self) -> u32 {
        self.prefill.saturating_add(self.decode)
    }

    /// Checks the sizes and the link; `Err` names the flag and the fix.
    pub fn check(&self) -> Result<(), String> {
        for (n, which) in [(self.prefill, "prefill"), (self.decode, "decode")] {
            if n == 0 || n > MAX_INSTANCES {
                return Err(format!(
                    "--pd {} has {n} {which} instances; each pool needs 1..={MAX_INSTANCES}",
                    self.spec()
                ));
            }
        }
        for (tp, which) in [(self.prefill_tp, "prefill"), (self.decode_tp, "decode")] {
            if let Some(tp) = tp.filter(|&t| t == 0 || t > 64) {
                return Err(format!(
                    "--pd {} gives the {which} pool TP{tp}; a pool's tensor-parallel size must lie in 1..=64",
                    self.spec()
                ));
            }
        }
        for (ep, which) in [(self.prefill_ep, "prefill"), (self.decode_ep, "decode")] {
            if let Some(ep) = ep.filter(|&e| e == 0 || e > 4096) {
                return Err(format!(
                    "--pd {} gives the {which} pool EP{ep}; a pool's expert-parallel size must lie in 1..=4096",
                    self.spec()
                ));
            }
        }
        if let Some(g) = self.link_gbps.filter(|g| !(g.is_finite() && *g > 0.0 && *g <= 1e6)) {
            return Err(format!(
                "--kv-link-gbps {g} must be a positive number of Gb/s per GPU, at most 1e6 (400 for a ConnectX-7 \
                 NIC, 3600 for H100 NVLink)"
            ));
        }
        if let Some(l) = self.link_latency_us.filter(|l| !(l.is_finite() && (0.0..=1e7).contains(l))) {
            return Err(format!("--kv-link-latency-us {l} must lie in 0..=1e7 µs"));
        }
        Ok(())
    }
}

/// Where the KV link's figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// The GPUs' own interconnect: every instance in one NVLink domain (an
    /// 8-GPU board, a GB200 NVL72 rack).
    Node,
    /// A network NIC per GPU: the pools span nodes.
    Network,
    /// `--kv-link-gbps`.
    Given,
}

impl LinkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Node => "node",
            LinkKind::Network => "network",
            LinkKind::Given => "given",
        }
    }
}

/// The KV link in force: a transfer of n prompt tokens takes
/// `latency + n · kv_bytes_per_token_per_gpu / bytes_per_s`, each of an
/// instance's TP × PP GPUs sending its own shard over its own link at once
/// (a sliding window's layers sending only the window's tokens).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KvLink {
    pub kind: LinkKind,
    /// Per GPU and direction.
    pub gbps: f64,
    pub latency: Duration,
    /// The full-attention layers' bytes a token (every layer's without a
    /// sliding window).
    pub kv_bytes_per_token_per_gpu: f64,
    /// A sliding window's (or chunked attention's) layers: their bytes a
    /// token, and the window. Such a layer holds, and sends, the window's
    /// tokens alone.
    pub window: Option<(f64, SlidingWindow)>,
}

impl KvLink {
    /// `cfg`'s link, when it is disaggregated: `--kv-link-gbps` when given;
    /// else the GPU's interconnect (the catalog's NVLink, Infinity Fabric or
    /// PCIe figure) when both pools fit in one NVLink domain (8 GPUs on a
    /// board, 72 in a GB200 NVL72: the domain tensor and expert
    /// parallelism use), else the GPU's NIC: 400 Gb/s (ConnectX-7, one per
    /// GPU on DGX/HGX H100, H200 and B200 boards), 200 Gb/s on the A100 and
    /// the PCIe parts, as expert and tensor parallelism across nodes take it.
    pub fn new(cfg: &EngineConfig) -> Option<KvLink> {
        let pd = cfg.pd?;
        let node = cfg.gpus() <= cfg.gpu.nvlink_domain;
        let (kind, gbps) = match pd.link_gbps {
            Some(g) => (LinkKind::Given, g),
            None if node => (LinkKind::Node, cfg.gpu.interconnect_gb_s * 8.0),
            None => (LinkKind::Network, cfg.gpu.network_gbps),
        };
        let default_latency = if node { NVLINK_LATENCY_US } else { NETWORK_LATENCY_US };
        let latency_us = pd.link_latency_us.unwrap_or(default_latency);
        let all = cfg.model.kv_bytes_per_token_per_gpu(cfg.kv_cache_dtype, cfg.pool_tp(false).min(cfg.pool_tp(true)))
            * cfg.stage_share();
        let sliding = cfg.kv_model().sliding_share();
        let share = sliding.map_or(0.0, |(_, s)| s);
        Some(KvLink {
            kind,
            gbps,
            latency: Duration::from_secs_f64(latency_us * 1e-6),
            // With pipeline stages each GPU holds its stage's layers' KV and
            // sends it at once with the others: the largest stage's share.
            // Pools of different TP: each GPU of the smaller group sends or
            // takes 1/TP of the KV heads, the larger group's GPUs a part of
            // that, so the smaller TP's share crosses each link.
            kv_bytes_per_token_per_gpu: all * (1.0 - share),
            window: sliding.map(|(w, s)| (all * s, w)),
        })
    }

    /// Bytes one GPU sends for a prompt of `tokens`.
    pub fn bytes_per_gpu(&self, tokens: u32) -> f64 {
        let windowed = self.window.map_or(0.0, |(bytes, w)| f64::from(w.within(tokens)) * bytes);
        tokens as f64 * self.kv_bytes_per_token_per_gpu + windowed
    }

    /// One transfer of a `tokens`-long prompt's KV, alone on the link.
    pub fn transfer_time(&self, tokens: u32) -> Duration {
        self.latency + Duration::from_secs_f64(self.bytes_per_gpu(tokens) * 8.0 / (self.gbps * 1e9))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Precision;

    #[test]
    fn parse_takes_p_colon_d_and_names_the_form_otherwise() {
        let pd = Disaggregation::parse(" 2:3 ").unwrap();
        assert_eq!((pd.prefill, pd.decode, pd.instances()), (2, 3, 5));
        for bad in ["2", "2:x", "-1:1", "", "1:1:1"] {
            let e = Disaggregation::parse(bad).unwrap_err();
            assert!(e.contains("P:D") && e.contains("--pd 1:1"), "{bad}: {e}");
        }
        assert!(Disaggregation::parse("0:1").unwrap().check().unwrap_err().contains("prefill"));
        // A pool's own TP, in either case, with x or ×; the other pool's is --tp.
        for (text, tps) in
            [("4xTP1:1xTP4", (Some(1), Some(4))), ("2:3xtp2", (None, Some(2))), ("2×TP8 : 1", (Some(8), None))]
        {
            let pd = Disaggregation::parse(text).unwrap();
            assert_eq!((pd.prefill_tp, pd.decode_tp), tps, "{text}");
            assert_eq!(Disaggregation::parse(&pd.spec()).unwrap(), pd, "{text}");
        }
        assert_eq!(Disaggregation::parse("4xTP1:1xTP4").unwrap().spec(), "4xTP1:1xTP4");
        for bad in ["2xTP:1", "2x4:1", "2xfoo:1", "x:1", "2:1xTP-1"] {
            assert!(Disaggregation::parse(bad).unwrap_err().contains("4xTP1:1xTP4"), "{bad}");
        }
        assert!(Disaggregation::parse("2xTP0:1").unwrap().check().unwrap_err().contains("1..=64"));
        // A pool's own EP, alone or with its TP, in either order.
        let pd = Disaggregation::parse("1xEP8:2xep16xTP2").unwrap();
        assert_eq!((pd.prefill_tp, pd.prefill_ep, pd.decode_tp, pd.decode_ep), (None, Some(8), Some(2), Some(16)));
        assert_eq!(pd.spec(), "1xEP8:2xTP2xEP16");
        assert_eq!(Disaggregation::parse(&pd.spec()).unwrap(), pd);
        for bad in ["1xEP8xEP4:1", "1xTP2xTP2:1", "1xEP:1", "1xEP8x:1"] {
            assert!(Disaggregation::parse(bad).unwrap_err().contains("1xEP8:1xEP16"), "{bad}");
        }
        assert!(Disaggregation::parse("1xEP0:1").unwrap().check().unwrap_err().contains("expert-parallel"));
        let (tp, ep, pd) = Disaggregation::parse("1xEP8:1xEP16").unwrap().canonical(1, 1);
        assert_eq!((tp, ep, pd.decode_tp, pd.decode_ep), (1, 8, None, Some(16)));
        // Kept as the engine keeps it: the prefill pool's TP is --tp, the
        // decode pool's own only where it differs.
        let canon = |text: &str, tp| {
            let (tp, _, pd) = Disaggregation::parse(text).unwrap().canonical(tp, 1);
            (tp, pd.prefill_tp, pd.decode_tp)
        };
        assert_eq!(canon("4xTP1:1xTP4", 2), (1, None, Some(4)));
        assert_eq!(canon("4xTP2:1", 4), (2, None, Some(4)));
        assert_eq!(canon("4:1xTP2", 2), (2, None, None));
        assert_eq!(canon("4xTP2:1xTP2", 1), (2, None, None));
        let mut pd = Disaggregation::parse("1:1").unwrap();
        pd.link_gbps = Some(0.0);
        assert!(pd.check().unwrap_err().contains("--kv-link-gbps"));
        pd.link_gbps = None;
        pd.link_latency_us = Some(f64::NAN);
        assert!(pd.check().unwrap_err().contains("--kv-link-latency-us"));
    }

    #[test]
    fn the_link_is_the_node_s_interconnect_or_a_nic_and_a_transfer_is_bytes_over_it() {
        // Llama-3.1-8B, BF16 KV: 2 · 32 layers · 8 KV heads · 128 · 2 bytes
        // = 131,072 bytes a token on one GPU.
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
        assert_eq!(KvLink::new(&cfg), None);
        cfg.pd = Some(Disaggregation::parse("1:1").unwrap());
        let link = KvLink::new(&cfg).unwrap();
        assert_eq!((link.kind, link.gbps), (LinkKind::Node, 450.0 * 8.0));
        assert_eq!(link.kv_bytes_per_token_per_gpu, 131_072.0);
        // 1,000 tokens: 131 MB at 450 GB/s is 291.3 µs, and 10 µs more.
        let t = link.transfer_time(1000).as_secs_f64();
        assert!((t - (10e-6 + 131_072_000.0 / 450e9)).abs() < 1e-9, "{t}");
        // Nine GPUs do not fit a node: the NIC's 400 Gb/s (50 GB/s).
        cfg.pd = Some(Disaggregation::parse("4:5").unwrap());
        let link = KvLink::new(&cfg).unwrap();
        assert_eq!((link.kind, link.gbps, link.latency), (LinkKind::Network, 400.0, Duration::from_micros(50)));
        // Given: as given; TP halves each GPU's share.
        cfg.tp = 2;
        cfg.pd = Some(Disaggregation { link_gbps: Some(100.0), link_latency_us: Some(0.0), ..cfg.pd.unwrap() });
        let link = KvLink::new(&cfg).unwrap();
        assert_eq!((link.kind, link.kv_bytes_per_token_per_gpu), (LinkKind::Given, 65_536.0));
        assert!((link.transfer_time(1000).as_secs_f64() - 65_536_000.0 * 8.0 / 100e9).abs() < 1e-9);
    }

    /// A GB200 NVL72 rack is one NVLink domain of 72 GPUs, as tensor and
    /// expert parallelism take it: pools within it move KV over NVLink
    /// (900 GB/s a direction). The link had taken a node to be 8 GPUs on
    /// every part: a prefill and a decode instance of TP 8 (16 GB200s)
    /// went over a 400 Gb/s NIC, a 32,000-token prompt of the 405B in FP8
    /// 41.4 ms, where NVLink takes 2.3. B200 boards still join 8.
    #[test]
    fn a_gb200_rack_moves_kv_over_nvlink() {
        let mut cfg = EngineConfig::from_names("llama-3.1-405b", "gb200", Precision::Fp8).unwrap();
        cfg.tp = 8;
        cfg.pd = Some(Disaggregation::parse("1:1").unwrap());
        assert_eq!(cfg.gpus(), 16);
        let link = KvLink::new(&cfg).unwrap();
        assert_eq!((link.kind, link.gbps, link.latency), (LinkKind::Node, 900.0 * 8.0, Duration::from_micros(10)));
        let t = link.transfer_time(32_000).as_secs_f64();
        assert!(t > 2.0e-3 && t < 2.6e-3, "{t}");
        // 80 GPUs leave the rack.
        cfg.pd = Some(Disaggregation::parse("5:5").unwrap());
        assert_eq!(KvLink::new(&cfg).unwrap().kind, LinkKind::Network);
        // B200s: 16 GPUs are two boards, the network's.
        let mut b200 = cfg.clone();
        b200.gpu = crate::engine::GpuSpec::lookup("b200").unwrap();
        b200.pd = Some(Disaggregation::parse("1:1").unwrap());
        let link = KvLink::new(&b200).unwrap();
        assert_eq!((link.kind, link.gbps, link.latency), (LinkKind::Network, 400.0, Duration::from_micros(50)));
        let t = link.transfer_time(32_000).as_secs_f64();
        assert!(t > 40e-3 && t < 42e-3, "{t}");
        // Blackwell Ultra: a GB300 rack joins 72 as GB200's does; B300
        // boards join 8, beyond which each GPU's ConnectX-8 carries 800 Gb/s.
        let mut gb300 = cfg.clone();
        gb300.gpu = crate::engine::GpuSpec::lookup("gb300").unwrap();
        gb300.pd = Some(Disaggregation::parse("1:1").unwrap());
        assert_eq!(KvLink::new(&gb300).unwrap().kind, LinkKind::Node);
        let mut b300 = b200.clone();
        b300.gpu = crate::engine::GpuSpec::lookup("b300").unwrap();
        let link = KvLink::new(&b300).unwrap();
        assert_eq!((link.kind, link.gbps), (LinkKind::Network, 800.0));
        // Given figures win on either.
        cfg.pd = Some(Disaggregation { link_gbps: Some(400.0), link_latency_us: Some(50.0), ..b200.pd.unwrap() });
        let link = KvLink::new(&cfg).unwrap();
        assert_eq!((link.kind, link.gbps, link.latency), (LinkKind::Given, 400.0, Duration::from_micros(50)));
    }

    /// Across nodes the KV crosses each GPU's own NIC, the one tensor and
    /// expert parallelism across nodes take: 200 Gb/s on the A100 (DGX
    /// A100's ConnectX-6) and the PCIe parts. The link had been a fixed
    /// 400 Gb/s on every part, so an A100's transfers came out in half
    /// their time.
    #[test]
    fn the_network_link_is_the_gpu_s_own_nic() {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "a100", Precision::Bf16).unwrap();
        cfg.pd = Some(Disaggregation::parse("4:5").unwrap());
        let link = KvLink::new(&cfg).unwrap();
        assert_eq!((link.kind, link.gbps), (LinkKind::Network, 200.0));
        // 1,000 tokens of 131,072 bytes at 25 GB/s: 5.24 ms, and 50 µs.
        let t = link.transfer_time(1000).as_secs_f64();
        assert!((t - (50e-6 + 131_072_000.0 / 25e9)).abs() < 1e-9, "{t}");
        // The same pools of H100s keep ConnectX-7's 400 Gb/s.
        cfg.gpu = crate::engine::GpuSpec::lookup("h100").unwrap();
        assert_eq!(KvLink::new(&cfg).unwrap().gbps, 400.0);
    }

    #[test]
    fn the_pools_count_every_gpu_and_refuse_dp_and_a_polled_router() {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
        cfg.tp = 2;
        cfg.pd = Some(Disaggregation::parse("3:5").unwrap());
        assert_eq!(cfg.gpus(), 16);
        cfg.validate().unwrap();
        cfg.dp = 2;
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("--pd 3:5 and --dp 2") && e.contains("drop --dp"), "{e}");
        cfg.dp = 1;
        // Each pool's router may be any policy, on its own counts.
        cfg.router = crate::engine::RouterPolicy::PrefixAware;
        cfg.validate().unwrap();
        cfg.router = crate::engine::RouterPolicy::PowerOfTwo;
        cfg.router_poll_s = Some(1.0);
        assert!(cfg.validate().unwrap_err().to_string().contains("drop --router-poll"));
        (cfg.router, cfg.router_poll_s) = (crate::engine::RouterPolicy::LeastLoaded, None);
        cfg.pd = Some(Disaggregation::parse("1:0").unwrap());
        assert!(cfg.validate().unwrap_err().to_string().contains("0 decode instances"));
    }

    #[test]
    fn a_sliding_window_sends_its_layers_window_alone() {
        // GPT-OSS-120B on one H200 a pool: 36 layers × 8 KV heads × 64 × 2
        // × 2 bytes = 73,728 a token, half of it in the sliding layers, which
        // send 128 tokens of a prompt of any length past it.
        let mut cfg = EngineConfig::from_names("gpt-oss-120b", "h200", Precision::Mxfp4).unwrap();
        cfg.pd = Some(Disaggregation::parse("1:1").unwrap());
        let link = KvLink::new(&cfg).unwrap();
        assert_eq!(link.kv_bytes_per_token_per_gpu, 36_864.0);
        assert_eq!(link.window.map(|(bytes, w)| (bytes, w.window, w.chunked)), Some((36_864.0, 128, false)));
        assert_eq!(link.bytes_per_gpu(100), 100.0 * 73_728.0);
        assert_eq!(link.bytes_per_gpu(10_000), 10_000.0 * 36_864.0 + 128.0 * 36_864.0);
    }

    /// Llama 4's chunked layers send the chunk's tokens from vLLM's cache,
    /// which frees the rest, and every token from TensorRT-LLM's, which
    /// keeps them.
    #[test]
    fn a_chunked_layer_sends_what_the_cache_holds() {
        let mut cfg = EngineConfig::from_names("llama-4-scout", "h200", Precision::Fp8).unwrap();
        cfg.pd = Some(Disaggregation::parse("1:1").unwrap());
        let vllm = KvLink::new(&cfg).unwrap();
        assert!(vllm.window.is_some_and(|(_, w)| w.chunked && w.window == 8192));
        cfg.scheduler = crate::engine::SchedulerPolicy::Trtllm;
        let trt = KvLink::new(&cfg).unwrap();
        assert!(trt.window.is_none());
        // Past the chunk, TensorRT-LLM's prefill sends more.
        assert_eq!(trt.bytes_per_gpu(100), vllm.bytes_per_gpu(100));
        assert!(trt.bytes_per_gpu(20_000) > 2.0 * vllm.bytes_per_gpu(20_000));
    }
}
