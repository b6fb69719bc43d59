//! How far the engine's predictions were from public measurements it was
//! not tuned on, quoted beside the predictions (`estimate`, `plan`), so
//! that a figure the engine is least sure of is not read as measured.
//!
//! The figures are [`validate`](super::validate)'s over
//! `data/validation/nim-closed-loop.csv`, run as the `validate` example runs
//! it by default: NVIDIA's NIM 1.8 tables, the held-out rows of closed
//! loops at 5 users or more short of queueing (docs/simulator.md, "Closed
//! loops under load"). A slow test recomputes them and fails when the
//! engine's model has moved them:
//! `cargo test --release -p goodput-sim --lib -- --ignored quoted_accuracy`;
//! a fast one holds docs/simulator.md's shipped row to them.

use super::catalog::{GpuFamily, GpuSpec, ModelSpec};
use goodput_core::doc::frontier::TTFT_ACCURACY_NOTE;

/// Median |error| per metric (percent) over one set of reference rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accuracy {
    /// The rows a metric has in the set.
    pub rows: usize,
    /// Mean TTFT's median |error|.
    pub ttft_mean_pct: f64,
    /// The rows whose mean TTFT the engine put below the measurement.
    pub ttft_below: usize,
    /// Mean ITL's median |error|.
    pub itl_mean_pct: f64,
    /// Output throughput's median |error|.
    pub output_tps_pct: f64,
}

/// NIM 1.8's held-out closed loops of 5 users or more, short of queueing,
/// with the users started apart (the validator's default, and `plan`'s).
pub const NIM_HELD_OUT_APART: Accuracy =
    Accuracy { rows: 19, ttft_mean_pct: 72.0, ttft_below: 19, itl_mean_pct: 9.0, output_tps_pct: 8.3 };

/// The same rows with every user's first request sent at once (`validate
/// --no-stagger`, as `estimate` and `sweep --estimate` start a closed loop
/// without `--ramp-up`).
pub const NIM_HELD_OUT_TOGETHER: Accuracy =
    Accuracy { rows: 19, ttft_mean_pct: 63.1, ttft_below: 8, itl_mean_pct: 8.0, output_tps_pct: 6.9 };

/// A public table of a family the engine was checked against: CDNA3's
/// (docs/simulator.md, "MI300X: fitted on AMD's table of October 2025").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FamilyCheck {
    /// Batch-latency rows (vLLM's latency benchmark: a batch sent together,
    /// its mean latency) and the least and most of their errors, percent
    /// (negative: the engine's latency below the measurement).
    pub latency_rows: usize,
    pub latency_error_pct: (f64, f64),
    /// Offline-throughput rows (vLLM's throughput benchmark) and the least
    /// and most of the engine's output tokens/s over the measured.
    pub throughput_rows: usize,
    pub throughput_ratio: (f64, f64),
}

/// CDNA3 against `data/validation/oci-mi300x.csv` (held out): Oracle's vLLM
/// runs of Llama-3.1-405B FP8 on eight MI300X (October 2024), a stack a
/// year older than the one the constants were fitted on.
pub const CDNA3_OCI_2024: FamilyCheck = FamilyCheck {
    latency_rows: 9,
    latency_error_pct: (-26.9, -14.5),
    throughput_rows: 2,
    throughput_ratio: (1.15, 1.25),
};

/// CDNA3 against `data/validation/amd-mi300x.csv`, the rows its constants
/// were fitted on: AMD's published runs of its ROCm vLLM container of
/// October 2025, Llama-3.1-70B and 405B FP8 on eight MI300X (throughput as
/// AMD gives it, read as output tokens: on Hopper's constants the engine's
/// ratio had been as high at 2048/2048, where counting prompt tokens too
/// would halve the output, as at 128/2048).
pub const CDNA3_AMD_2025: FamilyCheck =
    FamilyCheck { latency_rows: 3, latency_error_pct: (-6.5, 7.0), throughput_rows: 8, throughput_ratio: (0.93, 1.06) };

/// CDNA3 against `data/validation/amd-mi300x-releases.csv` (held out): the
/// same table of AMD's containers of June, July, September and November
/// 2025 (vLLM 0.9.0.1 to 0.11.1).
pub const CDNA3_AMD_RELEASES: FamilyCheck = FamilyCheck {
    latency_rows: 5,
    latency_error_pct: (-6.8, 11.4),
    throughput_rows: 32,
    throughput_ratio: (0.77, 1.10),
};

/// A group of rows of one public table and the least and most of the
/// engine's errors on them, percent (positive: the engine's throughput
/// above the measured).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowsCheck {
    pub rows: usize,
    pub error_pct: (f64, f64),
}

/// The RTX PRO 6000 (an uncalibrated family, on Hopper's constants)
/// against TensorRT-LLM's tables of it (`data/validation/
/// trtllm-rtx-pro-6000.csv`, FP4, held out): Llama-3.3-70B on one GPU and
/// as two pipeline stages, Qwen3-30B-A3B on one, and mixtures of experts
/// over 2 and 8 GPUs joined by PCIe (attention data-parallel, experts over
/// all), without and with two pipeline stages.
pub const RTX_PRO_DENSE: RowsCheck = RowsCheck { rows: 3, error_pct: (0.4, 3.5) };
pub const RTX_PRO_DENSE_PP: RowsCheck = RowsCheck { rows: 4, error_pct: (-1.3, 9.1) };
pub const RTX_PRO_MOE_ONE: RowsCheck = RowsCheck { rows: 5, error_pct: (-11.3, 14.6) };
pub const RTX_PRO_MOE_PCIE: RowsCheck = RowsCheck { rows: 8, error_pct: (-23.2, 44.0) };
pub const RTX_PRO_MOE_PP: RowsCheck = RowsCheck { rows: 7, error_pct: (-14.8, -0.8) };

/// Mixtures of experts against TensorRT-LLM's later per-GPU saturation
/// tables (`data/validation/trtllm-overview-1.2.csv`, held out: nothing
/// was set on them), beside the dense models of the same tables
/// (docs/simulator.md, "TensorRT-LLM's later per-GPU tables").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeCheck {
    /// The mixture-of-experts rows, the signed median error of their
    /// output tokens/s and its least and most, percent (positive: the
    /// engine's throughput above the measured).
    pub rows: usize,
    pub median_pct: f64,
    pub error_pct: (f64, f64),
    /// The shapes whose batches are largest (1000/1000 and 1024/1024):
    /// their rows and signed median, percent.
    pub short_rows: usize,
    pub short_median_pct: f64,
    /// The dense rows and the median of their |error|, percent.
    pub dense_rows: usize,
    pub dense_median_abs_pct: f64,
}

/// The table's figures (a slow test recomputes them).
pub const MOE_TRTLLM: MoeCheck = MoeCheck {
    rows: 45,
    median_pct: 33.3,
    error_pct: (-21.8, 142.6),
    short_rows: 18,
    short_median_pct: 50.0,
    dense_rows: 16,
    dense_median_abs_pct: 3.3,
};

/// A group of rows of a model's own table: how many, the signed median
/// error of output tokens/s and its least and most, percent (positive: the
/// engine's throughput above the measured).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupCheck {
    pub rows: usize,
    pub median_pct: f64,
    pub error_pct: (f64, f64),
}

/// A mixture of experts checked on TensorRT-LLM's published saturation
/// throughputs of it (held out: nothing was set on them), on Blackwell and
/// on Hopper: what its predictions say in place of the general
/// mixture-of-experts note.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnTable {
    /// The catalog key ([`ModelSpec::catalog_key`]) and the table's file.
    pub key: &'static str,
    pub file: &'static str,
    /// The weights' format as the table ran them.
    pub weights: &'static str,
    /// The Blackwell and the Hopper columns: what ran, and the figures.
    pub blackwell_how: &'static str,
    pub blackwell: GroupCheck,
    pub hopper_how: &'static str,
    pub hopper: GroupCheck,
    /// docs/simulator.md's section of it.
    pub section: &'static str,
}

const GPT_OSS_HOPPER: &str = "H200, H100, where TensorRT-LLM runs the MXFP4 experts in Triton kernels against 16-bit \
     activations, which the engine times at the share of the 16-bit rate set on vLLM's runs of GPT-OSS-20B on one \
     H100, `eta_w4a16_moe`";

/// GPT-OSS under vLLM on one H100 (`data/validation/gpustack-hopper.csv`):
/// the 20B's three rows, which set `eta_w4a16_moe` (calibration), and the
/// 120B's three, held out (its rows on two H100s are
/// [`GPT_OSS_120B_VLLM_H100_TP2`]). A slow test recomputes them.
pub const GPT_OSS_VLLM_H100: [(&str, GroupCheck); 2] = [
    ("gpt-oss-20b", GroupCheck { rows: 3, median_pct: 0.6, error_pct: (-2.1, 3.6) }),
    ("gpt-oss-120b", GroupCheck { rows: 3, median_pct: 3.9, error_pct: (3.3, 4.2) }),
];

/// Qwen3-235B-A22B under vLLM on H100s (the same file, held out):
/// 16-bit on eight, FP8 on four, prompt-bound; each precision's rows and
/// the least and most error.
pub const QWEN3_235B_VLLM_H100: [(&str, RowsCheck); 2] = [
    ("BF16, TP 8", RowsCheck { rows: 3, error_pct: (-3.7, 13.0) }),
    ("FP8, TP 4", RowsCheck { rows: 3, error_pct: (21.6, 39.7) }),
];

/// DeepSeek-R1-0528 under vLLM on eight H200s (the same file, held out):
/// FP8, TP 8, prompt-bound.
pub const DEEPSEEK_VLLM_H200: RowsCheck = RowsCheck { rows: 3, error_pct: (50.2, 98.8) };

/// GPT-OSS-120B under vLLM on two H100s (TP 2, `--async-scheduling`; the
/// same file, held out; its experts as vLLM pads them since session 104).
pub const GPT_OSS_120B_VLLM_H100_TP2: RowsCheck = RowsCheck { rows: 3, error_pct: (10.3, 15.0) };

/// GPT-OSS-120B at four users on one and on two H100s (vLLM;
/// `data/validation/gpustack-h100-latency.csv`, held out): mean TPOT and
/// mean TTFT.
pub const GPT_OSS_120B_FOUR_USERS: [(&str, RowsCheck); 2] = [
    ("TPOT", RowsCheck { rows: 2, error_pct: (-22.4, -5.6) }),
    ("TTFT", RowsCheck { rows: 2, error_pct: (4.7, 14.4) }),
];

/// Qwen3-8B at four users on one H100
/// (`data/validation/gpustack-h100-latency.csv`, held out; vLLM's,
/// SGLang's and TensorRT-LLM's 16-bit runs and SGLang's FP8 one): mean TPOT
/// and mean TTFT, the engine's error on each.
pub const QWEN3_8B_H100_FOUR_USERS: [(&str, RowsCheck); 2] = [
    ("TPOT", RowsCheck { rows: 4, error_pct: (-0.8, 17.5) }),
    ("TTFT", RowsCheck { rows: 4, error_pct: (-39.2, 48.4) }),
];

/// Qwen3-14B, a dense model, on one H100 (the same file, held out): vLLM's
/// 16-bit baseline and SGLang's FP8 runs, every prompt at once, the three
/// prompt-bound shapes (2,000 to 32,000 tokens). What [`served_load_note`]
/// quotes.
pub const QWEN3_14B_H100: [(&str, RowsCheck); 2] = [
    ("vLLM, BF16", RowsCheck { rows: 3, error_pct: (46.3, 56.1) }),
    ("SGLang, FP8", RowsCheck { rows: 3, error_pct: (82.7, 103.7) }),
];

