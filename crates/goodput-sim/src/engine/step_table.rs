//! The check of the step-time model against step times measured on a GPU:
//! reads the table `scripts/gpu-step-times.py` writes (one GPU, TP 1, BF16
//! or FP8 weights, prefill and decode steps of randomly initialised catalog
//! models) and
//! sets each row beside the roofline's [`Roofline::step_time`] for the same
//! batch (docs/simulator.md, "Step times measured on a GPU").

use super::catalog::{ModelSpec, Precision};
use super::config::EngineConfig;
use super::error::Error;
use super::roofline::{BatchShape, Roofline};
use goodput_core::percentile;
use std::fmt::Write as _;

/// The columns the table must have, in any order (others are kept out).
const COLUMNS: [&str; 13] = [
    "gpu",
    "model",
    "phase",
    "batch",
    "tokens",
    "ms",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate",
    "vocab",
];

/// The largest batch or length a row may name: a row past it is refused
/// rather than built into a batch shape of billions of sequences.
const MAX_BATCH: u64 = 1 << 16;
const MAX_TOKENS: u64 = 1 << 22;
/// More than any one GPU draws (a GB200 superchip's board is 2,700 W).
const MAX_WATTS: f64 = 10_000.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `batch` prompts of `tokens` tokens, nothing cached.
    Prefill,
    /// `batch` sequences making one token each after `tokens` cached.
    Decode,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }
}

/// One measured step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// The line of the file it came from.
    pub line: usize,
    pub gpu: String,
    pub model: String,
    /// The weights' precision (the optional `precision` column, bf16 where
    /// it is absent); activations and the KV cache are 16-bit.
    pub precision: Precision,
    pub phase: Phase,
    pub batch: u32,
    pub tokens: u32,
    /// The measured step, milliseconds (the median of the script's runs).
    pub ms: f64,
    /// The GPU's mean power over the step's runs, watts (the optional
    /// `watts` column, written with `--power-s`; empty where not read).
    pub watts: Option<f64>,
}

/// A measured step beside the model's.
#[derive(Debug, Clone, PartialEq)]
pub struct StepComparison {
    pub row: StepRow,
    /// The model's whole step, milliseconds.
    pub model_ms: f64,
    /// Its matrix products and attention alone (the roofline's terms,
    /// without the per-layer, per-step and per-sequence overheads, which
    /// stand for an engine's software and not for the kernels timed here).
    pub roofline_ms: f64,
    /// The power model's watts for the step (docs/simulator.md, "Power and
    /// energy"), its overheads counted at idle.
    pub model_watts: f64,
    /// The power model's watts while the step's kernels run
    /// ([`Roofline::kernel_power`]): the figure to set beside a step timed
    /// back to back, which has no engine's gaps in it.
    pub kernel_watts: f64,
}

impl StepComparison {
    /// (model − measured) / measured.
    pub fn error(&self) -> f64 {
        self.model_ms / self.row.ms - 1.0
    }

    pub fn roofline_error(&self) -> f64 {
        self.roofline_ms / self.row.ms - 1.0
    }

    /// (model's kernel watts − measured) / measured watts, where the row
    /// has its watts.
    pub fn power_error(&self) -> Option<f64> {
        self.row.watts.map(|w| self.kernel_watts / w - 1.0)
    }
}

fn csv_error(line: usize, message: impl Into<String>) -> Error {
    Error::StepTable { line, message: message.into() }
}

