//! The step-time model's constants (docs/simulator.md, "Calibration"): per
//! GPU family, overlaid from a calibration file, and checked.

use super::catalog::GpuFamily;
use super::error::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The constants that turn datasheet peaks into achieved times, per GPU
/// family. Serde names carry units; a calibration file may give any subset
/// (see [`Calibration::overlay`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Calibration {
    /// Share of the tensor-core peak matrix products reach (η_c).
    pub eta_compute: f64,
    /// Share of memory bandwidth achieved reading weights (η_w).
    pub eta_weights: f64,
    /// Share of memory bandwidth achieved reading the KV cache (η_kv).
    pub eta_kv: f64,
    /// Fixed cost per layer per step (kernel launches, norms, rotary…).
    pub c_layer_us: f64,
    /// Fixed cost per step (scheduling, sampling set-up, input preparation).
    pub c_step_us: f64,
    /// Cost per sequence in the batch (sampling, detokenising, bookkeeping).
    pub c_seq_us: f64,
    /// Latency of one tensor-parallel all-reduce call.
    pub allreduce_latency_us: f64,
    /// Share of the interconnect bandwidth an all-reduce achieves.
    pub eta_link: f64,
    /// Time from a request's arrival at the server to its arrival at the
    /// scheduler (HTTP, parsing, tokenising).
    pub frontend_overhead_ms: f64,
    /// Activation memory the engine reserves per GPU under TensorRT-LLM's
    /// scheduler (vLLM's is its profile's, `vllm_sampler_bytes_per_logit`;
    /// SGLang's lies outside its memory share).
    pub activation_gib: f64,
    /// vLLM's activation reserve, per logit of its start-up profile's
    /// sampler run: the profile samples `max_num_seqs` dummy requests over
    /// the whole vocabulary (the logits in 32 bits, their sort's values and
    /// 64-bit indices, the softmaxes, the cumulative sum, the noise), and
    /// the peak it measures is that and the step's hidden states,
    /// `max_num_batched_tokens` × d × 2 bytes
    /// ([`crate::engine::EngineConfig::activation_bytes`]).
    pub vllm_sampler_bytes_per_logit: f64,
    /// Runtime memory outside PyTorch per GPU (CUDA context, NCCL, graphs).
    pub runtime_gib: f64,
    /// What SGLang finds taken on each GPU before it loads the weights (the
    /// CUDA context, the distributed groups' buffers): its memory share is
    /// of the rest (`kv_capacity`).
    pub sglang_preload_gib: f64,
    /// Relative spread (standard deviation over mean) of a step's time
    /// around the roofline's: the host, the kernels' own variation. Drawn
    /// per step from a seeded generator, so a run is still a function of its
    /// seed. 0: every step exactly the roofline's.
    pub step_time_cv: f64,
    /// Spread of the front end's time per request on top of
    /// `frontend_overhead_ms`: each request reaches the scheduler a further
    /// u × this later, u uniform on [0, 1), drawn from the request's number
    /// and the run's seed. 0: every request the same.
    pub frontend_jitter_ms: f64,
    /// The front end's own work per request (parsing, validation,
    /// tokenising, handing the request to the engine), done one request at
    /// a time: requests sent together reach the scheduler this far apart.
    /// Part of `frontend_overhead_ms` for a lone request, not added to it.
    pub frontend_serial_us: f64,
    /// The same per prompt token (tokenising).
    pub frontend_serial_us_per_token: f64,
    /// The front end's own work per output token it streams (detokenising,
    /// the event, the write), done one token at a time with its other
    /// serial work: a step's tokens reach their clients this far apart, and
    /// later once the front end falls behind the engine. 0: none.
    pub frontend_serial_us_per_output_token: f64,
    /// Share of a GPU's dynamic power range (TDP − idle) its tensor cores
    /// draw when busy the whole step at the rate η_c allows (the power
    /// model of docs/simulator.md).
    pub power_compute: f64,
    /// Share of the dynamic power range that streaming HBM at the achieved
    /// bandwidth the whole step draws.
    pub power_memory: f64,
    /// The GPUs' power with no step running, as a multiple of the catalog's
    /// idle watts (1: the catalog's). A fleet's energy counters may read
    /// more (clocks held up, a busier CUDA context) or less (another
    /// board, a power cap); the dynamic range is TDP less this idle.
    pub power_idle: f64,
    /// Share of the 16-bit rate (η_c's) that MXFP4 experts' products reach
    /// on a GPU without FP4 tensor cores, where the kernels (Triton's and
    /// Marlin's on Hopper) unpack the 4-bit weights inside the product's
    /// loop and multiply in 16 bits (W4A16). 1: as fast as 16-bit weights.
    pub eta_w4a16_moe: f64,
    /// The activations a mixture of experts' kernels carry through memory
    /// for each routed (token, expert) pair in each MoE layer, as a share
    /// of what vLLM's fused-MoE kernels (SGLang's are their fork) move: the
    /// token's hidden state read by the first product, its gate and up
    /// outputs written and read back by the activation, whose output is
    /// written and read by the second product, that product's output
    /// written and read again by the sum over the token's experts,
    /// (3·d + 6·I/TP) × 2 bytes on each GPU (I whole under expert
    /// parallelism). The experts' products are then a roofline of their
    /// own, apart from the rest of the step's. Under vLLM's and SGLang's
    /// schedulers only ([`crate::engine::EngineConfig::moe_activation_traffic`]):
    /// TensorRT-LLM's MoE kernels fuse otherwise. 0: not counted.
    pub moe_activation_traffic: f64,
    /// Share of `eta_weights` at which the products of 4-bit dense weights
    /// (`--precision fp4`: every weight but a mixture of experts' routed
    /// ones) read them, for a family whose FP4 kernels fall short of their
    /// bytes' roofline at a decode step's few rows: AITER's W4A4 products
    /// on CDNA4 take 0.79 of the time of its FP8 ones on the same shapes at
    /// 1 to 16 rows, not the 0.53 their bytes would (docs/simulator.md,
    /// "FP4 on the MI355X"). 1: read as 8- and 16-bit weights are.
    pub eta_fp4_weights: f64,
}