/// Qwen3-14B on one A100 (`data/validation/gpustack-a100.csv`, the same
/// lab, held out; 16-bit): vLLM's baseline and TensorRT-LLM's runs at the
/// three prompt-bound shapes, and each at 128-token prompts with 4-token
/// answers. What the Ampere family's note quotes.
pub const QWEN3_14B_A100: [(&str, RowsCheck); 2] = [
    ("vLLM", RowsCheck { rows: 3, error_pct: (-3.0, 5.5) }),
    ("TensorRT-LLM", RowsCheck { rows: 3, error_pct: (-20.6, -7.7) }),
];

/// Their 128/4 rows (vLLM's, TensorRT-LLM's).
pub const QWEN3_14B_A100_SHORT: [f64; 2] = [30.7, -26.1];

/// Qwen3-32B served by TensorRT-LLM 1.2.0rc1 (`trtllm-serve`, every prompt
/// at once; the same lab, held out): Qwen's block-scaled FP8 checkpoint on
/// one H100 (`gpustack-hopper.csv`) and the 16-bit one on one A100
/// (`gpustack-a100.csv`), the three prompt-bound shapes. What
/// [`served_load_note`] quotes for TensorRT-LLM's scheduler.
pub const QWEN3_32B_TRTLLM: [(&str, RowsCheck); 2] = [
    ("H100, FP8", RowsCheck { rows: 3, error_pct: (81.6, 118.3) }),
    ("A100, BF16", RowsCheck { rows: 3, error_pct: (-22.6, -7.3) }),
];

/// Their 128/4 rows (the H100's, the A100's).
pub const QWEN3_32B_TRTLLM_SHORT: [f64; 2] = [151.1, -22.2];

/// Qwen3-235B-A22B, a mixture of experts, under vLLM 0.11.0 on A100s (the
/// same lab, `gpustack-a100.csv`, held out): 16-bit on eight, and Qwen's
/// FP8 checkpoint on four, which vLLM runs as weight-only FP8 (W8A16) on a
/// GPU without FP8 cores; the three prompt-bound shapes. What the Ampere
/// family's note quotes for a mixture of experts.
pub const QWEN3_235B_A100: [(&str, RowsCheck); 2] = [
    ("BF16, TP 8", RowsCheck { rows: 3, error_pct: (58.8, 72.8) }),
    ("FP8 as W8A16, TP 4", RowsCheck { rows: 3, error_pct: (63.7, 134.6) }),
];

/// Their 128/4 rows (16-bit, FP8).
pub const QWEN3_235B_A100_SHORT: [f64; 2] = [126.7, 163.7];

/// vLLM and SGLang served on B200s (`data/validation/served-b200.csv`,
/// held out): each row's error, in per cent, as docs/simulator.md ("vLLM
/// and SGLang on B200") gives it: vLLM's Qwen3-235B-A22B at 64 users
/// (output tokens/s, mean TTFT), SGLang's GPT-OSS-120B at batch 1 (TPOT)
/// on four B200s and on eight H100s.
pub const SERVED_B200: [(&str, f64); 4] = [
    ("vllm-q235-b200-tp4-30000-1000-out", 29.4),
    ("vllm-q235-b200-tp4-30000-1000-ttft", -41.3),
    ("sglang-oss120-b200-tp4-bs1", 44.2),
    ("sglang-oss120-h100-tp8-bs1", 11.7),
];

/// GPT-OSS-20B under vLLM on one A100 (the same file, held out): MXFP4
/// experts at `eta_w4a16_moe` on a GPU without FP4 or FP8 cores, the three
/// prompt-bound shapes (its experts padded to Marlin's tiles since session
/// 104).
pub const GPT_OSS_20B_A100: RowsCheck = RowsCheck { rows: 3, error_pct: (-45.0, 17.6) };

/// The same runs' 128-token prompts with 4-token answers, 1,000 at once
/// (vLLM's, SGLang's): mostly each request's way through client and server.
pub const QWEN3_14B_H100_SHORT: [f64; 2] = [249.4, 135.5];

/// GPT-OSS (`data/validation/trtllm-gpt-oss.csv`, MXFP4: on Blackwell the
/// experts W4A8 and an FP8 KV cache, on Hopper TensorRT-LLM's Triton MoE
/// kernels against 16-bit activations and a 16-bit cache) and
/// Llama-4-Maverick (`data/validation/trtllm-maverick.csv`, attention
/// data-parallel with the experts over all ranks: FP4 on four Blackwell
/// GPUs, FP8 on eight H200s) and Llama-4-Scout
/// (`data/validation/trtllm-llama4-1.0.csv`, an earlier release's page: FP4
/// on one Blackwell GPU, FP8 on four Hopper GPUs in the layout its columns
/// name). A slow test recomputes the figures.
pub const OWN_TABLES: [OwnTable; 4] = [
    OwnTable {
        key: "gpt-oss-120b",
        file: "trtllm-gpt-oss.csv",
        weights: "MXFP4",
        blackwell_how: "B200, GB200",
        blackwell: GroupCheck { rows: 12, median_pct: 33.4, error_pct: (15.4, 61.7) },
        hopper_how: GPT_OSS_HOPPER,
        hopper: GroupCheck { rows: 10, median_pct: 35.6, error_pct: (-12.6, 63.7) },
        section: "GPT-OSS under TensorRT-LLM",
    },
    OwnTable {
        key: "gpt-oss-20b",
        file: "trtllm-gpt-oss.csv",
        weights: "MXFP4",
        blackwell_how: "B200, GB200",
        blackwell: GroupCheck { rows: 12, median_pct: 0.0, error_pct: (-6.9, 51.2) },
        hopper_how: GPT_OSS_HOPPER,
        hopper: GroupCheck { rows: 10, median_pct: -5.2, error_pct: (-24.5, 15.7) },
        section: "GPT-OSS under TensorRT-LLM",
    },
    OwnTable {
        key: "llama-4-maverick-17b-128e",
        file: "trtllm-maverick.csv",
        weights: "FP4 on Blackwell, FP8 on Hopper",
        blackwell_how: "four B200 or GB200, attention data-parallel, the experts over all",
        blackwell: GroupCheck { rows: 12, median_pct: 4.5, error_pct: (-19.9, 25.2) },
        hopper_how: "eight H200, likewise",
        hopper: GroupCheck { rows: 5, median_pct: 27.5, error_pct: (18.2, 83.1) },
        section: "Llama-4-Maverick under TensorRT-LLM",
    },
    OwnTable {
        key: "llama-4-scout-17b-16e",
        file: "trtllm-llama4-1.0.csv",
        weights: "FP4 on Blackwell, FP8 on Hopper",
        blackwell_how: "one B200 or GB200",
        blackwell: GroupCheck { rows: 20, median_pct: 20.4, error_pct: (-0.8, 84.9) },
        hopper_how: "four H200 or H100, TP 4 as the page labels them; how it spread the experts is not given",
        hopper: GroupCheck { rows: 18, median_pct: 25.1, error_pct: (1.2, 88.6) },
        section: "Llama 4 on TensorRT-LLM 1.0's page",
    },
];

/// The model's own table, where it has one (by the catalog key its name
/// maps to, so a config.json's `openai/gpt-oss-120b` finds GPT-OSS's).
pub fn own_table(model: &ModelSpec) -> Option<&'static OwnTable> {
    let name = ModelSpec::lookup(&model.name).ok()?.name;
    OWN_TABLES.iter().find(|t| ModelSpec::lookup(t.key).is_ok_and(|m| m.name == name))
}

/// What a prediction of a model with its own table says: how far the
/// engine was from it, on Blackwell and on Hopper.
fn own_table_note(model: &ModelSpec, t: &OwnTable) -> String {
    let times = |pct: f64| 1.0 + pct / 100.0;
    let (b, h) = (t.blackwell, t.hopper);
    format!(
        "{} is a mixture of experts checked on TensorRT-LLM's published saturation throughputs of it ({}; held \
         out, nothing fitted): on Blackwell ({}) the engine's output tokens/s were {:+.0} % off the measured at the \
         median ({} rows, {:+.0} to {:+.0} %); on Hopper ({}), {:+.0} % ({} rows, {:+.0} to {:+.0} %). Expect its \
         throughput, and the cost and energy priced on it, to flatter it, up to {:.1} times what such a server \
         gives on Hopper and {:.1} on Blackwell (docs/simulator.md, \"{}\")",
        model.name,
        t.weights,
        t.blackwell_how,
        b.median_pct,
        b.rows,
        b.error_pct.0,
        b.error_pct.1,
        t.hopper_how,
        h.median_pct,
        h.rows,
        h.error_pct.0,
        h.error_pct.1,
        times(h.error_pct.1),
        times(b.error_pct.1),
        t.section,
    )
}

/// The architectures the table checked: Qwen3's mixtures of experts and
/// DeepSeek-V3's (R1 is its release).
const MOE_CHECKED: [&str; 3] = ["Qwen3-30B-A3B", "Qwen3-235B-A22B", "DeepSeek-"];

/// What a prediction of a mixture of experts should say: how far the
/// engine's throughput was from TensorRT-LLM's published saturation runs
/// of three such models, held out, beside the dense models'. `None` for a
/// dense model.
pub fn moe_note(model: &ModelSpec) -> Option<String> {
    model.moe?;
    if let Some(t) = own_table(model) {
        return Some(own_table_note(model, t));
    }
    let c = MOE_TRTLLM;
    // Qwen3-235B-A22B's vLLM rows together, both precisions.
    let qwen = QWEN3_235B_VLLM_H100.iter().fold(
        RowsCheck { rows: 0, error_pct: (f64::INFINITY, f64::NEG_INFINITY) },
        |acc, (_, r)| RowsCheck {
            rows: acc.rows + r.rows,
            error_pct: (acc.error_pct.0.min(r.error_pct.0), acc.error_pct.1.max(r.error_pct.1)),
        },
    );
    let checked = MOE_CHECKED.iter().any(|m| model.name.starts_with(m));
    let expect = if checked {
        "Expect its throughput, and the cost and energy priced on it, to flatter this model"
    } else {
        "This model was not among them (its experts are fewer or larger); until a measurement says otherwise, expect \
         its throughput, and the cost and energy priced on it, to flatter it too"
    };
    Some(format!(
        "{} is a mixture of experts: on TensorRT-LLM's published saturation throughputs of three (Qwen3-30B-A3B, \
         Qwen3-235B-A22B and DeepSeek-R1; held out, nothing fitted), the engine's output tokens/s were {:+.0} % off \
         the measured at the median ({} rows, {:+.0} to {:+.0} %), {:+.0} % where batches were largest (1,000-token \
         prompts and answers, {} rows), against {:.1} % off for dense models on the same tables ({} rows); under \
         vLLM on Hopper, prompt-bound (GPUStack's runs, held out), {:+.0} to {:+.0} % for Qwen3-235B-A22B ({} rows) \
         and {:+.0} to {:+.0} % for DeepSeek-R1-0528 ({}). {expect}, and most in the configurations that run the \
         largest batches (docs/simulator.md, \"TensorRT-LLM's later per-GPU tables\", \"GPT-OSS on Hopper\")",
        model.name,
        c.median_pct,
        c.rows,
        c.error_pct.0,
        c.error_pct.1,
        c.short_median_pct,
        c.short_rows,
        c.dense_median_abs_pct,
        c.dense_rows,
        qwen.error_pct.0,
        qwen.error_pct.1,
        qwen.rows,
        DEEPSEEK_VLLM_H200.error_pct.0,
        DEEPSEEK_VLLM_H200.error_pct.1,
        DEEPSEEK_VLLM_H200.rows,
    ))
}

