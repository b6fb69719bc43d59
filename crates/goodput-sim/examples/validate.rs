//! Predicts every row of a reference CSV (validation/public.csv's format)
//! with the simulated engine and prints the residual table.
//!
//! cargo run --release -p goodput-sim --example validate -- FILE.csv
//!     [--calibration CAL.json] [--trt-kv-cache auto|fp8] [--no-stagger]
//!     [--trt-frontend-ms MS|calibration]
//!     [--trt-frontend-us-per-output-token US|calibration]
//!     [--trt-scheduler trtllm|vllm] [--trt-no-chunked-context]
//!     [--mixed-batches yes|no] [--async-scheduling yes|no]
//!     [--mxfp4-activations column|gpu]
//!
//! `--trt-frontend-ms` sets TensorRT-LLM rows' front-end overhead (NIM's
//! 5 ms by default; `calibration` keeps the calibration's 15 ms), and
//! `--trt-frontend-us-per-output-token` the front end's serial work per
//! output token on those served over HTTP (NIM's 65 µs by default;
//! `calibration` keeps the calibration's, none).
//! `--trt-scheduler` picks the scheduler of TensorRT-LLM rows (TensorRT-LLM's
//! own by default, `vllm` to compare) and `--trt-no-chunked-context` turns
//! their chunked context off.
//! `--mixed-batches` runs every row with prompts and decodes in one step
//! (`yes`) or in separate steps (`no`), whatever its `mixed` column says.
//! `--async-scheduling` runs every row with its scheduler a step ahead
//! (`yes`) or not (`no`), whatever its `async_scheduling` column says.
//! `--mxfp4-activations gpu` runs every MXFP4 row on its GPU's kernels
//! (W4A8 on FP4 cores, W4A16 elsewhere), whatever its `mxfp4_activations`
//! column and its engine's own default say; `column`, the default, follows
//! the column, and where it is empty the engine's default
//! (`EngineConfig::default_mxfp4_activations`).
//! `--no-stagger` starts a closed loop's users all at once and counts every
//! request (see docs/simulator.md, "Closed loops").
//! `--coverage [FILE.csv...]` prints what each file covers (its rows'
//! engines, GPUs, models and precisions) and runs nothing;
//! `--glance [FILE.csv...]` runs several files (every one in the
//! repository's data/validation where none is named; on as
//! many threads as there are cores) and prints what each file covers, then
//! one table of each file's median errors by split, load and metric (docs/simulator.md, "Accuracy
//! at a glance").
//!
//! CAL.json is either one set of overrides for every GPU family
//! (`{"eta_kv": 0.6}`) or overrides per family (`{"hopper": {"eta_kv": 0.6}}`).