/// The object of a calibration file given per GPU family, where every key
/// names one (in any case); `None` for a file of constants.
fn per_family(value: &serde_json::Value) -> Option<BTreeMap<&'static str, &serde_json::Value>> {
    let object = value.as_object().filter(|o| !o.is_empty())?;
    object
        .iter()
        .map(|(k, v)| GpuFamily::ALL.iter().find(|f| f.as_str().eq_ignore_ascii_case(k)).map(|f| (f.as_str(), v)))
        .collect()
}

/// CDNA4's `eta_fp4_weights`: AITER's W4A4 products against its FP8 ones
/// at 1 to 16 rows on the MI355X ([`Calibration::for_family`]).
pub const CDNA4_FP4_WEIGHTS: f64 = 0.67;

/// Hopper's `eta_w4a16_moe` (the other families without FP4 cores run on
/// it, uncalibrated).
const ETA_W4A16_MOE: f64 = 0.34;

impl Default for Calibration {
    fn default() -> Self {
        Calibration::for_family(GpuFamily::Hopper)
    }
}

impl Calibration {
    /// The shipped constants for one GPU family. Hopper, Blackwell and
    /// CDNA3 are calibrated against public measurements (see
    /// docs/simulator.md for the residuals and why each constant moved from
    /// its first guess; Blackwell's only on FP4 throughput at saturation,
    /// CDNA3's on offline vLLM runs, their other constants Hopper's); the
    /// others start from Hopper's, a guess to be replaced when data comes.
    pub fn for_family(family: GpuFamily) -> Calibration {
        let hopper = Calibration {
            eta_compute: 0.55,
            eta_weights: 0.73,
            eta_kv: 0.70,
            c_layer_us: 32.0,
            c_step_us: 1000.0,
            c_seq_us: 4.4,
            allreduce_latency_us: 15.0,
            eta_link: 0.7,
            frontend_overhead_ms: 15.0,
            activation_gib: 5.5,
            // Set on one row of vLLM 0.11.0's memory log (Llama-3.1-8B on
            // an H100: 4.76 GiB), checked on the log's other models and two
            // other logs within 1 % (docs/simulator.md, "The KV cache's
            // size, checked").
            vllm_sampler_bytes_per_logit: 38.4,
            runtime_gib: 0.15,
            // The median of nine public SGLang logs' "Load weight begin.
            // avail mem" against their GPUs' memory (0.34 to 0.86 GiB, TP 1
            // to 4; docs/simulator.md, "SGLang's memory share").
            sglang_preload_gib: 0.42,
            step_time_cv: 0.0,
            frontend_jitter_ms: 0.0,
            frontend_serial_us: 0.0,
            frontend_serial_us_per_token: 0.0,
            frontend_serial_us_per_output_token: 0.0,
            power_compute: 1.0,
            power_memory: 0.5,
            power_idle: 1.0,
            // Set on GPUStack's three vLLM runs of GPT-OSS-20B on one H100,
            // prefill-bound (data/validation/gpustack-hopper.csv, split
            // `calibration`; docs/simulator.md, "GPT-OSS on Hopper").
            eta_w4a16_moe: ETA_W4A16_MOE,
            // vLLM's kernels' own traffic (docs/simulator.md, "A mixture
            // of experts' activations"); nothing set on data.
            moe_activation_traffic: 1.0,
            eta_fp4_weights: 1.0,
        };
        match family {
            // Fitted by hand on five FP4 saturation rows of Llama-3.3-70B on
            // one B200 (TensorRT-LLM's tables; data/validation/
            // trtllm-overview.csv, split `calibration`): FP4 matrix products
            // reach a smaller share of Blackwell's peak, and its paged
            // attention a smaller share of its bandwidth, than Hopper's do.
            GpuFamily::Blackwell => Calibration { eta_compute: 0.40, eta_kv: 0.55, ..hopper },
            // Fitted (`estimate --validate --fit`, the two constants alone)
            // on AMD's eight offline-throughput and three batch-latency rows
            // of its ROCm vLLM container of October 2025 on eight MI300X
            // (data/validation/amd-mi300x.csv, split `calibration`):
            // 0.2492 and 25.6, rounded. Checked on the same table of four
            // other releases (amd-mi300x-releases.csv) and on Oracle's 2024
            // runs (oci-mi300x.csv), both held out (docs/simulator.md,
            // "MI300X: fitted on AMD's table of October 2025"). The
            // throughput of a 70B's batch of 3,000 against a 405B's of
            // 1,500 tells the two apart: a step's matrix products reach a
            // quarter of the FP8 peak, and each sequence in it costs 25.6
            // µs beside them (Hopper's 4.4).
            GpuFamily::Cdna3 => Calibration { eta_compute: 0.25, c_seq_us: 25.6, ..hopper },
            // Uncalibrated: no table of CDNA4 set a constant. It runs on
            // CDNA3's, the same vendor's software on the family before it,
            // rather than Hopper's; chosen between the two on InferenceMAX's
            // served vLLM loops of Llama-3.3-70B on the MI355X (data/
            // validation/inferencemax-cdna4.csv: mean TTFT, TPOT and output
            // tokens/s within 18.9, 14.6 and 16.7 % at the median on these,
            // 43.2, 23.0 and 30.4 % on Hopper's), which are then no blind
            // check of the choice (docs/simulator.md, "InferenceMAX's served
            // loops").
            // ... but for its FP4 products' read of their weights, which
            // AITER's own tuned-kernel tables of September 2025 time on
            // the MI355X (ROCm/aiter `aiter/configs/`, MIT: the W4A4
            // `a4w4_blockscale_tuned_gemm.csv` at a8a3f86b, the FP8
            // `a8w8_bpreshuffle_tuned_gemm.csv` at 2f2fbb25): over the 36
            // shapes of 64M weights or more both time at 1 to 16 rows, the
            // FP8 product takes 1.26 times the W4A4 one's time at the
            // median, where their bytes (4.25 bits a weight against 8)
            // would make it 1.88 times. The FP4 weights are read at
            // 0.53125 × 1.26 = 0.67 of the share FP8's are. Set on the
            // kernels alone; InferenceMAX's rows only check it.
            GpuFamily::Cdna4 => {
                Calibration { eta_fp4_weights: CDNA4_FP4_WEIGHTS, ..Calibration::for_family(GpuFamily::Cdna3) }
            }
            GpuFamily::Hopper | GpuFamily::Ampere | GpuFamily::Ada | GpuFamily::BlackwellRtx => hopper,
        }
    }