/// A mixture of experts on AMD's GPUs, held out: InferenceMAX's SGLang
/// 0.5.2 runs of DeepSeek-R1-0528 in FP8 on eight MI300X, MI325X or
/// MI355X at 5 to 64 users (`data/validation/inferencemax-dsr1.csv`;
/// docs/simulator.md, "DeepSeek-R1 under SGLang"). Every TPOT below the
/// measured (a test checks it).
pub const AMD_DSR1_SGLANG: Accuracy =
    Accuracy { rows: 36, ttft_mean_pct: 50.3, ttft_below: 33, itl_mean_pct: 39.0, output_tps_pct: 65.6 };

/// What a prediction of a mixture of experts on one of AMD's GPUs should
/// say: how far the engine was from InferenceMAX's SGLang runs of
/// DeepSeek-R1 on three of them, its decode far faster than measured
/// ([`AMD_DSR1_SGLANG`]). `None` for a dense model or another vendor's GPU.
pub fn amd_moe_note(model: &ModelSpec, gpu: &GpuSpec) -> Option<String> {
    model.moe?;
    if !gpu.family.is_amd() {
        return None;
    }
    let a = AMD_DSR1_SGLANG;
    Some(format!(
        "{} is a mixture of experts on {} ({}): on InferenceMAX's SGLang runs of DeepSeek-R1-0528 in FP8 on eight \
         MI300X, MI325X or MI355X (5 to 64 users, {} runs; held out, nothing fitted) the engine's decode was faster \
         than measured on every run, its mean TPOT {:.1} % off at the median, its output tokens/s {:.1} % above and \
         its mean TTFT {:.1} % below ({} of {}). Expect such a model on this GPU to stream slower, and to cost more \
         per token, than predicted (docs/simulator.md, \"DeepSeek-R1 under SGLang\")",
        model.name,
        gpu.name,
        gpu.family.as_str(),
        a.rows,
        a.itl_mean_pct,
        a.output_tps_pct,
        a.ttft_mean_pct,
        a.ttft_below,
        a.rows,
    ))
}

/// What a prediction of an MXFP4 mixture of experts on one of AMD's GPUs
/// with FP4 cores (the MI355X) should say where `--mxfp4-activations` was
/// not given and the engine times its experts W4A8 there (SGLang's
/// scheduler: its default on Blackwell, taken for the MI355X too), while
/// vLLM's default there and InferenceMAX's vLLM runs of GPT-OSS-120B on
/// the MI355X (AITER's A16W4) multiply against 16-bit activations, which
/// `bf16` predicts (docs/simulator.md, "InferenceMAX's served loops").
/// On NVIDIA's GPUs with FP4 cores under vLLM's scheduler, whose default
/// there is 16-bit (W4A16), it says so, and what W4A8 takes
/// (`VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1`, as InferenceMAX's B200 runs
/// set it; `fp8` predicts it). `None` elsewhere: without FP4 cores (one
/// kind), where `--mxfp4-activations` was given, and on NVIDIA's GPUs
/// under SGLang's and TensorRT-LLM's schedulers (FP8, their default).
pub fn mxfp4_kernels_note(cfg: &super::EngineConfig) -> Option<String> {
    let applies = cfg.precision == super::catalog::Precision::Mxfp4
        && cfg.model.moe.is_some()
        && cfg.mxfp4_activations.is_none()
        && cfg.gpu.runs_w4a8();
    if !applies {
        return None;
    }
    if !cfg.gpu.family.is_amd() {
        return cfg.mxfp4_w4a16().then(|| {
            format!(
                "{}'s MXFP4 experts are timed against 16-bit activations on the {} (W4A16), as vLLM runs them there \
                 unless started with VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 (W4A8, MXFP4 × MXFP8, as InferenceMAX's \
                 B200 runs of GPT-OSS-120B set it), which --mxfp4-activations fp8 predicts: its prompts prefill \
                 faster so (docs/simulator.md, \"One step's time\")",
                cfg.model.name, cfg.gpu.name
            )
        });
    }
    (!cfg.mxfp4_w4a16()).then(|| {
        format!(
            "{}'s MXFP4 experts are timed against FP8 activations on the {} (W4A8, {}'s default on Blackwell's \
             FP4 cores, taken for AMD's too); vLLM's default there, and InferenceMAX's vLLM runs of GPT-OSS-120B \
             on the MI355X, multiply them against 16-bit ones (AITER's A16W4, \
             VLLM_ROCM_USE_AITER_FUSED_MOE_A16W4=1), which --mxfp4-activations bf16 predicts: 8k-token prompts \
             take over twice as long so (docs/simulator.md, \"InferenceMAX's served loops\")",
            cfg.model.name,
            cfg.gpu.name,
            cfg.scheduler.title()
        )
    })
}

/// The power model against the steps measured on an H200
/// (`data/gpu/h200-step-times.csv`: bare PyTorch steps of the catalog's
/// dense Llamas timed back to back, NVML's watts; nothing fitted), the
/// model's power while a step's kernels run beside the measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerCheck {
    /// Prefills of 512 tokens or more: how many, and the median error,
    /// percent.
    pub prefill_rows: usize,
    pub prefill_median_pct: f64,
    /// Decodes of 1 to 16 sequences (memory-bound): how many, the least
    /// and most error and the median, percent (negative: below the
    /// measured).
    pub decode_rows: usize,
    pub decode_error_pct: (f64, f64),
    pub decode_median_pct: f64,
}

/// The H200's table (a test recomputes it from the file).
pub const H200_POWER: PowerCheck = PowerCheck {
    prefill_rows: 24,
    prefill_median_pct: 1.2,
    decode_rows: 36,
    decode_error_pct: (-33.0, 1.2),
    decode_median_pct: -24.6,
};

/// The note a prediction under load on a Hopper GPU carries (none on other
/// families: the same lab's A100 runs came out within a few per cent or
/// slower, [`QWEN3_14B_A100`], [`QWEN3_32B_TRTLLM`]): how much faster than
/// served measurements the engine was there. Under vLLM's and SGLang's
/// schedulers, Qwen3-14B's runs, while at four users it was not; under
/// TensorRT-LLM's, whose offline tables set the constants, Qwen3-32B's
/// runs under `trtllm-serve` (since session 90; none had been said).
pub fn served_load_note(scheduler: crate::engine::SchedulerPolicy, gpu: &GpuSpec) -> Option<String> {
    if gpu.family != GpuFamily::Hopper {
        return None;
    }
    let engine = match scheduler {
        crate::engine::SchedulerPolicy::Vllm => "vLLM",
        crate::engine::SchedulerPolicy::Sglang => "SGLang",
        crate::engine::SchedulerPolicy::Trtllm => {
            let [(_, h100), (_, a100)] = QWEN3_32B_TRTLLM;
            return Some(format!(
                "accuracy: under load on TensorRT-LLM's scheduler on Hopper the engine was faster than served runs it \
                 was not set on: Qwen3-32B in Qwen's block-scaled FP8 on one H100 under trtllm-serve, every prompt \
                 sent at once (prompts of 2,000 to 32,000 tokens), gave output tokens/s {:+.0} to {:+.0} % off the \
                 measured, where the same lab's runs of it in 16 bits on an A100 gave {:+.0} to {:+.0} %. The \
                 constants were set on TensorRT-LLM's offline tables (trtllm-bench, per-tensor FP8); expect a served \
                 engine at load, above all on a block-scaled FP8 checkpoint, to give less throughput and later tokens \
                 than predicted (docs/simulator.md, \"GPT-OSS on Hopper\")",
                h100.error_pct.0, h100.error_pct.1, a100.error_pct.0, a100.error_pct.1,
            ));
        }
    };
    let [(_, v), (_, s)] = QWEN3_14B_H100;
    let [(_, tpot), _] = QWEN3_8B_H100_FOUR_USERS;
    Some(format!(
        "accuracy: under load on {engine}'s scheduler on Hopper the engine was faster than served runs it was not set on: \
         Qwen3-14B on one H100 with every prompt sent at once (hundreds in flight, prompts of 2,000 to 32,000 \
         tokens) gave output tokens/s {:+.0} to {:+.0} % off the measured under vLLM (16-bit) and {:+.0} to {:+.0} % \
         under SGLang (FP8), where at four users the same GPU's TPOT was within {:+.0} to {:+.0} %. Its constants were \
         set on TensorRT-LLM's tables; expect a real {engine} server at load to give less throughput and later \
         tokens than predicted (docs/simulator.md, \"GPT-OSS on Hopper\")",
        v.error_pct.0, v.error_pct.1, s.error_pct.0, s.error_pct.1, tpot.error_pct.0, tpot.error_pct.1,
    ))
}

/// The note a prediction's energy carries, where a `--calibration` file
/// set the power model's shares of some families (`calibrations`, each
/// family's constants as run): those shares, which the user's own
/// measurements gave (`estimate --validate … --fit-constants
/// power_compute,power_memory`), in place of the shipped model's check;
/// else [`energy_note`].
pub fn energy_note_on<'a>(calibrations: impl IntoIterator<Item = (GpuFamily, &'a super::Calibration)>) -> String {
    let set: Vec<String> = calibrations
        .into_iter()
        .filter_map(|(family, c)| {
            let shipped = super::Calibration::for_family(family);
            let idle = if c.power_idle != shipped.power_idle {
                format!(", power_idle {} (× the catalog's idle watts)", c.power_idle)
            } else {
                String::new()
            };
            let moved =
                c.power_compute != shipped.power_compute || c.power_memory != shipped.power_memory || !idle.is_empty();
            moved.then(|| format!("{family}: power_compute {}, power_memory {}{idle}", c.power_compute, c.power_memory))
        })
        .collect();
    if set.is_empty() {
        return energy_note();
    }
    let shipped = super::Calibration::default();
    format!(
        "energy: J/token runs on the power model's shares --calibration gives ({}), fitted to or set from your own \
         measurements, in place of the shipped {} and {}, which an H200's measured steps put at {:+.0} % (prefill) \
         and {:+.0} % (decode) at the median (docs/simulator.md, \"Power and energy\")",
        set.join("; "),
        shipped.power_compute,
        shipped.power_memory,
        H200_POWER.prefill_median_pct,
        H200_POWER.decode_median_pct,
    )
}

/// The note a prediction's energy carries: how far the power model was
/// from a GPU's measured steps, and which way to read joules per token.
pub fn energy_note() -> String {
    let c = H200_POWER;
    format!(
        "energy: the power model was checked against an H200's measured steps (bare PyTorch kernels back to back, \
         nothing fitted): prefill {:+.0} % at the median ({} steps, the GPU at its 700 W cap); decode of 1 to 16 \
         sequences {:+.0} to {:+.0} %, {:+.0} % at the median ({} steps), streaming memory drawing more than the \
         model's half of the dynamic range. Read J/token as a lower bound for GPUs kept busy; a whole engine's GPU, \
         waiting between steps, draws less (docs/simulator.md, \"Power and energy\")",
        c.prefill_median_pct,
        c.prefill_rows,
        c.decode_error_pct.0,
        c.decode_error_pct.1,
        c.decode_median_pct,
        c.decode_rows,
    )
}

/// What a prediction on `gpu` should say when its family is uncalibrated
/// (none for Hopper, Blackwell and CDNA3): it runs on another family's
/// constants, and, where public tables checked it, how far they found it.
pub fn uncalibrated_note(gpu: &GpuSpec) -> Option<String> {
    if super::Calibration::is_calibrated(gpu.family) {
        return None;
    }
    Some(family_note(&gpu.name, gpu.family))
}

/// What a prediction on `gpu` should say of its family's constants, if
/// anything: [`uncalibrated_note`], or else [`family_limit_note`].
pub fn gpu_note(gpu: &GpuSpec) -> Option<String> {
    uncalibrated_note(gpu).or_else(|| family_limit_note(gpu))
}