use goodput_sim::engine::validate::{
    coverage_markdown, glance_markdown, glance_sets, parse_csv, validate, ReferenceRow, ValidationOptions, GLANCE_FILES,
};
use goodput_sim::engine::{Calibration, GpuFamily, KvCacheDtype, SchedulerPolicy};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut files: Vec<String> = Vec::new();
    let mut glance = false;
    let mut coverage = false;
    let mut options = ValidationOptions::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--calibration" => {
                let path = args.next().ok_or("--calibration needs a file")?;
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                options.calibrations = calibrations(&text).map_err(|e| format!("{path}: {e}"))?;
            }
            "--trt-kv-cache" => {
                let v = args.next().ok_or("--trt-kv-cache needs auto or fp8")?;
                options.tensorrt_llm_kv_cache = v.parse::<KvCacheDtype>().map_err(|e| e.to_string())?;
            }
            "--no-stagger" => options.stagger = false,
            "--requests-a-user" => {
                let v = args.next().ok_or("--requests-a-user needs a whole number from 1 to 25")?;
                let n = v.parse::<u32>().map_err(|e| format!("--requests-a-user {v}: {e}"))?;
                if !(1..=25).contains(&n) {
                    return Err(format!("--requests-a-user {n}: give a whole number from 1 to 25"));
                }
                options.requests_a_user = Some(n);
            }
            "--trt-frontend-ms" => {
                let v = args.next().ok_or("--trt-frontend-ms needs a number of milliseconds, or `calibration`")?;
                options.tensorrt_llm_frontend_ms = match v.as_str() {
                    "calibration" => None,
                    ms => Some(ms.parse::<f64>().map_err(|e| format!("--trt-frontend-ms {ms}: {e}"))?),
                };
            }
            "--trt-frontend-us-per-output-token" => {
                let v =
                    args.next().ok_or("--trt-frontend-us-per-output-token needs a number of µs, or `calibration`")?;
                options.tensorrt_llm_frontend_us_per_output_token = match v.as_str() {
                    "calibration" => None,
                    us => Some(us.parse::<f64>().map_err(|e| format!("--trt-frontend-us-per-output-token {us}: {e}"))?),
                };
            }
            "--trt-scheduler" => {
                let v = args.next().ok_or("--trt-scheduler needs vllm or trtllm")?;
                options.tensorrt_llm_scheduler = v.parse::<SchedulerPolicy>().map_err(|e| e.to_string())?;
            }
            "--trt-no-chunked-context" => options.tensorrt_llm_chunked_context = false,
            "--sglang-scheduler" => {
                let v = args.next().ok_or("--sglang-scheduler needs sglang or vllm")?;
                options.sglang_scheduler = v.parse::<SchedulerPolicy>().map_err(|e| e.to_string())?;
            }
            "--mixed-batches" | "--async-scheduling" => {
                let on = match args.next().as_deref() {
                    Some("yes") => true,
                    Some("no") => false,
                    _ => return Err(format!("{arg} needs yes or no")),
                };
                match arg.as_str() {
                    "--mixed-batches" => options.mixed_batches = Some(on),
                    _ => options.async_scheduling = Some(on),
                }
            }
            "--mxfp4-activations" => match args.next().as_deref() {
                Some("column") => options.mxfp4_activations_column = true,
                Some("gpu") => options.mxfp4_activations_column = false,
                _ => return Err("--mxfp4-activations needs column (each row's, the default) or gpu (every MXFP4 row on its GPU's kernels: W4A8 on FP4 cores)".into()),
            },
            "--glance" => glance = true,
            "--coverage" => coverage = true,
            _ if !arg.starts_with("--") => files.push(arg),
            _ => return Err(format!("unexpected argument `{arg}`")),
        }
    }
    const USAGE: &str = "usage: validate FILE.csv [--calibration CAL.json] [--trt-kv-cache auto|fp8] [--no-stagger] [--requests-a-user N] [--trt-frontend-ms MS|calibration] [--trt-frontend-us-per-output-token US|calibration] [--trt-scheduler trtllm|vllm] [--trt-no-chunked-context] [--sglang-scheduler sglang|vllm] [--mixed-batches yes|no] [--async-scheduling yes|no] [--mxfp4-activations column|gpu], or validate --glance|--coverage [FILE.csv...] with the same options";
    if glance || coverage {
        if files.is_empty() {
            // The repository's own files, wherever it is run from.
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/validation");
            files = GLANCE_FILES.iter().map(|f| dir.join(f).to_string_lossy().into_owned()).collect();
        }
        let sets =
            files.iter().map(|path| Ok((file_name(path), read_rows(path)?))).collect::<Result<Vec<_>, String>>()?;
        print!("{}", coverage_markdown(&sets));
        if glance {
            print!("\n{}", glance_markdown(&glance_sets(&sets, &options).map_err(|e| e.to_string())?));
        }
        return Ok(());
    }
    let [path] = files.as_slice() else {
        return Err(format!("{USAGE} (one file; --glance takes several)"));
    };
    let report = validate(&read_rows(path)?, &options).map_err(|e| e.to_string())?;
    print!("{}{}", report.to_markdown(), report.glance_section(&file_name(path)));
    Ok(())
}

/// A path's last part, which names its file's lines in the glance.
fn file_name(path: &str) -> String {
    Path::new(path).file_name().map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn read_rows(path: &str) -> Result<Vec<ReferenceRow>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    parse_csv(&text).map_err(|e| format!("{path}: {e}"))
}

fn calibrations(text: &str) -> Result<std::collections::BTreeMap<GpuFamily, Calibration>, String> {
    GpuFamily::ALL
        .into_iter()
        .map(|family| Calibration::for_family_from_json(family, text).map(|c| (family, c)).map_err(|e| e.to_string()))
        .collect()
}