    /// Whether the family's shipped constants were checked against public
    /// measurements (docs/simulator.md, "Calibration"): Hopper's,
    /// Blackwell's and CDNA3's. The others run on Hopper's, and `goodput
    /// estimate` says so.
    pub fn is_calibrated(family: GpuFamily) -> bool {
        matches!(family, GpuFamily::Hopper | GpuFamily::Blackwell | GpuFamily::Cdna3)
    }

    /// The family whose constants [`Calibration::for_family`] gives
    /// `family`: its own where calibrated, CDNA3's for CDNA4, Hopper's for
    /// the other uncalibrated ones.
    pub fn constants_family(family: GpuFamily) -> GpuFamily {
        match family {
            GpuFamily::Cdna4 => GpuFamily::Cdna3,
            f if Calibration::is_calibrated(f) => f,
            _ => GpuFamily::Hopper,
        }
    }

    /// These constants with some replaced by the fields of a JSON object
    /// (what a calibration file holds, parsed from JSON or TOML). An unknown
    /// field is an error that lists the known ones.
    pub fn overlay(&self, overrides: &serde_json::Value) -> Result<Calibration, Error> {
        let serde_json::Value::Object(fields) = overrides else {
            return Err(Error::InvalidCalibration("a calibration must be an object of named constants".into()));
        };
        let mut merged = serde_json::to_value(self).map_err(|e| Error::InvalidCalibration(e.to_string()))?;
        let known =
            merged.as_object_mut().ok_or_else(|| Error::InvalidCalibration("calibration is not an object".into()))?;
        for (key, value) in fields {
            if !known.contains_key(key) {
                // The per-family form (`{"hopper": {...}}`), one run's GPU family at a time here.
                if GpuFamily::ALL.iter().any(|f| f.as_str().eq_ignore_ascii_case(key)) {
                    return Err(Error::InvalidCalibration(format!(
                        "`{key}` is a GPU family: a calibration file holds either constants \
                         ({{\"eta_compute\": …}}, for every GPU) or one object of them per family \
                         ({{\"{key}\": {{\"eta_compute\": …}}}}), not both"
                    )));
                }
                let names: Vec<&str> = known.keys().map(String::as_str).collect();
                return Err(Error::InvalidCalibration(format!(
                    "unknown constant `{key}`; known: {}",
                    names.join(", ")
                )));
            }
            if !value.is_number() {
                return Err(Error::InvalidCalibration(format!("`{key}` must be a number, got {value}")));
            }
            known.insert(key.clone(), value.clone());
        }
        let out: Calibration = serde_json::from_value(merged).map_err(|e| Error::InvalidCalibration(e.to_string()))?;
        out.check()?;
        Ok(out)
    }