/// Parses the table. Lines starting with `#` (the script's provenance) and
/// blank lines are skipped. Every row's model sizes must be the catalog's:
/// a table measured on other sizes would be compared with the wrong model.
pub fn parse_step_table(text: &str) -> Result<Vec<StepRow>, Error> {
    let mut lines = super::validate::csv_lines(text);
    let Some((header_line, header)) = lines.next() else {
        return Err(csv_error(1, format!("the file is empty; expected a header line with {}", COLUMNS.join(","))));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut at = [0usize; COLUMNS.len()];
    for (k, col) in COLUMNS.iter().enumerate() {
        at[k] = names.iter().position(|n| n == col).ok_or_else(|| {
            csv_error(header_line, format!("missing column `{col}`; the header needs {}", COLUMNS.join(",")))
        })?;
    }
    let precision_at = names.iter().position(|n| *n == "precision");
    let column = |name: &str| names.iter().position(|n| *n == name);
    let experts_at = column("experts").zip(column("experts_per_token"));
    let watts_at = column("watts");
    let mut rows = Vec::new();
    for (line, text) in lines {
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(csv_error(line, format!("{} fields where the header has {}", fields.len(), names.len())));
        }
        let field = |k: usize| fields[at[k]];
        let int = |k: usize, max: u64| -> Result<u64, Error> {
            let v: u64 = field(k)
                .parse()
                .map_err(|_| csv_error(line, format!("`{}` is `{}`, not a whole number", COLUMNS[k], field(k))))?;
            if v == 0 || v > max {
                return Err(csv_error(line, format!("`{}` is {v}; it must be 1 to {max}", COLUMNS[k])));
            }
            Ok(v)
        };
        let gpu = field(0).to_string();
        if gpu.is_empty() {
            return Err(csv_error(
                line,
                "the `gpu` column is empty: the script could not tell the GPU from its name; \
                 run it again with --gpu NAME (the catalog's name, e.g. h200)",
            ));
        }
        let model = field(1).to_string();
        let phase = match field(2) {
            "prefill" => Phase::Prefill,
            "decode" => Phase::Decode,
            other => return Err(csv_error(line, format!("phase `{other}`: expected prefill or decode"))),
        };
        let precision = match precision_at.map(|k| fields[k]) {
            None | Some("bf16") => Precision::Bf16,
            Some("fp8") => Precision::Fp8,
            Some(other) => {
                return Err(csv_error(line, format!("precision `{other}`: the script times bf16 or fp8 weights")))
            }
        };
        let batch = int(3, MAX_BATCH)? as u32;
        let tokens = int(4, MAX_TOKENS)? as u32;
        let ms: f64 = field(5)
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| csv_error(line, format!("`ms` is `{}`: expected a positive number", field(5))))?;
        let spec = ModelSpec::lookup(&model).map_err(|e| csv_error(line, e.to_string()))?;
        let expected = [
            spec.num_layers,
            spec.hidden_size,
            spec.num_heads,
            spec.num_kv_heads,
            spec.head_dim,
            spec.intermediate_size,
            spec.vocab_size,
        ];
        for (k, want) in (6..COLUMNS.len()).zip(expected) {
            let got = int(k, u32::MAX as u64)?;
            if got != want as u64 {
                return Err(csv_error(
                    line,
                    format!(
                        "{model} was measured with `{}` {got}, but the catalog's {} has {want}: the table \
                         measured another model; measure the catalog's sizes",
                        COLUMNS[k], spec.name
                    ),
                ));
            }
        }
        // A mixture of experts' experts, where the table has the columns
        // (0 and 0 for a dense model); a table without them timed dense
        // models only.
        let experts = match (experts_at, spec.moe) {
            (Some((e, k)), _) => {
                let number = |at: usize, name: &str| -> Result<u32, Error> {
                    fields[at]
                        .parse()
                        .map_err(|_| csv_error(line, format!("`{name}` is `{}`, not a whole number", fields[at])))
                };
                Some((number(e, "experts")?, number(k, "experts_per_token")?))
            }
            (None, Some(_)) => {
                return Err(csv_error(
                    line,
                    format!("{model} is a mixture of experts, and the table has no `experts` column to check it by"),
                ))
            }
            (None, None) => None,
        };
        let want = spec.moe.map_or((0, 0), |m| (m.num_experts, m.experts_per_token));
        if let Some(got) = experts.filter(|&got| got != want) {
            return Err(csv_error(
                line,
                format!(
                    "{model} was measured with {} experts, {} a token, but the catalog's {} has {} and {}: the \
                     table measured another model",
                    got.0, got.1, spec.name, want.0, want.1
                ),
            ));
        }
        let watts = match watts_at.map(|k| fields[k]) {
            None | Some("") => None,
            Some(w) => Some(w.parse().ok().filter(|v: &f64| v.is_finite() && *v > 0.0 && *v <= MAX_WATTS).ok_or_else(
                || {
                    csv_error(
                        line,
                        format!(
                            "`watts` is `{w}`: expected a number of watts above 0 and at most {MAX_WATTS}, or nothing"
                        ),
                    )
                },
            )?),
        };
        rows.push(StepRow { line, gpu, model, precision, phase, batch, tokens, ms, watts });
    }
    if rows.is_empty() {
        return Err(csv_error(header_line, "the table has a header and no rows"));
    }
    Ok(rows)
}

