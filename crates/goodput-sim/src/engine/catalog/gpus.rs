//! GPU datasheet numbers: the shipped table and lookup by name.

use super::names::normalise;
use super::precision::{Precision, GIB};
use crate::engine::error::Error;
use serde::{Deserialize, Serialize};
use std::fmt;

/// GPU generations; calibration constants are kept per family because kernels
/// and runtimes behave alike within one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuFamily {
    Ampere,
    Ada,
    Hopper,
    Blackwell,
    /// Blackwell's workstation and server cards (GB202, sm_120): GDDR7,
    /// PCIe, and tensor cores of their own, apart from the B200's.
    BlackwellRtx,
    Cdna3,
    Cdna4,
}

impl GpuFamily {
    pub const ALL: [GpuFamily; 7] = [
        GpuFamily::Ampere,
        GpuFamily::Ada,
        GpuFamily::Hopper,
        GpuFamily::Blackwell,
        GpuFamily::BlackwellRtx,
        GpuFamily::Cdna3,
        GpuFamily::Cdna4,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GpuFamily::Ampere => "ampere",
            GpuFamily::Ada => "ada",
            GpuFamily::Hopper => "hopper",
            GpuFamily::Blackwell => "blackwell",
            GpuFamily::BlackwellRtx => "blackwell-rtx",
            GpuFamily::Cdna3 => "cdna3",
            GpuFamily::Cdna4 => "cdna4",
        }
    }
}

impl GpuFamily {
    /// AMD's (CDNA): matrix cores, ROCm kernels, and FP4 as OCP's MXFP4.
    pub fn is_amd(self) -> bool {
        matches!(self, GpuFamily::Cdna3 | GpuFamily::Cdna4)
    }
}

impl fmt::Display for GpuFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One GPU's datasheet numbers. Peaks are dense (no sparsity).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    pub name: String,
    pub family: GpuFamily,
    /// The memory CUDA (HIP on AMD's) reports, GiB: what an engine's
    /// `gpu_memory_utilization` takes its share of (an "80 GB" H100 is
    /// 79.18 GiB to vLLM; a "48 GB" L40S 44.42). Sources beside the catalog.
    pub memory_gib: f64,
    pub bandwidth_tb_s: f64,
    pub bf16_tflops: f64,
    /// `None` where the tensor cores have no FP8 (A100).
    pub fp8_tflops: Option<f64>,
    /// `None` where the tensor cores have no FP4 (everything before Blackwell).
    #[serde(default)]
    pub fp4_tflops: Option<f64>,
    /// GPU-to-GPU bandwidth per direction, for tensor-parallel all-reduce:
    /// NVLink or Infinity Fabric where the part has it, else PCIe.
    pub interconnect_gb_s: f64,
    /// GPUs one NVLink domain joins (`interconnect_gb_s` within it): 8 on
    /// an HGX or DGX board and AMD's eight-GPU platforms, 72 in a GB200 or
    /// GB300 NVL72 rack; the PCIe parts count 8 to a server, joined by PCIe.
    #[serde(default = "eight")]
    pub nvlink_domain: u32,
    /// Each GPU's NIC to the network beyond its domain, Gb/s (the one
    /// tensor and expert parallelism across nodes, and KV transfers between
    /// nodes, take).
    #[serde(default = "four_hundred")]
    pub network_gbps: f64,
    /// The datasheet's maximum board power (TDP): what a deployment
    /// provisions per GPU.
    #[serde(default)]
    pub tdp_w: f64,
    /// Power drawn by a GPU holding a loaded model (a CUDA context) and
    /// doing nothing: the floor of the power model (docs/simulator.md).
    #[serde(default)]
    pub idle_w: f64,
}

struct GpuEntry {
    aliases: &'static [&'static str],
    name: &'static str,
    family: GpuFamily,
    memory_gib: f64,
    bandwidth_tb_s: f64,
    bf16_tflops: f64,
    fp8_tflops: Option<f64>,
    fp4_tflops: Option<f64>,
    interconnect_gb_s: f64,
    nvlink_domain: u32,
    network_gbps: f64,
    tdp_w: f64,
    idle_w: f64,
}