    /// One family's constants from a calibration file's text: the shipped
    /// ones overlaid with the file's object, or, where every key of the
    /// file names a GPU family (`{"hopper": {...}, "blackwell": {...}}`,
    /// what `estimate --fit` writes), with the object under this family's
    /// name; a family the file leaves out keeps its shipped constants.
    pub fn for_family_from_json(family: GpuFamily, text: &str) -> Result<Calibration, Error> {
        Calibration::for_family(family).overlay_json_for(family, text)
    }

    /// These constants, a GPU of `family`'s, overlaid from a calibration
    /// file's text in either form ([`for_family_from_json`](Self::for_family_from_json)).
    pub fn overlay_json_for(&self, family: GpuFamily, text: &str) -> Result<Calibration, Error> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::InvalidCalibration(format!("not JSON: {e}")))?;
        match per_family(&value) {
            Some(families) => match families.get(family.as_str()) {
                Some(overrides) => self.overlay(overrides).map_err(|e| match e {
                    Error::InvalidCalibration(m) => Error::InvalidCalibration(format!("under `{family}`: {m}")),
                    other => other,
                }),
                None => Ok(self.clone()),
            },
            None => self.overlay(&value),
        }
    }

    /// The families a calibration file's text gives constants of their
    /// own, by name (`{"cdna3": {...}}`, as `estimate --fit` writes from a
    /// user's measurements of that family): each is calibrated, by the
    /// user, where its shipped constants may be a guess. A file of
    /// constants for every GPU names none.
    pub fn named_families(text: &str) -> Vec<GpuFamily> {
        let value = serde_json::from_str::<serde_json::Value>(text).ok();
        let Some(named) = value.as_ref().and_then(per_family) else { return Vec::new() };
        GpuFamily::ALL.into_iter().filter(|f| named.contains_key(f.as_str())).collect()
    }

    /// One constant by its name in a calibration file (`eta_compute`).
    pub fn get(&self, name: &str) -> Option<f64> {
        serde_json::to_value(self).ok()?.get(name)?.as_f64()
    }

    /// [`overlay`](Self::overlay) from the text of a JSON file.
    pub fn overlay_json(&self, text: &str) -> Result<Calibration, Error> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::InvalidCalibration(format!("not JSON: {e}")))?;
        self.overlay(&value)
    }

    /// Efficiencies must lie in [0.001, 1]; times and memory must be finite,
    /// not negative, and within what any engine takes.
    pub fn check(&self) -> Result<(), Error> {
        const MIN_SHARE: f64 = 1e-3;
        let shares = [
            ("eta_compute", self.eta_compute),
            ("eta_weights", self.eta_weights),
            ("eta_kv", self.eta_kv),
            ("eta_link", self.eta_link),
            ("power_compute", self.power_compute),
            ("power_memory", self.power_memory),
            ("eta_w4a16_moe", self.eta_w4a16_moe),
            ("eta_fp4_weights", self.eta_fp4_weights),
        ];
        for (name, v) in shares {
            if !(v > 0.0 && v <= 1.0) {
                return Err(Error::InvalidCalibration(format!(
                    "{name} = {} must lie in (0, 1]: it is a share of a datasheet peak",
                    shown(v)
                )));
            }
            // 1e-300 had made every step a century long.
            if v < MIN_SHARE {
                return Err(Error::InvalidCalibration(format!(
                    "{name} = {} is below any engine's ({MIN_SHARE}, a thousandth of the datasheet's peak)",
                    shown(v)
                )));
            }
        }
        // Each amount, and the most any engine takes: a second a step, a
        // layer or a sequence; a minute of front end (a request, or a
        // token); a terabyte of memory a GPU.
        let amounts = [
            ("c_layer_us", self.c_layer_us, 1e6),
            ("c_step_us", self.c_step_us, 1e6),
            ("c_seq_us", self.c_seq_us, 1e6),
            ("allreduce_latency_us", self.allreduce_latency_us, 1e6),
            ("frontend_overhead_ms", self.frontend_overhead_ms, 6e4),
            ("frontend_jitter_ms", self.frontend_jitter_ms, 6e4),
            ("frontend_serial_us", self.frontend_serial_us, 6e7),
            ("frontend_serial_us_per_token", self.frontend_serial_us_per_token, 6e7),
            ("frontend_serial_us_per_output_token", self.frontend_serial_us_per_output_token, 6e7),
            ("activation_gib", self.activation_gib, 1024.0),
            ("vllm_sampler_bytes_per_logit", self.vllm_sampler_bytes_per_logit, 1024.0),
            ("runtime_gib", self.runtime_gib, 1024.0),
            ("sglang_preload_gib", self.sglang_preload_gib, 1024.0),
            ("moe_activation_traffic", self.moe_activation_traffic, 100.0),
            ("power_idle", self.power_idle, 10.0),
        ];
        for (name, v, _) in amounts {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::InvalidCalibration(format!("{name} = {} must be a finite number ≥ 0", shown(v))));
            }
        }
        for (name, v, most) in amounts {
            if v > most {
                return Err(Error::InvalidCalibration(format!(
                    "{name} = {} is past any engine's (at most {most})",
                    shown(v)
                )));
            }
        }
        if !(0.0..=0.5).contains(&self.step_time_cv) {
            return Err(Error::InvalidCalibration(format!(
                "step_time_cv = {} must lie in [0, 0.5]: it is a step time's relative spread",
                shown(self.step_time_cv)
            )));
        }
        Ok(())
    }

    /// Request `n`'s time from its send to the scheduler: the overhead, and
    /// its share of the jitter, drawn from `n` and `seed` alone (the same in
    /// virtual time and on the engine server's wall clock).
    pub fn frontend_delay(&self, n: u64, seed: u64) -> Duration {
        if self.frontend_jitter_ms <= 0.0 {
            return self.frontend_overhead();
        }
        let u = unit_draw(splitmix64(seed ^ n.wrapping_mul(0xd1b5_4a32_d192_ed03)));
        let extra = goodput_core::clamped_secs(self.frontend_jitter_ms * u / 1e3).min(goodput_core::HORIZON);
        (self.frontend_overhead() + extra).min(goodput_core::HORIZON)
    }

    /// The front end's serial work for a prompt of `tokens`.
    pub fn frontend_serial(&self, tokens: u64) -> Duration {
        micros(self.frontend_serial_us + self.frontend_serial_us_per_token * tokens as f64)
    }

    /// The front end's serial work for `tokens` output tokens.
    pub fn frontend_output(&self, tokens: u64) -> Duration {
        micros(self.frontend_serial_us_per_output_token * tokens as f64)
    }

    pub fn frontend_overhead(&self) -> Duration {
        // Checked finite and ≥ 0, but not bounded: clamped, not a panic.
        goodput_core::clamped_secs(self.frontend_overhead_ms / 1e3).min(goodput_core::HORIZON)
    }
}

