//! How much faster than real time the virtual-time engine runs: Llama-3.1-8B
//! BF16 on one H100, 256 concurrent users, 1024 tokens in and 256 out,
//! 10,000 requests.
//!
//! cargo run --release -p goodput-sim --example estimate_speed
//!
//! `-- --pp N`, `--ep N --dp N` and `--model NAME` time the pipeline- and
//! expert-parallel paths on the same load (e.g. `--model qwen3-30b-a3b
//! --ep 8 --dp 8`), and `--async-scheduling` the scheduler a step ahead.

use goodput_sim::engine::{simulate, EngineConfig, Precision, VirtualLoad, VirtualRequest};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let count = |name: &str| flag(name).map_or(Ok(1), |v| v.parse::<u32>().map_err(|e| format!("{name} {v}: {e}")));
    let model = flag("--model").unwrap_or_else(|| "llama-3.1-8b".into());
    let cfg = EngineConfig::from_names(&model, "h100", Precision::Bf16).map_err(|e| e.to_string()).and_then(|mut c| {
        (c.pp, c.ep, c.dp) = (count("--pp")?, count("--ep")?, count("--dp")?);
        c.async_scheduling = args.iter().any(|a| a == "--async-scheduling");
        c.validate().map_err(|e| e.to_string())?;
        Ok(c)
    });
    let cfg = match cfg {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let load = VirtualLoad::closed_loop(vec![VirtualRequest::new(1024, 256); 10_000], 256);
    let start = Instant::now();
    let run = match simulate(&cfg, &load) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let wall = start.elapsed();
    let simulated = run.engine.makespan;
    let tokens: u64 = run.records.iter().map(|r| r.output_tokens).sum();
    println!("requests:        {}", run.records.len());
    println!("engine steps:    {}", run.engine.steps);
    println!("mean batch:      {:.1} sequences", run.engine.mean_batch_seqs);
    println!("throughput:      {:.0} output tokens/s (simulated)", tokens as f64 / simulated.as_secs_f64());
    println!("wall time:       {:.3} s", wall.as_secs_f64());
    println!("simulated time:  {:.1} s", simulated.as_secs_f64());
    println!("speed:           {:.0}x real time", simulated.as_secs_f64() / wall.as_secs_f64());
    ExitCode::SUCCESS
}