fn eight() -> u32 {
    8
}

fn four_hundred() -> f64 {
    400.0
}

// Sources, dense peaks (datasheets quote FLOPS with 2:4 sparsity; dense is
// half), interconnect per direction (datasheets quote both directions):
// - H100 SXM / PCIe: NVIDIA H100 Tensor Core GPU datasheet (BF16 1,979 /
//   1,513 TFLOPS sparse, FP8 3,958 / 3,026, 3.35 / 2.0 TB/s, NVLink 900 GB/s,
//   PCIe Gen5 128 GB/s, max TDP 700 W / 350 W).
// - H200: NVIDIA H200 Tensor Core GPU datasheet (141 GB HBM3e, 4.8 TB/s,
//   BF16 1,979 and FP8 3,958 TFLOPS sparse, NVLink 900 GB/s, max TDP up to
//   700 W for the SXM part).
// - A100 80GB SXM: NVIDIA A100 datasheet (BF16 312 TFLOPS dense, 2,039 GB/s,
//   NVLink 600 GB/s, max TDP 400 W).
// - L40S: NVIDIA L40S datasheet (BF16 362 / FP8 733 TFLOPS dense, 864 GB/s,
//   PCIe Gen4 64 GB/s, 350 W). L4: NVIDIA L4 datasheet (BF16 242 / FP8 485
//   TFLOPS sparse, 300 GB/s, 72 W).
// - B200: NVIDIA HGX B200 specification, per GPU of eight (1.44 TB → 180 GB,
//   64 TB/s → 8 TB/s, FP4 144 PFLOPS sparse → 9 dense, FP8 72 → 4.5,
//   BF16 36 → 2.25, NVLink 5 1.8 TB/s, 1,000 W per GPU).
// - GB200: NVIDIA GB200 NVL72 specification, per GPU of 72 (13.4 TB → 186 GB,
//   576 TB/s → 8 TB/s, FP4 1,440 PFLOPS sparse → 10 dense, FP8 720 → 5,
//   BF16 360 → 2.5, NVLink 5 130 TB/s → 1.8 TB/s); 1,200 W per GPU, the
//   configuration NVIDIA's GB200 peaks are quoted at.
// - B300: NVIDIA HGX B300 specification, per GPU of eight (2.1 TB → 270 GB
//   of the 288 GB on the package, FP4 144 PFLOPS sparse and 108 dense →
//   13.5 dense, FP8 72 → 4.5, BF16 36 → 2.25, NVLink 5 1.8 TB/s), 8 TB/s
//   of HBM3e, 1,100 W per GPU.
// - GB300: NVIDIA GB300 NVL72 specification, per GPU of 72 (20.1 TB →
//   279 GB, 576 TB/s → 8 TB/s, FP4 1,080 PFLOPS dense → 15, FP8 360 dense
//   → 5, BF16 180 dense → 2.5, NVLink 5 130 TB/s → 1.8 TB/s); 1,400 W per
//   GPU. Blackwell Ultra's doubled attention exponentials (SFU) are not in
//   the model, whose attention is matrix work and KV reads.
// - RTX PRO 6000: NVIDIA RTX PRO 6000 Blackwell (Server and Workstation
//   Editions) data sheets: 96 GB GDDR7 with ECC, 1,792 GB/s (a 512-bit bus
//   at 28 Gbps), 4,000 AI TOPS of FP4 with sparsity → 2,000 dense, 600 W,
//   PCIe Gen5 x16 (64 GB/s per direction), no NVLink. The data sheets give
//   no dense FP8 or 16-bit tensor figure: FP8 1,000 and BF16 500 are the
//   FP4 figure halved and halved again, the ratio every Blackwell tensor
//   core has (B200's 9 / 4.5 / 2.25 PFLOPS; the professional cards, unlike
//   GeForce's, accumulate 16-bit products in FP32 at full rate). Derived,
//   not printed: the family is uncalibrated and says so.
// - MI300X: AMD Instinct MI300X data sheet (BF16 1,307 / FP8 2,615 TFLOPS
//   dense, 5.3 TB/s, Infinity Fabric 896 GB/s aggregate, 750 W).
// - MI325X: AMD Instinct MI325X data sheet (the MI300X's compute, 256 GB
//   HBM3E, 6 TB/s, Infinity Fabric 896 GB/s aggregate, 1,000 W).
// - MI355X: AMD Instinct MI355X data sheet (256 CUs at 2.4 GHz: BF16 2.5 /
//   FP8 5.0 / MXFP4 10.1 PFLOPS dense, 20.1 PFLOPS of FP4 with sparsity;
//   288 GB HBM3E, 8 TB/s, Infinity Fabric 1,075 GB/s aggregate, 1,400 W).
//   Its FP4 is OCP's MXFP4 (a scale every 32 weights), which the model
//   sizes as NVFP4 (every 16): 6 % more weight bytes than it has.
// Memory is what CUDA (HIP) reports, not the datasheet's GB, as engines
// see it: vLLM's start-up log ("Free memory on device (x/79.18 GiB)") and
// PyTorch's out-of-memory messages ("GPU 0 has a total capacity of 79.11
// GiB") as users post them. It varies by a few hundredths with the driver.
// - H100 SXM: 79.18, vLLM 0.11.0's log on an H100 (llm-d/llm-d-benchmark,
//   config_explorer/empirical-vllm-memory-results.md, the log the KV
//   cache's size is checked against); 79.11 on driver 535 (vllm-project/
//   vllm#27508, nvidia-smi's 81,559 MiB beside it). H100 PCIe: no log
//   found; nvidia-smi shows it the same 81,559 MiB, so the SXM's figure.
// - H200: 139.81 (an H200's OOM message, quoted in sungwon-chae/
//   arxiv_confi); 139.72 in vllm-project/vllm#23192.
// - A100 80GB: 79.14 (lianqi1008/Control-GIC#6); 79.15 to 79.32 elsewhere.
// - L40S: 44.42 (stepfun-ai/Step-Video-T2V#8; 44.53 in Wan-Video/Wan2.1#205):
//   its "48 GB" is decimal and ECC takes a share. L4: 22.05 (vllm-project/
//   vllm#33297, vllm-project/vllm-omni#168).
// - B200: 178.35 (pytorch/ao#4002). GB200 184.31 and B300 267.69, MI300X
//   191.98, MI325X 255.98, MI355X 287.98: OOM messages users quote (found
//   in public code search; no one page to cite). GB300: none found, the
//   datasheet's 279. RTX PRO 6000: 94.97 (antirez/ds4#431, cudaMemGetInfo).
// Beyond the NVLink domain each GPU has one NIC: 400 Gb/s (ConnectX-7, as
// in the DGX H100, H200 and B200 datasheets; the MI300X, MI325X and MI355X
// platforms alike), 800 Gb/s on Blackwell Ultra (ConnectX-8 SuperNICs, HGX
// B300 and GB300 NVL72), 200 Gb/s on the A100 (DGX A100: ConnectX-6 HDR)
// and on the PCIe parts (an assumption: no reference server).
// Idle power (a loaded model, no work) is not on datasheets: public
// measurements put it at 10–15 % of TDP on HBM parts (arXiv:2605.23918
// measures the CUDA context at 26–50 W above bare idle on H100 and A100, 66 W
// on the GDDR6 L40S); the figures below are those shares, ±50 %.
static GPUS: [GpuEntry; 14] = [
    GpuEntry {
        aliases: &["h100-sxm", "h100", "h100-sxm5", "h100-80gb", "h100-sxm-80gb"],
        name: "H100 SXM",
        family: GpuFamily::Hopper,
        memory_gib: 79.18,
        bandwidth_tb_s: 3.35,
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
        fp4_tflops: None,
        interconnect_gb_s: 450.0,
        nvlink_domain: 8,
        network_gbps: 400.0,
        tdp_w: 700.0,
        idle_w: 75.0,
    },
    GpuEntry {
        aliases: &["h100-pcie", "h100-pcie-80gb"],
        name: "H100 PCIe",
        family: GpuFamily::Hopper,
        memory_gib: 79.18,
        bandwidth_tb_s: 2.0,
        bf16_tflops: 756.0,
        fp8_tflops: Some(1513.0),
        fp4_tflops: None,
        interconnect_gb_s: 64.0,
        nvlink_domain: 8,
        network_gbps: 200.0,
        tdp_w: 350.0,
        idle_w: 50.0,
    },
    GpuEntry {
        aliases: &["h200", "h200-sxm", "h200-141gb"],
        name: "H200",
        family: GpuFamily::Hopper,
        memory_gib: 139.81,
        bandwidth_tb_s: 4.8,
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
        fp4_tflops: None,
        interconnect_gb_s: 450.0,
        nvlink_domain: 8,
        network_gbps: 400.0,
        tdp_w: 700.0,
        idle_w: 80.0,
    },
    GpuEntry {
        aliases: &["a100-80gb", "a100", "a100-sxm", "a100-sxm4-80gb"],
        name: "A100 80GB",
        family: GpuFamily::Ampere,
        memory_gib: 79.14,
        bandwidth_tb_s: 2.039,
        bf16_tflops: 312.0,
        fp8_tflops: None,
        fp4_tflops: None,
        interconnect_gb_s: 300.0,
        nvlink_domain: 8,
        network_gbps: 200.0,
        tdp_w: 400.0,
        idle_w: 55.0,
    },
    GpuEntry {
        aliases: &["l40s"],
        name: "L40S",
        family: GpuFamily::Ada,
        memory_gib: 44.42,
        bandwidth_tb_s: 0.864,
        bf16_tflops: 362.0,
        fp8_tflops: Some(733.0),
        fp4_tflops: None,
        interconnect_gb_s: 32.0,
        nvlink_domain: 8,
        network_gbps: 200.0,
        tdp_w: 350.0,
        idle_w: 90.0,
    },
    GpuEntry {
        aliases: &["l4"],
        name: "L4",
        family: GpuFamily::Ada,
        memory_gib: 22.05,
        bandwidth_tb_s: 0.3,
        bf16_tflops: 121.0,
        fp8_tflops: Some(242.5),
        fp4_tflops: None,
        interconnect_gb_s: 32.0,
        nvlink_domain: 8,
        network_gbps: 200.0,
        tdp_w: 72.0,
        idle_w: 16.0,
    },
    GpuEntry {
        aliases: &["b200", "b200-sxm", "hgx-b200", "b200-180gb"],
        name: "B200",
        family: GpuFamily::Blackwell,
        memory_gib: 178.35,
        bandwidth_tb_s: 8.0,
        bf16_tflops: 2250.0,
        fp8_tflops: Some(4500.0),
        fp4_tflops: Some(9000.0),
        interconnect_gb_s: 900.0,
        nvlink_domain: 8,
        network_gbps: 400.0,
        tdp_w: 1000.0,
        idle_w: 140.0,
    },
    GpuEntry {
        aliases: &["gb200", "gb200-nvl72", "gb200-nvl"],
        name: "GB200",
        family: GpuFamily::Blackwell,
        memory_gib: 184.31,
        bandwidth_tb_s: 8.0,
        bf16_tflops: 2500.0,
        fp8_tflops: Some(5000.0),
        fp4_tflops: Some(10000.0),
        interconnect_gb_s: 900.0,
        nvlink_domain: 72,
        network_gbps: 400.0,
        tdp_w: 1200.0,
        idle_w: 160.0,
    },
    GpuEntry {
        aliases: &["mi300x"],
        name: "MI300X",
        family: GpuFamily::Cdna3,
        memory_gib: 191.98,
        bandwidth_tb_s: 5.3,
        bf16_tflops: 1307.0,
        fp8_tflops: Some(2615.0),
        fp4_tflops: None,
        interconnect_gb_s: 448.0,
        nvlink_domain: 8,
        network_gbps: 400.0,
        tdp_w: 750.0,
        idle_w: 110.0,
    },
    GpuEntry {
        aliases: &["b300", "b300-sxm", "hgx-b300", "b300-270gb", "blackwell-ultra"],
        name: "B300",
        family: GpuFamily::Blackwell,
        memory_gib: 267.69,
        bandwidth_tb_s: 8.0,
        bf16_tflops: 2250.0,
        fp8_tflops: Some(4500.0),
        fp4_tflops: Some(13_500.0),
        interconnect_gb_s: 900.0,
        nvlink_domain: 8,
        network_gbps: 800.0,
        tdp_w: 1100.0,
        idle_w: 150.0,
    },
    GpuEntry {
        aliases: &["gb300", "gb300-nvl72", "gb300-nvl"],
        name: "GB300",
        family: GpuFamily::Blackwell,
        memory_gib: 279.0,
        bandwidth_tb_s: 8.0,
        bf16_tflops: 2500.0,
        fp8_tflops: Some(5000.0),
        fp4_tflops: Some(15_000.0),
        interconnect_gb_s: 900.0,
        nvlink_domain: 72,
        network_gbps: 800.0,
        tdp_w: 1400.0,
        idle_w: 180.0,
    },
    GpuEntry {
        aliases: &["mi325x"],
        name: "MI325X",
        family: GpuFamily::Cdna3,
        memory_gib: 255.98,
        bandwidth_tb_s: 6.0,
        bf16_tflops: 1307.0,
        fp8_tflops: Some(2615.0),
        fp4_tflops: None,
        interconnect_gb_s: 448.0,
        nvlink_domain: 8,
        network_gbps: 400.0,
        tdp_w: 1000.0,
        idle_w: 140.0,
    },
    GpuEntry {
        aliases: &["mi355x"],
        name: "MI355X",
        family: GpuFamily::Cdna4,
        memory_gib: 287.98,
        bandwidth_tb_s: 8.0,
        bf16_tflops: 2517.0,
        fp8_tflops: Some(5033.0),
        fp4_tflops: Some(10_066.0),
        interconnect_gb_s: 537.6,
        nvlink_domain: 8,
        network_gbps: 400.0,
        tdp_w: 1400.0,
        idle_w: 190.0,
    },
    GpuEntry {
        aliases: &[
            "rtx-pro-6000",
            "rtx-pro-6000-blackwell",
            "rtx-pro-6000-server",
            "rtx-pro-6000-blackwell-server-edition",
            "rtx-pro-6000-se",
            "rtx-6000-pro",
            "rtxpro6000",
        ],
        name: "RTX PRO 6000",
        family: GpuFamily::BlackwellRtx,
        memory_gib: 94.97,
        bandwidth_tb_s: 1.792,
        bf16_tflops: 500.0,
        fp8_tflops: Some(1000.0),
        fp4_tflops: Some(2000.0),
        interconnect_gb_s: 64.0,
        nvlink_domain: 8,
        network_gbps: 200.0,
        tdp_w: 600.0,
        idle_w: 75.0,
    },
];