/// The batch a row measured, as the model counts it (`model`: the row's,
/// whose sliding window, where it has one, the batch carries).
pub fn batch_shape(row: &StepRow, model: &crate::engine::ModelSpec) -> BatchShape {
    let mut b = BatchShape::of_model(model);
    for _ in 0..row.batch {
        match row.phase {
            Phase::Prefill => b.add_prefill(0, row.tokens),
            Phase::Decode => b.add_decode(row.tokens),
        }
    }
    b
}

/// Each row beside the model's step on its GPU and model at its precision
/// (a 16-bit KV cache), TP 1, with the calibration the catalog gives that
/// GPU's family.
pub fn compare(rows: &[StepRow]) -> Result<Vec<StepComparison>, Error> {
    rows.iter()
        .map(|row| {
            let cfg = EngineConfig::from_names(&row.model, &row.gpu, row.precision)
                .map_err(|e| csv_error(row.line, e.to_string()))?;
            let roofline = Roofline::new(&cfg).map_err(|e| csv_error(row.line, e.to_string()))?;
            let shape = batch_shape(row, &cfg.model);
            let parts = roofline.breakdown(&shape);
            let (step, power) = roofline.step_time_and_power(&shape);
            Ok(StepComparison {
                row: row.clone(),
                model_ms: step.as_secs_f64() * 1e3,
                roofline_ms: (parts.gemm + parts.attention).as_secs_f64() * 1e3,
                model_watts: power.watts,
                kernel_watts: roofline.kernel_power(&shape).watts,
            })
        })
        .collect()
}

/// The median |error| of the model's step and of its roofline terms alone,
/// over the comparisons given; `None` for none.
pub fn median_errors(c: &[&StepComparison]) -> Option<(f64, f64)> {
    let median = |f: &dyn Fn(&StepComparison) -> f64| {
        let mut v: Vec<f64> = c.iter().map(|x| f(x).abs()).collect();
        v.sort_by(f64::total_cmp);
        percentile(&v, 50.0)
    };
    Some((median(&|x| x.error())?, median(&|x| x.roofline_error())?))
}

/// The median |error| of the power model over the comparisons whose rows
/// have watts, and how many they are; `None` for none.
pub fn median_power_error(c: &[&StepComparison]) -> Option<(f64, usize)> {
    let mut v: Vec<f64> = c.iter().filter_map(|x| x.power_error()).map(f64::abs).collect();
    v.sort_by(f64::total_cmp);
    Some((percentile(&v, 50.0)?, v.len()))
}

