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
    Cdna3,
}

impl GpuFamily {
    pub const ALL: [GpuFamily; 5] =
        [GpuFamily::Ampere, GpuFamily::Ada, GpuFamily::Hopper, GpuFamily::Blackwell, GpuFamily::Cdna3];

    pub fn as_str(self) -> &'static str {
        match self {
            GpuFamily::Ampere => "ampere",
            GpuFamily::Ada => "ada",
            GpuFamily::Hopper => "hopper",
            GpuFamily::Blackwell => "blackwell",
            GpuFamily::Cdna3 => "cdna3",
        }
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
    /// The datasheet size, read as GiB: the drivers report within about 1 % of
    /// that (an "80 GB" H100 shows 79.6 GiB), closer than decimal GB would be.
    pub memory_gib: f64,
    pub bandwidth_tb_s: f64,
    pub bf16_tflops: f64,
    /// `None` where the tensor cores have no FP8 (A100).
    pub fp8_tflops: Option<f64>,
    /// GPU-to-GPU bandwidth per direction, for tensor-parallel all-reduce:
    /// NVLink or Infinity Fabric where the part has it, else PCIe.
    pub interconnect_gb_s: f64,
}

struct GpuEntry {
    aliases: &'static [&'static str],
    name: &'static str,
    family: GpuFamily,
    memory_gib: f64,
    bandwidth_tb_s: f64,
    bf16_tflops: f64,
    fp8_tflops: Option<f64>,
    interconnect_gb_s: f64,
}

const GPUS: [GpuEntry; 8] = [
    GpuEntry {
        aliases: &["h100-sxm", "h100", "h100-sxm5", "h100-80gb", "h100-sxm-80gb"],
        name: "H100 SXM",
        family: GpuFamily::Hopper,
        memory_gib: 80.0,
        bandwidth_tb_s: 3.35,
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
        interconnect_gb_s: 450.0,
    },
    GpuEntry {
        aliases: &["h100-pcie", "h100-pcie-80gb"],
        name: "H100 PCIe",
        family: GpuFamily::Hopper,
        memory_gib: 80.0,
        bandwidth_tb_s: 2.0,
        bf16_tflops: 756.0,
        fp8_tflops: Some(1513.0),
        interconnect_gb_s: 64.0,
    },
    GpuEntry {
        aliases: &["h200", "h200-sxm", "h200-141gb"],
        name: "H200",
        family: GpuFamily::Hopper,
        memory_gib: 141.0,
        bandwidth_tb_s: 4.8,
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
        interconnect_gb_s: 450.0,
    },
    GpuEntry {
        aliases: &["a100-80gb", "a100", "a100-sxm", "a100-sxm4-80gb"],
        name: "A100 80GB",
        family: GpuFamily::Ampere,
        memory_gib: 80.0,
        bandwidth_tb_s: 2.039,
        bf16_tflops: 312.0,
        fp8_tflops: None,
        interconnect_gb_s: 300.0,
    },
    GpuEntry {
        aliases: &["l40s"],
        name: "L40S",
        family: GpuFamily::Ada,
        memory_gib: 48.0,
        bandwidth_tb_s: 0.864,
        bf16_tflops: 362.0,
        fp8_tflops: Some(733.0),
        interconnect_gb_s: 32.0,
    },
    GpuEntry {
        aliases: &["l4"],
        name: "L4",
        family: GpuFamily::Ada,
        memory_gib: 24.0,
        bandwidth_tb_s: 0.3,
        bf16_tflops: 121.0,
        fp8_tflops: Some(242.5),
        interconnect_gb_s: 32.0,
    },
    GpuEntry {
        aliases: &["b200"],
        name: "B200",
        family: GpuFamily::Blackwell,
        memory_gib: 180.0,
        bandwidth_tb_s: 8.0,
        bf16_tflops: 2250.0,
        fp8_tflops: Some(4500.0),
        interconnect_gb_s: 900.0,
    },
    GpuEntry {
        aliases: &["mi300x"],
        name: "MI300X",
        family: GpuFamily::Cdna3,
        memory_gib: 192.0,
        bandwidth_tb_s: 5.3,
        bf16_tflops: 1307.0,
        fp8_tflops: Some(2615.0),
        interconnect_gb_s: 448.0,
    },
];

impl GpuSpec {
    /// Looks a GPU up by name, case-insensitively (`h100`, `H100-SXM`,
    /// `nvidia-h200`, `a100-80gb`, `mi300x`, …).
    pub fn lookup(name: &str) -> Result<GpuSpec, Error> {
        let mut key = normalise(name);
        for vendor in ["nvidia-", "amd-", "instinct-"] {
            if let Some(rest) = key.strip_prefix(vendor) {
                key = rest.to_string();
            }
        }
        GPUS.iter().find(|g| g.aliases.contains(&key.as_str())).map(GpuSpec::from_entry).ok_or_else(|| {
            Error::UnknownGpu {
                name: name.to_string(),
                known: GPUS.iter().map(|g| g.aliases[0]).collect::<Vec<_>>().join(", "),
            }
        })
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
            interconnect_gb_s: e.interconnect_gb_s,
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

    /// The tensor-core peak a precision runs its matrix products at, in
    /// FLOP/s. Weight-only formats (INT8, INT4) dequantise to 16-bit, so they
    /// run at the BF16 peak.
    pub fn peak_flops(&self, precision: Precision) -> Result<f64, Error> {
        let tflops = match precision {
            Precision::Fp8 => self.fp8_tflops.ok_or_else(|| Error::PrecisionUnsupported {
                gpu: self.name.clone(),
                precision: precision.to_string(),
            })?,
            Precision::Bf16 | Precision::Int8 | Precision::Int4 => self.bf16_tflops,
        };
        Ok(tflops * 1e12)
    }
}