/// What a prediction on `gpu` should say of a calibrated family whose
/// constants were checked on part of what the engine predicts: CDNA3's,
/// fitted on offline runs, whose throughput at large batches is checked and
/// whose prefill is not (docs/simulator.md, "MI300X: fitted on AMD's table
/// of October 2025"). `None` for the others.
pub fn family_limit_note(gpu: &GpuSpec) -> Option<String> {
    if gpu.family == GpuFamily::Blackwell {
        let b = BLACKWELL_INFERENCEMAX;
        let [(t1, e1), (t2, e2), (t4, e4), (t8, e8)] = BLACKWELL_TTFT_BY_TP;
        return Some(format!(
            "{} ({}) runs on constants fitted on TensorRT-LLM's FP4 saturation tables of one B200. Held out, on \
             InferenceMAX's served closed loops of Llama-3.3-70B under vLLM on one to eight B200 (FP8 and FP4, 5 to \
             64 users, {} rows a metric, scheduled a step ahead as those servers were, the default) its TPOT \
             and output tokens/s came within {:.1} and {:.1} % at the median, but its mean TTFT {:.0} % low, the more \
             the higher the TP: {:+.0} % at TP {t1}, {:+.0} % at TP {t2}, {:+.0} % at TP {t4} and {:+.0} % at TP \
             {t8}, as TensorRT-LLM's loops of the same model are. A TTFT limit met here with four GPUs or more to a \
             replica can be missed: measure it (docs/simulator.md, \"InferenceMAX's served loops\")",
            gpu.name,
            gpu.family.as_str(),
            b.rows,
            b.itl_mean_pct,
            b.output_tps_pct,
            b.ttft_mean_pct,
            e1,
            e2,
            e4,
            e8,
        ));
    }
    if gpu.family != GpuFamily::Cdna3 {
        return None;
    }
    let (held, served) = (CDNA3_AMD_RELEASES, CDNA3_INFERENCEMAX);
    Some(format!(
        "{} ({}) runs on constants fitted on AMD's offline vLLM runs of eight MI300X (FP8, October 2025). Held out, \
         its throughput at large batches came within {:.2} to {:.2} times the measured on four other releases ({} \
         rows), and on InferenceMAX's served closed loops of Llama-3.3-70B under vLLM (FP8, one to eight MI300X or \
         MI325X, 5 to 64 users, {} rows a metric, scheduled a step ahead as those servers were, \
         the default) its mean TTFT, TPOT and output tokens/s came within {:.1}, {:.1} \
         and {:.1} % at the median, its TTFT below the measured on {} and above on {}. Other engines and models on \
         it are unchecked but for DeepSeek-R1 under SGLang (a mixture of experts' prediction quotes it), and \
         two single prefills of 2024 stacks came out {:+.0} % (a 405B's \
         10,000-token prompt) and {:+.0} % (an 8B's 32 short ones) (docs/simulator.md, \"MI300X: fitted on AMD's \
         table of October 2025\")",
        gpu.name,
        gpu.family.as_str(),
        held.throughput_ratio.0,
        held.throughput_ratio.1,
        held.throughput_rows,
        served.rows,
        served.ttft_mean_pct,
        served.itl_mean_pct,
        served.output_tps_pct,
        served.ttft_below,
        served.rows - served.ttft_below,
        CDNA3_PREFILL_405B_PCT,
        CDNA3_PREFILL_8B_PCT,
    ))
}

/// CDNA3 under load, held out: InferenceMAX's served closed loops of
/// Llama-3.3-70B in FP8 under vLLM 0.10.1 on one to eight MI300X and
/// MI325X, 1,024/1,024, 1,024/8,192 and 8,192/1,024 tokens, 5 users or more
/// (`data/validation/inferencemax-cdna3.csv`; docs/simulator.md, "MI300X:
/// fitted on AMD's table of October 2025"). On Hopper's constants the same
/// rows read 47.1, 21.9 and 28.6 %.
pub const CDNA3_INFERENCEMAX: Accuracy =
    Accuracy { rows: 96, ttft_mean_pct: 14.7, ttft_below: 58, itl_mean_pct: 9.8, output_tps_pct: 10.6 };

/// Hopper under load, held out: InferenceMAX's served closed loops of
/// Llama-3.3-70B in FP8 under vLLM 0.10.2 on one to eight H100s and H200s,
/// the same shapes and loads (`data/validation/inferencemax-hopper.csv`;
/// docs/simulator.md, "InferenceMAX's served loops").
pub const HOPPER_INFERENCEMAX: Accuracy =
    Accuracy { rows: 84, ttft_mean_pct: 6.6, ttft_below: 59, itl_mean_pct: 8.5, output_tps_pct: 8.6 };

/// Blackwell under load, held out: InferenceMAX's served closed loops of
/// Llama-3.3-70B in FP8 and FP4 under vLLM 0.10.2 on one to eight B200s,
/// a step ahead as those servers ran (`data/validation/
/// inferencemax-blackwell.csv`; docs/simulator.md, "InferenceMAX's served
/// loops"), 5 users or more.
pub const BLACKWELL_INFERENCEMAX: Accuracy =
    Accuracy { rows: 96, ttft_mean_pct: 26.2, ttft_below: 84, itl_mean_pct: 6.9, output_tps_pct: 6.9 };

/// The same rows' mean TTFT by TP: the signed median error, percent, over
/// both precisions (24 rows each). The miss grows with TP.
pub const BLACKWELL_TTFT_BY_TP: [(u32, f64); 4] = [(1, -2.1), (2, -13.6), (4, -34.9), (8, -47.7)];

/// CDNA4 (the MI355X, on CDNA3's constants) under load: InferenceMAX's
/// served closed loops of Llama-3.3-70B in FP8 and FP4 under vLLM 0.10.1
/// on one to eight MI355X (`data/validation/inferencemax-cdna4.csv`), 5
/// users or more. CDNA3's constants were chosen for the family over
/// Hopper's (43.2, 23.0 and 30.4 % on these rows) on them: a choice
/// between two, not a fit, and no blind check of it.
pub const CDNA4_INFERENCEMAX: Accuracy =
    Accuracy { rows: 96, ttft_mean_pct: 18.0, ttft_below: 59, itl_mean_pct: 11.8, output_tps_pct: 13.3 };

/// The engine's mean TTFT against two single public MI300X prefills of
/// 2024 stacks, percent (docs/simulator.md, "MI300X: fitted on AMD's table
/// of October 2025"): dstack's Llama-3.1-405B in 16 bits on eight under
/// TGI, one prompt of 10,000 tokens (3,799 ms measured), and an SGLang
/// `bench_latency` of Llama-3-8B in 16 bits on one, 32 prompts of 256
/// tokens (250.7 ms).
pub const CDNA3_PREFILL_405B_PCT: f64 = -2.0;
pub const CDNA3_PREFILL_8B_PCT: f64 = 48.0;

fn family_note(gpu: &str, family: GpuFamily) -> String {
    match family {
        GpuFamily::Cdna4 => {
            let c = CDNA4_INFERENCEMAX;
            let (cdna3, hopper) =
                (super::Calibration::for_family(GpuFamily::Cdna3), super::Calibration::for_family(GpuFamily::Hopper));
            format!(
                "{gpu} ({}) is uncalibrated: it runs on CDNA3's constants (the MI300X's, fitted on AMD's own vLLM \
                 tables: matrix products at {:.2} of the peak, {} µs a sequence a step, where Hopper's are {:.2} and \
                 {}), which no table of this family set, but for the share of their bandwidth its FP4 products read \
                 their weights at, {:.2} of the others', from AITER's own timings of its kernels on the MI355X. On \
                 InferenceMAX's served vLLM loops of Llama-3.3-70B on the MI355X (FP8 and FP4, 5 to 64 users, {} \
                 rows a metric, scheduled a step ahead as those servers were, the default), on which CDNA3's were \
                 chosen over Hopper's, its mean TTFT, TPOT and output tokens/s came within {:.1}, {:.1} and {:.1} % at the median, its \
                 throughput above the measured: expect it, and the cost and energy priced on it, to flatter this GPU, \
                 and measure it before choosing it (docs/simulator.md, \"Not calibrated (yet)\")",
                family.as_str(),
                cdna3.eta_compute,
                cdna3.c_seq_us,
                hopper.eta_compute,
                hopper.c_seq_us,
                super::Calibration::for_family(GpuFamily::Cdna4).eta_fp4_weights,
                c.rows,
                c.ttft_mean_pct,
                c.itl_mean_pct,
                c.output_tps_pct,
            )
        }
        GpuFamily::BlackwellRtx => {
            let range = |c: RowsCheck| format!("{:+.0} to {:+.0} %", c.error_pct.0, c.error_pct.1);
            format!(
                "{gpu} ({}) is uncalibrated: it runs on Hopper's constants, not fitted to this family, and its FP8 and \
                 16-bit peaks are its data sheet's FP4 figure halved, not printed there. On TensorRT-LLM's published \
                 saturation throughputs of it (FP4, held out), the engine's output tokens/s were {} off the measured \
                 for Llama-3.3-70B on one GPU ({} rows) and {} as two pipeline stages ({}), {} for Qwen3-30B-A3B on one \
                 ({}), and for mixtures of experts over GPUs joined by PCIe {} with attention data-parallel over 2 and \
                 8 ({}) and {} with two pipeline stages of it ({}); its FP8 and 16-bit figures are unchecked \
                 (docs/simulator.md, \"Not calibrated (yet)\")",
                family.as_str(),
                range(RTX_PRO_DENSE),
                RTX_PRO_DENSE.rows,
                range(RTX_PRO_DENSE_PP),
                RTX_PRO_DENSE_PP.rows,
                range(RTX_PRO_MOE_ONE),
                RTX_PRO_MOE_ONE.rows,
                range(RTX_PRO_MOE_PCIE),
                RTX_PRO_MOE_PCIE.rows,
                range(RTX_PRO_MOE_PP),
                RTX_PRO_MOE_PP.rows,
            )
        }
        GpuFamily::Ampere => {
            let [(_, v), (_, t)] = QWEN3_14B_A100;
            let [_, (_, t32)] = QWEN3_32B_TRTLLM;
            let [(_, moe16), (_, moe8)] = QWEN3_235B_A100;
            format!(
                "{gpu} ({}) is uncalibrated: it runs on Hopper's constants, not fitted to this family. On one lab's \
                 served runs of a dense model on one A100 (Qwen3-14B, 16-bit, every prompt at once, held out), the \
                 engine's output tokens/s were {:+.0} to {:+.0} % off the measured under vLLM and {:+.0} to {:+.0} % \
                 under TensorRT-LLM at prompts of 2,000 to 32,000 tokens ({} rows each), and Qwen3-32B's under \
                 TensorRT-LLM {:+.0} to {:+.0} %; a mixture of experts ran slower than predicted: Qwen3-235B-A22B \
                 under vLLM {:+.0} to {:+.0} % in 16 bits on eight and {:+.0} to {:+.0} % in FP8 (as W8A16) on four. \
                 Nothing else checks it (docs/simulator.md, \"Not calibrated (yet)\")",
                family.as_str(),
                v.error_pct.0,
                v.error_pct.1,
                t.error_pct.0,
                t.error_pct.1,
                v.rows,
                t32.error_pct.0,
                t32.error_pct.1,
                moe16.error_pct.0,
                moe16.error_pct.1,
                moe8.error_pct.0,
                moe8.error_pct.1,
            )
        }
        _ => format!(
            "{gpu} ({}) is uncalibrated: it runs on Hopper's constants, which no public measurement of this family \
             has checked (docs/simulator.md, \"Not calibrated (yet)\"); expect larger errors",
            family.as_str()
        ),
    }
}