/// The comparison as a text table, a line a row, then the median |error|
/// per GPU, model and phase (and of the power model, where rows have watts).
pub fn render(c: &[StepComparison]) -> String {
    let mut out = String::new();
    let power = c.iter().any(|x| x.row.watts.is_some());
    let _ = write!(
        out,
        "{:<8} {:<15} {:<5} {:<8} {:>6} {:>7} {:>11} {:>11} {:>8} {:>13} {:>8}",
        "gpu", "model", "prec", "phase", "batch", "tokens", "measured ms", "model ms", "error", "roofline ms", "error"
    );
    if power {
        let _ = write!(out, " {:>10} {:>8} {:>9} {:>8}", "measured W", "model W", "kernels W", "error");
    }
    out.push('\n');
    for x in c {
        let r = &x.row;
        let phase = r.phase.name();
        let _ = write!(
            out,
            "{:<8} {:<15} {:<5} {:<8} {:>6} {:>7} {:>11.3} {:>11.3} {:>+7.1}% {:>13.3} {:>+7.1}%",
            r.gpu,
            r.model,
            r.precision.as_str(),
            phase,
            r.batch,
            r.tokens,
            r.ms,
            x.model_ms,
            x.error() * 100.0,
            x.roofline_ms,
            x.roofline_error() * 100.0
        );
        if power {
            match (x.row.watts, x.power_error()) {
                (Some(w), Some(e)) => {
                    let _ =
                        write!(out, " {w:>10.0} {:>8.0} {:>9.0} {:>+7.1}%", x.model_watts, x.kernel_watts, e * 100.0);
                }
                _ => {
                    let _ = write!(out, " {:>10} {:>8.0} {:>9.0} {:>8}", "-", x.model_watts, x.kernel_watts, "-");
                }
            }
        }
        out.push('\n');
    }
    let mut groups: Vec<(String, String, Precision, Phase)> = Vec::new();
    for x in c {
        let key = (x.row.gpu.clone(), x.row.model.clone(), x.row.precision, x.row.phase);
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    let _ = writeln!(
        out,
        "\nmedian |error| (rows): model's step / roofline terms alone{}",
        if power { " / kernels' power (rows with watts)" } else { "" }
    );
    for (gpu, model, precision, phase) in &groups {
        let of: Vec<&StepComparison> = c
            .iter()
            .filter(|x| {
                &x.row.gpu == gpu && &x.row.model == model && x.row.precision == *precision && x.row.phase == *phase
            })
            .collect();
        if let Some((step, roofline)) = median_errors(&of) {
            let _ = writeln!(
                out,
                "{gpu} {model} {precision} {}: {:.1} % / {:.1} % ({}){}",
                phase.name(),
                step * 100.0,
                roofline * 100.0,
                of.len(),
                power_part(&of)
            );
        }
    }
    let all: Vec<&StepComparison> = c.iter().collect();
    if let Some((step, roofline)) = median_errors(&all) {
        let _ =
            writeln!(out, "all: {:.1} % / {:.1} % ({}){}", step * 100.0, roofline * 100.0, c.len(), power_part(&all));
    }
    out
}

fn power_part(c: &[&StepComparison]) -> String {
    median_power_error(c).map_or(String::new(), |(e, n)| format!(" / {:.1} % ({n})", e * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "gpu,model,phase,batch,tokens,ms,runs,cuda_graph,weight_sets,kv_sets,\
                          layers,hidden,heads,kv_heads,head_dim,intermediate,vocab";
    const LLAMA_8B: &str = "32,4096,32,8,128,14336,128256";

    fn row(gpu: &str, phase: &str, batch: u32, tokens: u32, ms: f64) -> String {
        format!("{gpu},llama-3.1-8b,{phase},{batch},{tokens},{ms},5,yes,32,1,{LLAMA_8B}")
    }

    #[test]
    fn a_table_of_the_models_own_steps_compares_at_no_error() {
        // The table's plumbing, not a measurement: rows whose times are the
        // model's own come back at zero error, and each row's shape is the
        // batch it names (a decode of 16 after 1,024 is 16 tokens and 16 ×
        // 1,024 of context; a prefill of 2 × 512 is 1,024 tokens).
        let cfg = EngineConfig::from_names("llama-3.1-8b", "h200", Precision::Bf16).unwrap();
        let roofline = Roofline::new(&cfg).unwrap();
        let shapes = [("decode", 16, 1024), ("decode", 1, 128), ("prefill", 2, 512), ("prefill", 1, 8192)];
        let mut text = format!("# made by the test\n{HEADER}\n");
        for (phase, b, n) in shapes {
            let r = StepRow {
                line: 0,
                gpu: "h200".into(),
                model: "llama-3.1-8b".into(),
                precision: Precision::Bf16,
                phase: if phase == "decode" { Phase::Decode } else { Phase::Prefill },
                batch: b,
                tokens: n,
                ms: 1.0,
                watts: None,
            };
            let ms = roofline.step_time(&batch_shape(&r, &cfg.model)).as_secs_f64() * 1e3;
            text += &row("h200", phase, b, n, ms);
            text += "\n";
        }
        let rows = parse_step_table(&text).unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].line, 3);
        let shape = batch_shape(&rows[0], &cfg.model);
        assert_eq!((shape.tokens, shape.seqs, shape.decode_context), (16, 16, 16 * 1024));
        let shape = batch_shape(&rows[2], &cfg.model);
        assert_eq!((shape.tokens, shape.seqs, shape.prefill_context), (1024, 2, 0));
        let c = compare(&rows).unwrap();
        for x in &c {
            assert!(x.error().abs() < 1e-3, "{x:?}");
            assert!(x.roofline_ms > 0.0 && x.roofline_ms < x.model_ms, "{x:?}");
        }
        let text = render(&c);
        assert!(text.contains("all: 0.0 %"), "{text}");
        assert!(text.contains("h200 llama-3.1-8b bf16 decode: 0.0 %"), "{text}");
    }

    #[test]
    fn a_bad_table_is_refused_with_its_line_and_the_fix() {
        let cases = [
            ("", "line 1: the file is empty"),
            ("gpu,model\n", "missing column `phase`"),
            (&format!("{HEADER}\n"), "a header and no rows"),
            (&format!("{HEADER}\n{}\n", row("", "decode", 1, 128, 1.0)), "run it again with --gpu"),
            (&format!("{HEADER}\n{}\n", row("h200", "both", 1, 128, 1.0)), "phase `both`"),
            (&format!("{HEADER}\n{}\n", row("h200", "decode", 0, 128, 1.0)), "`batch` is 0"),
            (&format!("{HEADER}\n{}\n", row("h200", "decode", 1, 128, -1.0)), "`ms` is `-1`"),
            (&format!("{HEADER}\n{}\n", row("h200", "decode", 1, 128, f64::NAN)), "`ms` is `NaN`"),
            (&format!("{HEADER}\nh200,llama-3.1-8b,decode,1,128,1.0\n"), "6 fields where the header has 17"),
            (
                &format!("{HEADER}\n{}\n", row("h200", "decode", 1, 128, 1.0).replace(",32,4096,", ",16,4096,")),
                "`layers` 16, but the catalog's Llama-3.1-8B has 32",
            ),
            (
                &format!("{HEADER}\n{}\n", row("h200", "decode", 1, 128, 1.0).replace("llama-3.1-8b", "tiny")),
                "unknown model `tiny`",
            ),
            (
                &format!(
                    "{HEADER}\n{}\n",
                    row("h200", "decode", 1, 128, 1.0).replace(",decode,1,", ",decode,99999999,")
                ),
                "`batch` is 99999999; it must be 1 to 65536",
            ),
        ];
        for (text, want) in cases {
            let e = parse_step_table(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.starts_with("step-time table, line "), "{e}");
        }
        let with_precision = HEADER.replace("model,", "model,precision,");
        let fp8 = row("h200", "decode", 1, 128, 1.0).replace("llama-3.1-8b,", "llama-3.1-8b,fp4,");
        let e = parse_step_table(&format!("{with_precision}\n{fp8}\n")).unwrap_err().to_string();
        assert!(e.contains("precision `fp4`: the script times bf16 or fp8 weights"), "{e}");
        // Watts: optional, empty where not read, else a positive number.
        let with_watts = format!("{HEADER},watts");
        let watts = |w: &str| format!("{with_watts}\n{},{w}\n", row("h200", "decode", 1, 128, 1.0));
        assert_eq!(parse_step_table(&watts("")).unwrap()[0].watts, None);
        assert_eq!(parse_step_table(&watts("512.5")).unwrap()[0].watts, Some(512.5));
        for bad in ["-3", "0", "NaN", "lots", "20000"] {
            let e = parse_step_table(&watts(bad)).unwrap_err().to_string();
            assert!(e.contains(&format!("`watts` is `{bad}`: expected a number of watts")), "{bad}: {e}");
        }
        let rows = parse_step_table(&format!("{HEADER}\n{}\n", row("tpu-v9", "decode", 1, 128, 1.0))).unwrap();
        let e = compare(&rows).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("unknown GPU `tpu-v9`"), "{e}");
    }

    #[test]
    fn fp8_rows_compare_with_the_fp8_model() {
        // The precision column picks the model's precision: an FP8 decode
        // reads half the weights, so its model step is shorter, and a row
        // carrying the FP8 model's time compares at no error.
        let with_precision = HEADER.replace("model,", "model,precision,");
        let step = |p: Precision| {
            let cfg = EngineConfig::from_names("llama-3.1-8b", "h100", p).unwrap();
            let mut b = BatchShape::default();
            b.add_decode(1024);
            Roofline::new(&cfg).unwrap().step_time(&b).as_secs_f64() * 1e3
        };
        let (bf16, fp8) = (step(Precision::Bf16), step(Precision::Fp8));
        assert!(fp8 < 0.7 * bf16, "{fp8} {bf16}");
        let line = |p: &str, ms: f64| {
            row("h100", "decode", 1, 1024, ms).replace("llama-3.1-8b,", &format!("llama-3.1-8b,{p},"))
        };
        let text = format!("{with_precision}\n{}\n{}\n", line("fp8", fp8), line("bf16", bf16));
        let rows = parse_step_table(&text).unwrap();
        assert_eq!((rows[0].precision, rows[1].precision), (Precision::Fp8, Precision::Bf16));
        for x in compare(&rows).unwrap() {
            assert!(x.error().abs() < 1e-3, "{x:?}");
        }
    }

    #[test]
    fn a_mixture_of_experts_is_checked_by_its_experts() {
        let header = format!("{HEADER},experts,experts_per_token");
        let qwen = "qwen3-30b-a3b,decode,1,128,1.0,5,yes,13,1,48,2048,32,4,128,768,151936";
        let rows = parse_step_table(&format!("{header}\nh200,{qwen},128,8\n")).unwrap();
        let x = &compare(&rows).unwrap()[0];
        assert!(x.model_ms > 0.0, "{x:?}");
        let e = parse_step_table(&format!("{header}\nh200,{qwen},64,8\n")).unwrap_err().to_string();
        assert!(
            e.contains("measured with 64 experts, 8 a token, but the catalog's Qwen3-30B-A3B has 128 and 8"),
            "{e}"
        );
        let e = parse_step_table(&format!("{HEADER}\nh200,{qwen}\n")).unwrap_err().to_string();
        assert!(e.contains("no `experts` column"), "{e}");
        // A dense model's row says 0 and 0.
        let e = parse_step_table(&format!("{header}\n{},8,2\n", row("h200", "decode", 1, 128, 1.0))).unwrap_err();
        assert!(e.to_string().contains("measured with 8 experts"), "{e}");
    }

    #[test]
    fn the_measured_h200_table() {
        // data/gpu/h200-step-times.csv: 110 steps timed on an H200 with
        // their watts (data/gpu/README.md). What must hold of the model
        // beside a measurement, not a figure fitted to it.
        let rows = parse_step_table(include_str!("../../../../data/gpu/h200-step-times.csv")).unwrap();
        assert_eq!(rows.len(), 110);
        assert!(rows.iter().all(|r| r.gpu == "h200" && r.watts.is_some()));
        let c = compare(&rows).unwrap();
        // A dense model's long prefill keeps the tensor cores busy: the GPU
        // sits at its 700 W cap, and the power model says the TDP. (The
        // script's mixture of experts, its routing unfused, drew 650-690 W.)
        let dense = |x: &&StepComparison| ModelSpec::lookup(&x.row.model).unwrap().moe.is_none();
        let long_prefill = |x: &&StepComparison| x.row.phase == Phase::Prefill && x.row.batch * x.row.tokens >= 8192;
        for x in c.iter().filter(dense).filter(long_prefill) {
            let w = x.row.watts.unwrap();
            assert!((680.0..=705.0).contains(&w), "{x:?}");
            assert!((x.kernel_watts - 700.0).abs() < 1.0, "{x:?}");
        }
        // Within a model, precision and phase, the model orders the steps
        // as the GPU did wherever their times differ by more than a fifth.
        for a in &c {
            for b in &c {
                let same = (a.row.model == b.row.model) && a.row.precision == b.row.precision;
                if same && a.row.phase == b.row.phase && b.row.ms > 1.2 * a.row.ms {
                    assert!(b.model_ms > a.model_ms, "{a:?}\n{b:?}");
                }
            }
        }
        // Where the model stood when the table was measured (docs/
        // simulator.md gives the rows): the step within 20 % at the median
        // (15.4 %), Llama-3.1-70B's within 15 % (12.1 %), the
        // kernels' power within 20 % (15.1 %). A change to the step-time or
        // power model that moves past these says why there.
        let median = |f: &dyn Fn(&StepComparison) -> bool| {
            median_errors(&c.iter().filter(|x| f(x)).collect::<Vec<_>>()).unwrap().0
        };
        assert!(median(&|_| true) < 0.20, "{}", render(&c));
        assert!(median(&|x| x.row.model == "llama-3.1-70b") < 0.15, "{}", render(&c));
        let (power, n) = median_power_error(&c.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(n, 110);
        assert!(power < 0.20, "{}", render(&c));
        let text = render(&c);
        assert!(text.contains("kernels W") && text.contains("/ kernels' power (rows with watts)"), "{text}");
        let all = text.lines().find(|l| l.starts_with("all: ")).unwrap();
        assert!(all.ends_with(&format!("(110) / {:.1} % (110)", power * 100.0)), "{all}");
    }

    #[test]
    fn the_scripts_models_are_the_catalogs() {
        // scripts/gpu-step-times.py keeps its own copy of the sizes (it runs
        // where no Rust is built); a table it made must pass the check above.
        let script = include_str!("../../../../scripts/gpu-step-times.py");
        for name in ["llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b"] {
            let at = script.find(&format!("\"{name}\": dict(")).unwrap_or_else(|| panic!("{name} in the script"));
            let entry = &script[at..at + script[at..].find(')').unwrap()];
            let field = |key: &str| -> u32 {
                // `heads=` is also the end of `kv_heads=`: the key must start a word.
                let at = entry
                    .match_indices(&format!("{key}="))
                    .find(|(i, _)| !entry[..*i].ends_with(|c: char| c == '_' || c.is_ascii_alphanumeric()))
                    .map_or_else(|| panic!("{name}: no {key}"), |(i, _)| i + key.len() + 1);
                entry[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
            };
            let spec = ModelSpec::lookup(name).unwrap();
            let sizes = [
                ("layers", spec.num_layers),
                ("hidden", spec.hidden_size),
                ("heads", spec.num_heads),
                ("kv_heads", spec.num_kv_heads),
                ("head_dim", spec.head_dim),
                ("intermediate", spec.intermediate_size),
                ("vocab", spec.vocab_size),
            ];
            for (key, want) in sizes {
                assert_eq!(field(key), want, "{name} {key}");
            }
            if let Some(moe) = spec.moe {
                assert_eq!((field("experts"), field("top_k")), (moe.num_experts, moe.experts_per_token), "{name}");
            } else {
                assert!(!entry.contains("experts="), "{name}");
            }
        }
    }
}