/// The front end's serial work, one piece at a time: `work` on what reached
/// it at `at` starts when both are there (`free`: when its work before
/// ends), and keeps it busy until it ends. Returns the start. Virtual time
/// and the engine server's wall clock both queue so.
pub(crate) fn serial_start<T>(free: &mut T, at: T, work: Duration) -> T
where
    T: Copy + Ord + std::ops::Add<Duration, Output = T>,
{
    let start = (*free).max(at);
    *free = start + work;
    start
}

/// A constant in a message: as written where it is of everyday size, in
/// scientific notation where not (1e-300 had been printed as 300 digits).
fn shown(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e16).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// `us` microseconds (checked finite and ≥ 0, not bounded: clamped).
fn micros(us: f64) -> Duration {
    goodput_core::clamped_secs(us / 1e6).min(goodput_core::HORIZON)
}

/// SplitMix64's output function: a well-mixed 64-bit value from any state.
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform draw on [0, 1) from 64 random bits.
pub(crate) fn unit_draw(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AITER's tuned-kernel times on the MI355X (data/gpu/aiter-mi355x-gemm.csv):
    /// (rows, n, k, W4A4 µs, FP8 µs).
    fn aiter_mi355x() -> Vec<(u64, u64, u64, f64, f64)> {
        include_str!("../../../../data/gpu/aiter-mi355x-gemm.csv")
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                )
            })
            .collect()
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    #[test]
    fn cdna4_s_fp4_weights_share_is_aiter_s_kernels() {
        let rows = aiter_mi355x();
        assert_eq!(rows.len(), 414);
        // A decode step's rows (1 to 16), the shapes of 64M weights or more
        // (where the bytes, not the launch, set the time): the FP8 product's
        // time over the W4A4 one's.
        let decode: Vec<f64> =
            rows.iter().filter(|r| r.0 <= 16 && r.1 * r.2 >= 64_000_000).map(|r| r.4 / r.3).collect();
        assert_eq!(decode.len(), 36);
        let ratio = median(decode);
        assert!((ratio - 1.26).abs() < 0.005, "{ratio}");
        // 4.25 bits a weight against 8: the bytes alone would make it 1.88.
        let share = 4.25 / 8.0 * ratio;
        assert_eq!((share * 100.0).round() / 100.0, CDNA4_FP4_WEIGHTS);
        let c = Calibration::for_family(GpuFamily::Cdna4);
        assert_eq!(c.eta_fp4_weights, CDNA4_FP4_WEIGHTS);
        // Everything else is CDNA3's; every other family reads FP4 at η_w.
        assert_eq!(Calibration { eta_fp4_weights: 1.0, ..c }, Calibration::for_family(GpuFamily::Cdna3));
        for f in GpuFamily::ALL.into_iter().filter(|&f| f != GpuFamily::Cdna4) {
            assert_eq!(Calibration::for_family(f).eta_fp4_weights, 1.0, "{f:?}");
        }
        // Prefill's rows (4,096 and more) run at the FP4 peak, twice FP8's
        // (the catalog's MI355X: 10,066 against 5,033 TFLOPS): the FP8
        // product takes 1.8 to 2.3 times as long at the median.
        let prefill = median(rows.iter().filter(|r| r.0 >= 4096).map(|r| r.4 / r.3).collect());
        assert!((1.8..2.3).contains(&prefill), "{prefill}");
    }

    #[test]
    fn refusals_print_tiny_constants_short_and_name_the_per_family_form() {
        let base = Calibration::default();
        let err = base.overlay_json(r#"{"eta_weights": 1e-300}"#).unwrap_err().to_string();
        assert!(err.contains("eta_weights = 1e-300 is below any engine's"), "{err}");
        assert!(err.len() < 300, "{} characters: {err}", err.len());
        let err = base.overlay_json(r#"{"c_seq_us": -1e-200}"#).unwrap_err().to_string();
        assert!(err.contains("c_seq_us = -1e-200 must be"), "{err}");
        // One object a family is read per family; a family's name among
        // constants is named, with both forms.
        let err = base.overlay_json(r#"{"hopper": {"eta_kv": 0.6}}"#).unwrap_err().to_string();
        assert!(err.contains("`hopper` is a GPU family") && err.contains("one object of them per family"), "{err}");
        let mixed = r#"{"eta_compute": 0.5, "hopper": {"eta_kv": 0.6}}"#;
        let err = Calibration::for_family_from_json(GpuFamily::Hopper, mixed).unwrap_err().to_string();
        assert!(err.contains("`hopper` is a GPU family") && err.contains("not both"), "{err}");
        let err = Calibration::for_family_from_json(GpuFamily::Hopper, r#"{"Hopper": {"eta_kv": 2}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("under `hopper`: eta_kv = 2 must lie in (0, 1]"), "{err}");
        assert_eq!((shown(0.25), shown(1e15), shown(2e-5)), ("0.25".into(), "1000000000000000".into(), "2e-5".into()));
    }

    #[test]
    fn a_file_per_family_sets_each_family_and_leaves_the_others_shipped() {
        let text = r#"{"hopper": {"eta_compute": 0.42}, "BLACKWELL": {"eta_kv": 0.5, "c_step_us": 700}}"#;
        let hopper = Calibration::for_family_from_json(GpuFamily::Hopper, text).unwrap();
        assert_eq!(hopper, Calibration { eta_compute: 0.42, ..Calibration::for_family(GpuFamily::Hopper) });
        let blackwell = Calibration::for_family_from_json(GpuFamily::Blackwell, text).unwrap();
        let shipped = Calibration::for_family(GpuFamily::Blackwell);
        assert_eq!(blackwell, Calibration { eta_kv: 0.5, c_step_us: 700.0, ..shipped });
        assert_eq!(
            Calibration::for_family_from_json(GpuFamily::Ampere, text).unwrap(),
            Calibration::for_family(GpuFamily::Ampere)
        );
        // A file of constants applies to every family, over its own.
        let flat = Calibration::for_family_from_json(GpuFamily::Blackwell, r#"{"c_seq_us": 3}"#).unwrap();
        assert_eq!(flat, Calibration { c_seq_us: 3.0, ..shipped });
        assert_eq!((flat.get("c_seq_us"), flat.get("eta_kv"), flat.get("nothing")), (Some(3.0), Some(0.55), None));
        assert_eq!(Calibration::named_families(text), [GpuFamily::Hopper, GpuFamily::Blackwell]);
        assert!(Calibration::named_families(r#"{"c_seq_us": 3}"#).is_empty());
    }
}