/// The catalog's entry for `name`, case, spaces, underscores and a vendor
/// prefix aside.
fn entry(name: &str) -> Result<&'static GpuEntry, Error> {
    let mut key = normalise(name);
    for vendor in ["nvidia-", "amd-", "instinct-"] {
        if let Some(rest) = key.strip_prefix(vendor) {
            key = rest.to_string();
        }
    }
    GPUS.iter().find(|g| g.aliases.contains(&key.as_str())).ok_or_else(|| Error::UnknownGpu {
        name: name.to_string(),
        known: GPUS.iter().map(|g| g.aliases[0]).collect::<Vec<_>>().join(", "),
    })
}

impl GpuSpec {
    /// Looks a GPU up by name, case-insensitively (`h100`, `H100-SXM`,
    /// `nvidia-h200`, `a100-80gb`, `mi300x`, …).
    pub fn lookup(name: &str) -> Result<GpuSpec, Error> {
        entry(name).map(GpuSpec::from_entry)
    }

    /// The catalog's one id for a GPU named any way [`GpuSpec::lookup`]
    /// takes (`H100`, `h100`, `nvidia-h100-sxm5` → `h100-sxm`): the first
    /// of its names, the one an unknown name's error lists. Outputs that
    /// name a GPU given by the user use it, so two runs that name one GPU
    /// differently still read, compare and merge as one.
    pub fn canonical_id(name: &str) -> Result<&'static str, Error> {
        entry(name).map(|e| e.aliases[0])
    }

    /// Every GPU the catalog ships, in datasheet order.
    pub fn catalog() -> Vec<GpuSpec> {
        GPUS.iter().map(GpuSpec::from_entry).collect()
    }

    fn from_entry(e: &GpuEntry) -> GpuSpec {
        GpuSpec {
            name: e.name.to_string(),
            family: e.family,
            memory_gib: e.memory_gib,
            bandwidth_tb_s: e.bandwidth_tb_s,
            bf16_tflops: e.bf16_tflops,
            fp8_tflops: e.fp8_tflops,
            fp4_tflops: e.fp4_tflops,
            interconnect_gb_s: e.interconnect_gb_s,
            nvlink_domain: e.nvlink_domain,
            network_gbps: e.network_gbps,
            tdp_w: e.tdp_w,
            idle_w: e.idle_w,
        }
    }

    pub fn memory_bytes(&self) -> f64 {
        self.memory_gib * GIB
    }

    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        self.bandwidth_tb_s * 1e12
    }

    pub fn interconnect_bytes_per_s(&self) -> f64 {
        self.interconnect_gb_s * 1e9
    }

    /// Bytes/s its NIC carries beyond the NVLink domain.
    pub fn network_bytes_per_s(&self) -> f64 {
        self.network_gbps * 1e9 / 8.0
    }

    /// Whether MXFP4 weights multiply against FP8 activations here (W4A8:
    /// FP4 and FP8 tensor cores, Blackwell's and the MI355X's); elsewhere
    /// they run against 16-bit ones (W4A16).
    pub fn runs_w4a8(&self) -> bool {
        self.fp4_tflops.is_some() && self.fp8_tflops.is_some()
    }

    /// The tensor-core peak a precision runs its matrix products at, in
    /// FLOP/s. Weight-only formats (INT8, INT4) dequantise to 16-bit, so they
    /// run at the BF16 peak; NVFP4 runs at the FP4 peak where the tensor
    /// cores have FP4, and nowhere else.
    pub fn peak_flops(&self, precision: Precision) -> Result<f64, Error> {
        // AMD calls its matrix units matrix cores.
        let units = if self.family.is_amd() { "matrix" } else { "tensor" };
        let unsupported = |cores: &str, fix: String| Error::PrecisionUnsupported {
            gpu: self.name.clone(),
            precision: precision.to_string(),
            cores: format!("{cores} {units}"),
            fix,
        };
        let tflops = match precision {
            Precision::Fp8 => self.fp8_tflops.ok_or_else(|| unsupported("FP8", "use bf16, int8 or int4".into()))?,
            Precision::Fp4 => self.fp4_tflops.ok_or_else(|| {
                let with: Vec<&str> = GPUS.iter().filter(|g| g.fp4_tflops.is_some()).map(|g| g.aliases[0]).collect();
                let here = if self.fp8_tflops.is_some() { "fp8, int4 or bf16" } else { "int4, int8 or bf16" };
                unsupported(
                    "FP4",
                    format!(
                        "FP4 (NVFP4, or MXFP4 on AMD's) runs on the GPUs with FP4 cores ({}); on {} use {here}",
                        with.join(", "),
                        self.name
                    ),
                )
            })?,
            Precision::Bf16 | Precision::Int8 | Precision::Int4 => self.bf16_tflops,
            // W4A8 where FP4 cores are (Blackwell's MXFP4 × MXFP8), W4A16 elsewhere.
            Precision::Mxfp4 => match self.fp8_tflops {
                Some(fp8) if self.runs_w4a8() => fp8,
                _ => self.bf16_tflops,
            },
        };
        Ok(tflops * 1e12)
    }
}