/// How a prediction's requests started, to say which check applies to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// A closed loop whose users joined over time (`plan`, `--ramp-up`).
    Apart,
    /// A closed loop whose users all sent at once.
    Together,
    /// Requests sent on a schedule (`--rate`, `--trace`): neither.
    Schedule,
}

impl Accuracy {
    /// Where the engine's mean TTFT lay against the measurements.
    fn where_ttft(&self) -> String {
        let above = self.rows - self.ttft_below;
        if self.ttft_below == self.rows {
            format!("below every one, {:.0} % low at the median", self.ttft_mean_pct)
        } else if above == self.rows {
            format!("above every one, {:.0} % high at the median", self.ttft_mean_pct)
        } else {
            format!("{:.0} % off at the median, above {above} and below {}", self.ttft_mean_pct, self.ttft_below)
        }
    }
}

/// The note a prediction under load carries: how far the engine's TTFT was
/// from public measurements, for each way users can start, which one this
/// prediction's requests started by, and what to do about it.
pub fn ttft_note(start: Start) -> String {
    let (apart, together) = (NIM_HELD_OUT_APART, NIM_HELD_OUT_TOGETHER);
    let (hopper, cdna3) = (HOPPER_INFERENCEMAX, CDNA3_INFERENCEMAX);
    let mark = |s: Start| if s == start { " (as here)" } else { "" };
    let schedule = if start == Start::Schedule { " This run sent on a schedule, which is neither." } else { "" };
    format!(
        "{TTFT_ACCURACY_NOTE} is the engine's least certain figure. Checked against NVIDIA's published NIM \
         measurements it was not calibrated on ({} closed loops of 5 users or more), its mean TTFT with the users \
         started apart{} was {}; with them sent together{}, {}.{schedule} ITL and output throughput were within \
         {:.1} % and {:.1} % (apart), {:.1} % and {:.1} % (together). On InferenceMAX's served vLLM loops of \
         Llama-3.3-70B, whose conditions are published (held out, users sent together, the engine scheduling a \
         step ahead as those servers did, the default), it was within {:.1} % at \
         the median on Hopper ({} loops, below on {}) and {:.1} % on the MI300X and MI325X ({}), ITL and \
         throughput within {:.1} % and {:.1} %, {:.1} % and {:.1} %. A TTFT limit met here can be missed on a \
         real server: measure the configuration you choose (bench or sweep) before relying on its TTFT \
         (docs/simulator.md, \"Closed loops under load\")",
        apart.rows,
        mark(Start::Apart),
        apart.where_ttft(),
        mark(Start::Together),
        together.where_ttft(),
        apart.itl_mean_pct,
        apart.output_tps_pct,
        together.itl_mean_pct,
        together.output_tps_pct,
        hopper.ttft_mean_pct,
        hopper.rows,
        hopper.ttft_below,
        cdna3.ttft_mean_pct,
        cdna3.rows,
        hopper.itl_mean_pct,
        hopper.output_tps_pct,
        cdna3.itl_mean_pct,
        cdna3.output_tps_pct,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::validate::{
        parse_csv, validate, Metric, ReferenceEngine, ReferenceLoad, ReferenceRow, Split, ValidationOptions,
    };

    #[test]
    fn blackwell_is_said_with_its_served_ttft_by_tp() {
        let spec = |n: &str| GpuSpec::lookup(n).unwrap();
        let b200 = family_limit_note(&spec("b200")).unwrap();
        assert!(
            b200.starts_with("B200 (blackwell) runs on constants fitted on TensorRT-LLM's FP4 saturation tables")
                && b200.contains("came within 6.9 and 6.9 % at the median, but its mean TTFT 26 % low")
                && b200.contains("-2 % at TP 1, -14 % at TP 2, -35 % at TP 4 and -48 % at TP 8"),
            "{b200}"
        );
        // Calibrated: said, not marked uncalibrated; the Hopper parts say nothing.
        assert!(uncalibrated_note(&spec("b200")).is_none() && gpu_note(&spec("b200")) == Some(b200));
        assert!(family_limit_note(&spec("h100")).is_none());
    }

    #[test]
    fn the_note_quotes_the_figures_and_marks_the_start_that_applies() {
        let apart = ttft_note(Start::Apart);
        assert!(
            apart.contains("19 closed loops")
                && apart.contains("started apart (as here) was below every one, 72 % low")
        );
        assert!(apart.contains("sent together, 63 % off at the median, above 11 and below 8."), "{apart}");
        assert!(apart.contains("within 9.0 % and 8.3 % (apart), 8.0 % and 6.9 % (together)"), "{apart}");
        assert!(
            apart.contains(
                "it was within 6.6 % at the median on Hopper (84 loops, below on 59) and 14.7 % on the MI300X and \
                 MI325X (96), ITL and throughput within 8.5 % and 8.6 %, 9.8 % and 10.6 %."
            ),
            "{apart}"
        );
        let together = ttft_note(Start::Together);
        assert!(together.contains("apart was below") && together.contains("together (as here), 63 %"), "{together}");
        let schedule = ttft_note(Start::Schedule);
        assert!(!schedule.contains("(as here)") && schedule.contains("on a schedule, which is neither"), "{schedule}");
        let high = Accuracy { ttft_below: 0, ..NIM_HELD_OUT_TOGETHER };
        assert_eq!(high.where_ttft(), "above every one, 63 % high at the median");
    }

    #[test]
    fn an_uncalibrated_family_is_said_with_the_checks_it_has() {
        let spec = |n: &str| GpuSpec::lookup(n).unwrap();
        assert!(uncalibrated_note(&spec("h100")).is_none() && uncalibrated_note(&spec("b200")).is_none());
        // CDNA3 has constants of its own, fitted on AMD's MI300X tables; the
        // MI325X runs on them too.
        assert!(uncalibrated_note(&spec("mi300x")).is_none() && uncalibrated_note(&spec("mi325x")).is_none());
        let limit = family_limit_note(&spec("mi325x")).unwrap();
        assert!(
            limit.starts_with("MI325X (cdna3) runs on constants fitted on AMD's offline vLLM runs of eight MI300X")
                && limit.contains("within 0.77 to 1.10 times the measured on four other releases (32 rows)")
                && limit.contains(
                    "(FP8, one to eight MI300X or MI325X, 5 to 64 users, 96 rows a metric, scheduled a step ahead as \
                     those servers were, the default)"
                )
                && limit
                    .contains("its mean TTFT, TPOT and output tokens/s came within 14.7, 9.8 and 10.6 % at the median")
                && limit.contains("its TTFT below the measured on 58 and above on 38")
                && limit.contains("came out -2 % (a 405B's 10,000-token prompt) and +48 % (an 8B's 32 short ones)"),
            "{limit}"
        );
        // Blackwell's is its own (below); the others have none.
        assert!(["h100", "a100", "mi355x"].iter().all(|g| family_limit_note(&spec(g)).is_none()));
        let ampere = uncalibrated_note(&spec("a100")).unwrap();
        assert!(
            ampere.starts_with("A100 80GB (ampere) is uncalibrated")
                && ampere.contains("-3 to +6 % off the measured under vLLM and -21 to -8 % under TensorRT-LLM")
                && ampere.contains("(3 rows each), and Qwen3-32B's under TensorRT-LLM -23 to -7 %")
                && ampere.contains("under vLLM +59 to +73 % in 16 bits on eight and +64 to +135 % in FP8")
                && !ampere.contains("MI300X"),
            "{ampere}"
        );
        // A family nothing checked says so.
        let ada = uncalibrated_note(&spec("l40s")).unwrap();
        assert!(ada.contains("which no public measurement of this family has checked"), "{ada}");
        // Blackwell Ultra runs on Blackwell's constants; CDNA4 is said as
        // uncalibrated, on CDNA3's constants, with the served loops that
        // chose them.
        assert!(uncalibrated_note(&spec("b300")).is_none() && uncalibrated_note(&spec("gb300")).is_none());
        let mi355x = uncalibrated_note(&spec("mi355x")).unwrap();
        assert!(
            mi355x.starts_with("MI355X (cdna4) is uncalibrated: it runs on CDNA3's constants")
                && mi355x.contains(
                    "matrix products at 0.25 of the peak, 25.6 µs a sequence a step, where Hopper's are 0.55 and 4.4"
                )
                && mi355x.contains("(FP8 and FP4, 5 to 64 users, 96 rows a metric, scheduled a step ahead")
                && mi355x.contains("came within 18.0, 11.8 and 13.3 % at the median")
                && mi355x.contains("read their weights at, 0.67 of the others', from AITER's own timings"),
            "{mi355x}"
        );
    }

    #[test]
    fn the_rtx_pro_6000_is_said_with_its_tables_figures() {
        let note = uncalibrated_note(&GpuSpec::lookup("rtx-pro-6000").unwrap()).unwrap();
        assert!(
            note.starts_with("RTX PRO 6000 (blackwell-rtx) is uncalibrated: it runs on Hopper's constants"),
            "{note}"
        );
        assert!(note.contains("its data sheet's FP4 figure halved"), "{note}");
        assert!(note.contains("+0 to +4 % off the measured for Llama-3.3-70B on one GPU (3 rows)"), "{note}");
        assert!(note.contains("and -1 to +9 % as two pipeline stages (4)"), "{note}");
        assert!(note.contains("-11 to +15 % for Qwen3-30B-A3B on one (5)"), "{note}");
        assert!(note.contains("-23 to +44 % with attention data-parallel over 2 and 8 (8)"), "{note}");
        assert!(note.contains("-15 to -1 % with two pipeline stages of it (7)"), "{note}");
        // docs/simulator.md's table gives the same figures.
        let doc = simulator_doc();
        for (what, c) in [
            ("Llama-3.3-70B, one GPU", RTX_PRO_DENSE),
            ("Llama-3.3-70B, two pipeline stages on two GPUs", RTX_PRO_DENSE_PP),
            ("Qwen3-30B-A3B, one GPU", RTX_PRO_MOE_ONE),
            ("mixtures of experts, attention data-parallel over 2 and 8 GPUs (PCIe)", RTX_PRO_MOE_PCIE),
            ("mixtures of experts, two pipeline stages of attention data-parallel over 2 (4 GPUs)", RTX_PRO_MOE_PP),
        ] {
            let range = format!("{:+.1} to {:+.1} %", c.error_pct.0, c.error_pct.1).replace("-", "−");
            let line = format!("| {what} ({}) | {range} |", c.rows);
            assert!(doc.contains(&line), "docs/simulator.md has no line {line}");
        }
    }

    /// The rows of `errors` (percent) and their least and most, to a tenth.
    fn rows_check(errors: impl IntoIterator<Item = f64>) -> RowsCheck {
        let mut v: Vec<f64> = errors.into_iter().collect();
        v.sort_by(f64::total_cmp);
        let round = |x: f64| (x * 10.0).round() / 10.0;
        RowsCheck { rows: v.len(), error_pct: (round(v[0]), round(v[v.len() - 1])) }
    }

    /// The rows of `errors` (relative), their median and their least and
    /// most, percent to a tenth.
    fn group_check(errors: impl IntoIterator<Item = f64>) -> GroupCheck {
        let mut v: Vec<f64> = errors.into_iter().collect();
        v.sort_by(f64::total_cmp);
        let pct = |x: f64| (x * 1000.0).round() / 10.0;
        GroupCheck {
            rows: v.len(),
            median_pct: pct(goodput_core::percentile(&v, 50.0).unwrap()),
            error_pct: (pct(v[0]), pct(v[v.len() - 1])),
        }
    }

    /// The RTX PRO 6000's figures recomputed from its table (seconds in
    /// release).
    #[test]
    #[ignore]
    fn quoted_accuracy_of_the_rtx_pro_6000_table_is_the_validators() {
        let rows = parse_csv(include_str!("../../../../data/validation/trtllm-rtx-pro-6000.csv")).unwrap();
        let report = validate(&rows, &ValidationOptions::default()).unwrap();
        let group = |keep: &dyn Fn(&crate::engine::validate::ReferenceRow) -> bool| {
            rows_check(report.predictions.iter().filter(|p| keep(&p.row)).map(|p| p.rel_error * 100.0))
        };
        let moe = |r: &crate::engine::validate::ReferenceRow| ModelSpec::lookup(&r.model).unwrap().moe.is_some();
        assert_eq!(group(&|r| !moe(r) && r.pp == 1), RTX_PRO_DENSE, "quote the new figures");
        assert_eq!(group(&|r| !moe(r) && r.pp > 1), RTX_PRO_DENSE_PP, "quote the new figures");
        assert_eq!(group(&|r| moe(r) && r.gpus == 1), RTX_PRO_MOE_ONE, "quote the new figures");
        assert_eq!(group(&|r| moe(r) && r.gpus > 1 && r.pp == 1), RTX_PRO_MOE_PCIE, "quote the new figures");
        assert_eq!(group(&|r| moe(r) && r.pp > 1), RTX_PRO_MOE_PP, "quote the new figures");
        assert_eq!(report.predictions.len(), 27);
    }

    #[test]
    fn the_energy_note_quotes_the_measured_h200_table() {
        use crate::engine::step_table::{compare, parse_step_table, Phase};
        let rows = parse_step_table(include_str!("../../../../data/gpu/h200-step-times.csv")).unwrap();
        let c = compare(&rows).unwrap();
        let dense = |x: &&crate::engine::step_table::StepComparison| x.row.model.starts_with("llama-");
        let errors = |f: &dyn Fn(&crate::engine::step_table::StepComparison) -> bool| {
            let mut v: Vec<f64> =
                c.iter().filter(dense).filter(|x| f(x)).map(|x| x.power_error().unwrap() * 100.0).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let median = |v: &[f64]| goodput_core::percentile(v, 50.0).unwrap();
        let prefill = errors(&|x| x.row.phase == Phase::Prefill && x.row.batch * x.row.tokens >= 512);
        let decode = errors(&|x| x.row.phase == Phase::Decode && x.row.batch <= 16);
        let got = PowerCheck {
            prefill_rows: prefill.len(),
            prefill_median_pct: (median(&prefill) * 10.0).round() / 10.0,
            decode_rows: decode.len(),
            decode_error_pct: ((decode[0] * 10.0).round() / 10.0, (decode[decode.len() - 1] * 10.0).round() / 10.0),
            decode_median_pct: (median(&decode) * 10.0).round() / 10.0,
        };
        assert_eq!(got, H200_POWER, "the power model or the table moved: quote the new figures");
        let note = energy_note();
        assert!(note.contains("prefill +1 % at the median (24 steps"), "{note}");
        assert!(note.contains("sequences -33 to +1 %, -25 % at the median (36 steps)"), "{note}");
        // Shares a calibration file set are said in its place; the shipped
        // ones, or a file that leaves them, give the same note.
        let hopper = super::super::Calibration::for_family(GpuFamily::Hopper);
        assert_eq!(energy_note_on([(GpuFamily::Hopper, &hopper)]), note);
        let fitted = super::super::Calibration { power_memory: 0.9, ..hopper };
        let on = energy_note_on([(GpuFamily::Hopper, &fitted)]);
        assert!(on.contains("(hopper: power_compute 1, power_memory 0.9), fitted to or set from"), "{on}");
        assert!(on.contains("in place of the shipped 1 and 0.5"), "{on}");
    }

    /// docs/simulator.md with its whitespace runs as single spaces: the
    /// prose wraps where it likes.
    fn simulator_doc() -> String {
        include_str!("../../../../docs/simulator.md").split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The line docs/simulator.md gives for a check.
    fn check_line(c: FamilyCheck) -> String {
        format!(
            "batch latency {:+.1} to {:+.1} % ({} rows), offline throughput {:.2} to {:.2} times ({} rows)",
            c.latency_error_pct.0,
            c.latency_error_pct.1,
            c.latency_rows,
            c.throughput_ratio.0,
            c.throughput_ratio.1,
            c.throughput_rows
        )
    }

    /// docs/simulator.md's MI300X section gives the figures the note quotes.
    #[test]
    fn docs_give_the_quoted_mi300x_figures() {
        let doc = simulator_doc();
        for c in [CDNA3_OCI_2024, CDNA3_AMD_2025, CDNA3_AMD_RELEASES] {
            let line = check_line(c);
            assert!(doc.contains(&line), "docs/simulator.md has no line {line}");
        }
        // The two prefills the note quotes, as the section gives them.
        let minus = |s: String| s.replace('-', "\u{2212}");
        for said in [
            format!("gives 3,725 ({} %;", minus(format!("{CDNA3_PREFILL_405B_PCT:+.1}"))),
            format!("is 371 ms ({} %;", minus(format!("{CDNA3_PREFILL_8B_PCT:+.0}"))),
        ] {
            assert!(doc.contains(&said), "docs/simulator.md does not say {said}");
        }
    }

    /// The MI300X checks recomputed from their tables (seconds in release).
    #[test]
    #[ignore]
    fn quoted_accuracy_of_the_mi300x_tables_is_the_validators() {
        for (file, quoted) in [
            (include_str!("../../../../data/validation/oci-mi300x.csv"), CDNA3_OCI_2024),
            (include_str!("../../../../data/validation/amd-mi300x.csv"), CDNA3_AMD_2025),
            (include_str!("../../../../data/validation/amd-mi300x-releases.csv"), CDNA3_AMD_RELEASES),
        ] {
            let report = validate(&parse_csv(file).unwrap(), &ValidationOptions::default()).unwrap();
            let of = |metric: Metric| -> Vec<f64> {
                let mut v: Vec<f64> =
                    report.predictions.iter().filter(|p| p.row.metric == metric).map(|p| p.rel_error).collect();
                v.sort_by(f64::total_cmp);
                v
            };
            let (latency, throughput) = (of(Metric::E2eMsMean), of(Metric::OutputTokensPerS));
            let round = |x: f64, d: f64| (x * d).round() / d;
            let got = FamilyCheck {
                latency_rows: latency.len(),
                latency_error_pct: (round(latency[0] * 100.0, 10.0), round(latency[latency.len() - 1] * 100.0, 10.0)),
                throughput_rows: throughput.len(),
                throughput_ratio: (
                    round(1.0 + throughput[0], 100.0),
                    round(1.0 + throughput[throughput.len() - 1], 100.0),
                ),
            };
            assert_eq!(got, quoted, "the engine moved; quote its new figures (and docs/simulator.md's)");
        }
    }

    #[test]
    fn a_mixture_of_experts_is_said_with_the_tables_figures() {
        let model = |n: &str| ModelSpec::lookup(n).unwrap();
        let spec = |n: &str| GpuSpec::lookup(n).unwrap();
        assert!(moe_note(&model("llama-3.1-70b")).is_none() && moe_note(&model("llama-3.1-8b")).is_none());
        // On AMD's GPUs a mixture of experts says the DeepSeek-R1 check
        // too; a dense model, or another vendor's GPU, does not.
        let amd = amd_moe_note(&model("deepseek-r1"), &spec("mi300x")).unwrap();
        assert!(amd.contains("on MI300X (cdna3)") && amd.contains("39.0 % off at the median"), "{amd}");
        assert!(amd_moe_note(&model("qwen3-235b-a22b"), &spec("mi355x")).is_some());
        assert!(amd_moe_note(&model("llama-3.1-70b"), &spec("mi300x")).is_none());
        assert!(amd_moe_note(&model("deepseek-r1"), &spec("h200")).is_none());
        // GPT-OSS on the MI355X under SGLang's scheduler (W4A8 by default)
        // is told of the kernels InferenceMAX ran until --mxfp4-activations
        // names them; not under vLLM's (16-bit by default, as they ran), on
        // the B200, the MI300X (W4A16 already) or at another precision.
        let oss = |gpu: &str, p: super::super::Precision| {
            let mut c = super::super::EngineConfig::new(model("gpt-oss-120b"), spec(gpu), p);
            c.scheduler = super::super::SchedulerPolicy::Sglang;
            c
        };
        let note = mxfp4_kernels_note(&oss("mi355x", super::super::Precision::Mxfp4)).unwrap();
        assert!(note.contains("on the MI355X (W4A8, SGLang's default") && note.contains("bf16 predicts"), "{note}");
        let mut vllm = oss("mi355x", super::super::Precision::Mxfp4);
        vllm.scheduler = super::super::SchedulerPolicy::Vllm;
        assert!(mxfp4_kernels_note(&vllm).is_none());
        // Under vLLM's scheduler on a B200 (16-bit by default there) it is
        // told what W4A8 takes; named either way, it is not.
        let mut b200 = oss("b200", super::super::Precision::Mxfp4);
        b200.scheduler = super::super::SchedulerPolicy::Vllm;
        let note = mxfp4_kernels_note(&b200).unwrap();
        assert!(
            note.contains("on the B200 (W4A16)") && note.contains("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1"),
            "{note}"
        );
        assert!(note.contains("--mxfp4-activations fp8 predicts"), "{note}");
        b200.mxfp4_activations = Some(super::super::Mxfp4Activations::Bf16);
        assert!(mxfp4_kernels_note(&b200).is_none());
        let mut named = oss("mi355x", super::super::Precision::Mxfp4);
        named.mxfp4_activations = Some(super::super::Mxfp4Activations::Fp8);
        assert!(mxfp4_kernels_note(&named).is_none());
        assert!(mxfp4_kernels_note(&oss("b200", super::super::Precision::Mxfp4)).is_none());
        assert!(mxfp4_kernels_note(&oss("mi300x", super::super::Precision::Mxfp4)).is_none());
        assert!(mxfp4_kernels_note(&oss("mi355x", super::super::Precision::Fp8)).is_none());
        let note = moe_note(&model("qwen3-235b-a22b")).unwrap();
        assert!(
            note.contains(
                "under vLLM on Hopper, prompt-bound (GPUStack's runs, held out), -4 to +40 % for \
                           Qwen3-235B-A22B (6 rows) and +50 to +99 % for DeepSeek-R1-0528 (3)"
            ),
            "{note}"
        );
        assert!(
            note.contains("is a mixture of experts: on TensorRT-LLM's published saturation throughputs of three"),
            "{note}"
        );
        assert!(note.contains("+33 % off the measured at the median (45 rows, -22 to +143 %)"), "{note}");
        assert!(note.contains("+50 % where batches were largest") && note.contains("3.3 % off"), "{note}");
        assert!(note.contains("Expect its throughput") && !note.contains("was not among them"), "{note}");
        for checked in ["deepseek-r1", "deepseek-v3", "qwen3-30b-a3b"] {
            assert!(moe_note(&model(checked)).unwrap().contains("Expect its throughput"), "{checked}");
        }
        // A mixture of experts the table did not hold is said to be unchecked.
        let mixtral = moe_note(&model("mixtral-8x7b")).unwrap();
        assert!(mixtral.contains("This model was not among them"), "{mixtral}");
        // docs/simulator.md's table gives the same figures.
        let doc = simulator_doc();
        let c = MOE_TRTLLM;
        let line = format!(
            "| mixtures of experts, all ({}) | | {:.1} % ({:+.1} %; {:+.1} to {:+.1} %) |",
            c.rows, c.median_pct, c.median_pct, c.error_pct.0, c.error_pct.1
        )
        .replace("-", "−");
        assert!(doc.contains(&line), "docs/simulator.md has no line {line}");
        let dense = format!("| dense, all ({}) | | **{:.1} %**", c.dense_rows, c.dense_median_abs_pct);
        assert!(doc.contains(&dense), "docs/simulator.md has no line {dense}");
    }

    #[test]
    fn a_model_with_its_own_table_is_said_with_its_figures() {
        let model = |n: &str| ModelSpec::lookup(n).unwrap();
        for (name, id) in [
            ("gpt-oss-120b", "openai/gpt-oss-120b"),
            ("gpt-oss-20b", "openai/gpt-oss-20b"),
            ("llama-4-maverick", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"),
            ("llama-4-scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
        ] {
            let t = own_table(&model(name)).unwrap();
            let note = moe_note(&model(name)).unwrap();
            let (b, h) = (t.blackwell, t.hopper);
            let said = format!("{:+.0} % off the measured at the median ({} rows", b.median_pct, b.rows);
            assert!(note.contains(&said), "{note}");
            let said =
                format!("{:+.0} % ({} rows, {:+.0} to {:+.0} %)", h.median_pct, h.rows, h.error_pct.0, h.error_pct.1);
            assert!(note.contains(&said) && !note.contains("Qwen3"), "{note}");
            // A config.json's name finds the same figures.
            let mut read = model(name);
            read.name = id.into();
            assert_eq!(own_table(&read), Some(t), "{id}");
        }
        assert!(moe_note(&model("gpt-oss-20b")).unwrap().contains("Triton kernels"));
        assert!(own_table(&model("qwen3-30b-a3b")).is_none() && own_table(&model("mixtral-8x7b")).is_none());
        // docs/simulator.md's tables give the same figures.
        let doc = simulator_doc();
        for t in OWN_TABLES {
            for (gpus, c) in [("Blackwell", t.blackwell), ("Hopper", t.hopper)] {
                let figures =
                    format!("{} | {:+.1} % | {:+.1} to {:+.1} % |", c.rows, c.median_pct, c.error_pct.0, c.error_pct.1)
                        .replace("-", "−");
                let line = format!("| {} | {gpus} | {figures}", model(t.key).name);
                assert!(doc.contains(&line), "docs/simulator.md has no line {line}");
            }
        }
    }

    /// GPUStack's vLLM rows on Hopper: GPT-OSS's calibration and held-out
    /// rows, and Qwen3-235B-A22B's and DeepSeek-R1-0528's held-out ones, as
    /// quoted.
    #[test]
    #[ignore]
    fn quoted_accuracy_of_gpustacks_hopper_rows_is_the_validators() {
        let rows = parse_csv(include_str!("../../../../data/validation/gpustack-hopper.csv")).unwrap();
        let report = validate(&rows, &ValidationOptions::default()).unwrap();
        let errors = |keep: &dyn Fn(&crate::engine::validate::ReferenceRow) -> bool| {
            report.predictions.iter().filter(|p| keep(&p.row)).map(|p| p.rel_error).collect::<Vec<f64>>()
        };
        for (name, quoted) in GPT_OSS_VLLM_H100 {
            // Every row of the model on one GPU.
            let of_model = |r: &crate::engine::validate::ReferenceRow| r.model == name && r.tp == 1;
            assert_eq!(errors(&of_model).len(), rows.iter().filter(|r| of_model(r)).count(), "{name}");
            assert_eq!(group_check(errors(&of_model)), quoted, "{name} moved; quote its new figures");
        }
        let got = rows_check(errors(&|r| r.model == "gpt-oss-120b" && r.tp == 2).iter().map(|e| e * 100.0));
        assert_eq!(got, GPT_OSS_120B_VLLM_H100_TP2, "GPT-OSS-120B on two H100s moved; quote its new figures");
        for (i, (what, quoted)) in QWEN3_235B_VLLM_H100.iter().enumerate() {
            let precision = [crate::engine::Precision::Bf16, crate::engine::Precision::Fp8][i];
            let got = rows_check(
                errors(&|r| r.model == "qwen3-235b-a22b" && r.precision == precision).iter().map(|e| e * 100.0),
            );
            assert_eq!(got, *quoted, "{what} moved; quote its new figures");
        }
        let got = rows_check(errors(&|r| r.model == "deepseek-r1-0528").iter().map(|e| e * 100.0));
        assert_eq!(got, DEEPSEEK_VLLM_H200, "DeepSeek-R1 moved; quote its new figures");
        let a100 = parse_csv(include_str!("../../../../data/validation/gpustack-a100.csv")).unwrap();
        let a100 = validate(&a100, &ValidationOptions::default()).unwrap();
        let engines = [ReferenceEngine::Vllm, ReferenceEngine::TensorRtLlm];
        check_qwen3_14b(&a100.predictions, "A100", engines, QWEN3_14B_A100, QWEN3_14B_A100_SHORT);
        // Qwen3-32B under TensorRT-LLM: the H100's rows, then the A100's.
        for (i, predictions) in [&report.predictions, &a100.predictions].into_iter().enumerate() {
            let (what, quoted) = QWEN3_32B_TRTLLM[i];
            assert!(predictions
                .iter()
                .filter(|p| p.row.model == "qwen3-32b")
                .all(|p| p.row.engine == ReferenceEngine::TensorRtLlm));
            let what = format!("Qwen3-32B, {what}");
            check_prompt_bound(predictions, |r| r.model == "qwen3-32b", &what, quoted, QWEN3_32B_TRTLLM_SHORT[i]);
        }
        for (i, (what, quoted)) in QWEN3_235B_A100.into_iter().enumerate() {
            let precision = [crate::engine::Precision::Bf16, crate::engine::Precision::Fp8][i];
            let keep = |r: &ReferenceRow| r.model == "qwen3-235b-a22b" && r.precision == precision;
            let what = format!("Qwen3-235B-A22B on A100s, {what}");
            check_prompt_bound(&a100.predictions, keep, &what, quoted, QWEN3_235B_A100_SHORT[i]);
        }
        let oss = a100.predictions.iter().filter(|p| p.row.model == "gpt-oss-20b").map(|p| p.rel_error * 100.0);
        assert_eq!(rows_check(oss), GPT_OSS_20B_A100, "GPT-OSS-20B on an A100 moved; quote its new figures");
        let latency = parse_csv(include_str!("../../../../data/validation/gpustack-h100-latency.csv")).unwrap();
        let latency = validate(&latency, &ValidationOptions::default()).unwrap();
        for (model, checks) in [("qwen3-8b", QWEN3_8B_H100_FOUR_USERS), ("gpt-oss-120b", GPT_OSS_120B_FOUR_USERS)] {
            for (i, (what, quoted)) in checks.iter().enumerate() {
                let metric = [Metric::TpotMsMean, Metric::TtftMsMean][i];
                let got = rows_check(
                    latency
                        .predictions
                        .iter()
                        .filter(|p| p.row.metric == metric && p.row.model == model)
                        .map(|p| p.rel_error * 100.0),
                );
                assert_eq!(got, *quoted, "{model}'s {what} at four users moved; quote its new figures");
            }
        }
        let engines = [ReferenceEngine::Vllm, ReferenceEngine::Sglang];
        check_qwen3_14b(&report.predictions, "H100", engines, QWEN3_14B_H100, QWEN3_14B_H100_SHORT);
        let b200 = parse_csv(include_str!("../../../../data/validation/served-b200.csv")).unwrap();
        let b200 = validate(&b200, &ValidationOptions::default()).unwrap();
        assert_eq!(b200.predictions.len(), SERVED_B200.len());
        for (p, (id, quoted)) in b200.predictions.iter().zip(SERVED_B200) {
            assert_eq!(p.row.id, id);
            assert_eq!(rows_check([p.rel_error * 100.0]).error_pct.0, quoted, "{id} moved; quote its new figure");
        }
    }

    /// Qwen3-14B's predictions under each of `engines` on `gpu`
    /// ([`check_prompt_bound`]).
    fn check_qwen3_14b(
        predictions: &[crate::engine::validate::Prediction],
        gpu: &str,
        engines: [ReferenceEngine; 2],
        quoted: [(&str, RowsCheck); 2],
        short: [f64; 2],
    ) {
        for (i, (what, quoted)) in quoted.into_iter().enumerate() {
            let keep = |r: &ReferenceRow| r.model == "qwen3-14b" && r.engine == engines[i];
            check_prompt_bound(predictions, keep, &format!("Qwen3-14B on an {gpu}, {what}"), quoted, short[i]);
        }
    }

    /// The predictions of the rows `keep` picks: the prompt-bound ones'
    /// (prompts of 1,000 tokens or more) range against `quoted`, the
    /// 128/4 one's against `short`.
    fn check_prompt_bound(
        predictions: &[crate::engine::validate::Prediction],
        keep: impl Fn(&ReferenceRow) -> bool,
        what: &str,
        quoted: RowsCheck,
        short: f64,
    ) {
        let of = |long: bool| {
            predictions
                .iter()
                .filter(|p| keep(&p.row) && (p.row.input_tokens >= 1000) == long)
                .map(|p| p.rel_error * 100.0)
                .collect::<Vec<f64>>()
        };
        assert_eq!(rows_check(of(true)), quoted, "{what}, moved; quote its new figures");
        assert_eq!(rows_check(of(false)).error_pct.0, short, "{what}, 128/4");
    }

    /// A figure as docs/simulator.md writes it: a sign, a tenth, the minus
    /// sign typeset.
    fn doc_num(x: f64) -> String {
        format!("{x:+.1}").replace('-', "−")
    }

    /// A percentage as docs/simulator.md writes it.
    fn doc_pct(x: f64) -> String {
        format!("{} %", doc_num(x))
    }

    /// A range of errors as docs/simulator.md writes it.
    fn doc_range(c: RowsCheck) -> String {
        format!("{} to {} %", doc_num(c.error_pct.0), doc_num(c.error_pct.1))
    }

    #[test]
    fn a_served_scheduler_under_load_is_said_to_run_fast() {
        use crate::engine::SchedulerPolicy;
        let spec = |n: &str| GpuSpec::lookup(n).unwrap();
        let (h100, h200, a100, b200) = (spec("h100"), spec("h200"), spec("a100"), spec("b200"));
        // TensorRT-LLM's: its served runs of a block-scaled FP8 model.
        let trt = served_load_note(SchedulerPolicy::Trtllm, &h100).unwrap();
        assert!(trt.starts_with("accuracy: under load on TensorRT-LLM's scheduler on Hopper"), "{trt}");
        assert!(trt.contains("gave output tokens/s +82 to +118 % off") && trt.contains("gave -23 to -7 %"), "{trt}");
        assert!(served_load_note(SchedulerPolicy::Trtllm, &a100).is_none());
        // Hopper only: the A100's runs came out near; Blackwell's were not checked.
        assert!(served_load_note(SchedulerPolicy::Vllm, &a100).is_none());
        assert!(served_load_note(SchedulerPolicy::Vllm, &b200).is_none());
        assert_eq!(served_load_note(SchedulerPolicy::Vllm, &h200), served_load_note(SchedulerPolicy::Vllm, &h100));
        for (scheduler, name) in [(SchedulerPolicy::Vllm, "vLLM"), (SchedulerPolicy::Sglang, "SGLang")] {
            let note = served_load_note(scheduler, &h100).unwrap();
            assert!(note.starts_with(&format!("accuracy: under load on {name}'s scheduler on Hopper")), "{note}");
            assert!(
                note.contains("+46 to +56 % off the measured under vLLM") && note.contains("+83 to +104 %"),
                "{note}"
            );
            assert!(note.contains("TPOT was within -1 to +18 %") && note.contains(&format!("a real {name} server")));
        }
    }

    #[test]
    fn docs_give_gpustacks_hopper_rows_figures() {
        let doc = include_str!("../../../../docs/simulator.md");
        for ((name, c), split) in GPT_OSS_VLLM_H100.iter().zip(["calibration", "held out"]) {
            let range = format!("{:+.1} to {:+.1} % |", c.error_pct.0, c.error_pct.1).replace("-", "−");
            let title = ModelSpec::lookup(name).unwrap().name;
            let line = doc.lines().find(|l| l.starts_with(&format!("| {title}, vLLM "))).unwrap_or_default();
            assert!(line.contains(&format!("({}) | {split} |", c.rows)) && line.ends_with(&range), "{line}");
        }
        let has = |line: String| assert!(doc.contains(&line), "docs/simulator.md has no line {line}");
        for (what, c) in QWEN3_235B_VLLM_H100 {
            has(format!("| Qwen3-235B-A22B, {what} ({}) | {} |", c.rows, doc_range(c)));
        }
        let c = DEEPSEEK_VLLM_H200;
        has(format!("| DeepSeek-R1-0528, FP8, TP 8 on H200s ({}) | {} |", c.rows, doc_range(c)));
        let c = GPT_OSS_120B_VLLM_H100_TP2;
        let line = format!("| GPT-OSS-120B, TP 2 on two H100s ({}) | held out |", c.rows);
        let range = format!("{} |", doc_range(c));
        assert!(
            doc.lines().any(|l| l.starts_with(&line) && l.ends_with(&range)),
            "docs/simulator.md has no line {line}"
        );
        let c = GPT_OSS_20B_A100;
        has(format!("| GPT-OSS-20B on an A100, vLLM ({}) | {} |", c.rows, doc_range(c)));
        let b200 = doc.split("### vLLM and SGLang on B200").nth(1).and_then(|s| s.split("\n### ").next()).unwrap();
        let rows: Vec<&str> = b200.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| row")).collect();
        assert_eq!(rows.len(), SERVED_B200.len(), "{b200}");
        for (line, (id, quoted)) in rows.iter().zip(SERVED_B200) {
            assert!(line.ends_with(&format!("| {} |", doc_pct(quoted))), "{id}: {line}");
        }
        // The by-shape tables: each group's line holds its prompt-bound
        // range's ends and its 128/4 row.
        for (head, quoted, short) in [
            ("Qwen3-235B-A22B on A100s, vLLM,", QWEN3_235B_A100, QWEN3_235B_A100_SHORT),
            ("Qwen3-32B, TensorRT-LLM,", QWEN3_32B_TRTLLM, QWEN3_32B_TRTLLM_SHORT),
            ("Qwen3-14B,", QWEN3_14B_H100, QWEN3_14B_H100_SHORT),
            ("Qwen3-14B on an A100,", QWEN3_14B_A100, QWEN3_14B_A100_SHORT),
        ] {
            for ((what, c), short) in quoted.iter().zip(short) {
                let head = format!("| {head} {what} |");
                let line = doc.lines().find(|l| l.starts_with(&head)).unwrap_or_default();
                for end in [c.error_pct.0, c.error_pct.1, short] {
                    assert!(line.contains(&doc_pct(end)), "{head}: {line}");
                }
            }
        }
        for (model, checks) in [("Qwen3-8B", QWEN3_8B_H100_FOUR_USERS), ("GPT-OSS-120B", GPT_OSS_120B_FOUR_USERS)] {
            for (what, c) in checks {
                has(format!("| {model}, mean {what} ({}) | {} |", c.rows, doc_range(c)));
            }
        }
    }

    /// The own tables' figures recomputed (a minute and more in release).
    #[test]
    #[ignore]
    fn quoted_accuracy_of_the_models_own_tables_is_the_validators() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/validation");
        for t in OWN_TABLES {
            let rows = parse_csv(&std::fs::read_to_string(dir.join(t.file)).unwrap()).unwrap();
            let rows: Vec<_> = rows
                .into_iter()
                .filter(|r| ModelSpec::lookup(&r.model).unwrap().name == ModelSpec::lookup(t.key).unwrap().name)
                .collect();
            assert!(rows.iter().all(|r| r.split == Some(Split::HeldOut)), "{}", t.key);
            let report = validate(&rows, &ValidationOptions::default()).unwrap();
            let group = |hopper: bool| {
                group_check(
                    report
                        .predictions
                        .iter()
                        .filter(|p| (GpuSpec::lookup(&p.row.gpu).unwrap().family == GpuFamily::Hopper) == hopper)
                        .map(|p| p.rel_error),
                )
            };
            assert_eq!(group(false), t.blackwell, "{} on Blackwell moved; quote its new figures", t.key);
            assert_eq!(group(true), t.hopper, "{} on Hopper moved; quote its new figures", t.key);
            assert_eq!(report.predictions.len(), t.blackwell.rows + t.hopper.rows, "{}", t.key);
        }
    }

    /// The mixtures of experts' figures recomputed from their table
    /// (under a minute in release).
    #[test]
    #[ignore]
    fn quoted_accuracy_of_the_moe_table_is_the_validators() {
        let rows = parse_csv(include_str!("../../../../data/validation/trtllm-overview-1.2.csv")).unwrap();
        let report = validate(&rows, &ValidationOptions::default()).unwrap();
        let held: Vec<&crate::engine::validate::Prediction> =
            report.predictions.iter().filter(|p| p.row.split == Some(Split::HeldOut)).collect();
        let moe = |p: &&&crate::engine::validate::Prediction| ModelSpec::lookup(&p.row.model).unwrap().moe.is_some();
        let sorted = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v
        };
        let pct = |x: f64| (x * 1000.0).round() / 10.0;
        let median = |v: &[f64]| pct(goodput_core::percentile(v, 50.0).unwrap());
        let all = sorted(held.iter().filter(moe).map(|p| p.rel_error).collect());
        let short = sorted(
            held.iter()
                .filter(moe)
                .filter(|p| p.row.input_tokens == p.row.output_tokens && p.row.input_tokens <= 1024)
                .map(|p| p.rel_error)
                .collect(),
        );
        let dense = sorted(held.iter().filter(|p| !moe(p)).map(|p| p.rel_error.abs()).collect());
        let got = MoeCheck {
            rows: all.len(),
            median_pct: median(&all),
            error_pct: (pct(all[0]), pct(all[all.len() - 1])),
            short_rows: short.len(),
            short_median_pct: median(&short),
            dense_rows: dense.len(),
            dense_median_abs_pct: median(&dense),
        };
        assert_eq!(got, MOE_TRTLLM, "the engine moved; quote its new figures (and docs/simulator.md's)");
    }

    /// docs/simulator.md's shipped held-out rows give the figures the
    /// output quotes.
    #[test]
    fn docs_give_the_quoted_figures() {
        let doc = include_str!("../../../../docs/simulator.md");
        for (a, how) in [(NIM_HELD_OUT_APART, "the same"), (NIM_HELD_OUT_TOGETHER, "sent at once, as shipped")] {
            let row = format!(
                "| **held-out** | **{how}** | **{:.1} % ({n})** | **{:.1} % ({n})** | **{:.1} % ({n})** |",
                a.ttft_mean_pct,
                a.itl_mean_pct,
                a.output_tps_pct,
                n = a.rows
            );
            assert!(doc.contains(&row), "docs/simulator.md has no line {row}");
        }
    }

    /// Recomputes the quoted figures (about a minute in release, many
    /// minutes unoptimised, hence ignored by default).
    #[test]
    #[ignore]
    fn quoted_accuracy_is_the_validators() {
        let nim = parse_csv(include_str!("../../../../data/validation/nim-closed-loop.csv")).unwrap();
        let cdna3 = parse_csv(include_str!("../../../../data/validation/inferencemax-cdna3.csv")).unwrap();
        let hopper = parse_csv(include_str!("../../../../data/validation/inferencemax-hopper.csv")).unwrap();
        let cdna4 = parse_csv(include_str!("../../../../data/validation/inferencemax-cdna4.csv")).unwrap();
        let blackwell = parse_csv(include_str!("../../../../data/validation/inferencemax-blackwell.csv")).unwrap();
        let amd_dsr1: Vec<_> = parse_csv(include_str!("../../../../data/validation/inferencemax-dsr1.csv"))
            .unwrap()
            .into_iter()
            .filter(|r| GpuSpec::lookup(&r.gpu).unwrap().family.is_amd())
            .collect();
        for (rows, stagger, quoted) in [
            (&nim, true, NIM_HELD_OUT_APART),
            (&nim, false, NIM_HELD_OUT_TOGETHER),
            (&cdna3, true, CDNA3_INFERENCEMAX),
            (&hopper, true, HOPPER_INFERENCEMAX),
            (&cdna4, true, CDNA4_INFERENCEMAX),
            (&blackwell, true, BLACKWELL_INFERENCEMAX),
            (&amd_dsr1, true, AMD_DSR1_SGLANG),
        ] {
            let report = validate(rows, &ValidationOptions { stagger, ..ValidationOptions::default() }).unwrap();
            let errors = |metric: Metric| -> Vec<f64> {
                report
                    .predictions
                    .iter()
                    .filter(|p| {
                        p.row.metric == metric
                            && p.row.split == Some(Split::HeldOut)
                            && !p.row.queueing
                            && matches!(p.row.load, ReferenceLoad::Concurrency(c) if c >= 5)
                    })
                    .map(|p| p.rel_error)
                    .collect()
            };
            let median_pct = |v: &[f64]| {
                let mut abs: Vec<f64> = v.iter().map(|e| e.abs()).collect();
                abs.sort_by(f64::total_cmp);
                (goodput_core::percentile(&abs, 50.0).unwrap() * 1000.0).round() / 10.0
            };
            let ttft = errors(Metric::TtftMsMean);
            let got = Accuracy {
                rows: ttft.len(),
                ttft_mean_pct: median_pct(&ttft),
                ttft_below: ttft.iter().filter(|&&e| e < 0.0).count(),
                itl_mean_pct: median_pct(&errors(Metric::TpotMsMean)),
                output_tps_pct: median_pct(&errors(Metric::OutputTokensPerS)),
            };
            assert_eq!(
                got, quoted,
                "stagger {stagger}: the engine moved; quote its new figures (and docs/simulator.md's)"
            );
            // The AMD note says the decode was faster than every run's and
            // the throughput above.
            if quoted == AMD_DSR1_SGLANG {
                assert!(errors(Metric::TpotMsMean).iter().all(|&e| e < 0.0));
                let tps = errors(Metric::OutputTokensPerS);
                assert!(tps.iter().filter(|&&e| e > 0.0).count() * 2 > tps.len());
            }
        }
        // The B200's TTFT by TP: the signed median over both precisions.
        let report = validate(&blackwell, &ValidationOptions::default()).unwrap();
        let by_tp: Vec<(u32, f64)> = BLACKWELL_TTFT_BY_TP
            .iter()
            .map(|&(tp, _)| {
                let mut e: Vec<f64> = report
                    .predictions
                    .iter()
                    .filter(|p| p.row.metric == Metric::TtftMsMean && p.row.tp == tp)
                    .filter(|p| matches!(p.row.load, ReferenceLoad::Concurrency(c) if c >= 5))
                    .map(|p| p.rel_error)
                    .collect();
                e.sort_by(f64::total_cmp);
                (tp, (goodput_core::percentile(&e, 50.0).unwrap() * 1000.0).round() / 10.0)
            })
            .collect();
        assert_eq!(by_tp, BLACKWELL_TTFT_BY_TP, "the B200's TTFT by TP moved: quote it (and docs/simulator.md's)");
    }
}
