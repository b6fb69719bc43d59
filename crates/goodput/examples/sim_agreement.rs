//! The simulator's agreement check in a release build: a bench run over HTTP
//! against the engine server and an estimate in virtual time, with the same
//! model (Llama-3.1-8B BF16 on an H100), GPU and load, for the open-loop and
//! closed-loop and session plans of tests/integration/sim_agreement.rs, with every figure's error.
//!
//! cargo run --release -p goodput --example sim_agreement [-- SPEED]
//!
//! SPEED (default 1) runs the engine server that many times faster than real
//! time; the bench's figures are scaled back to simulated time.

#[path = "../tests/integration/support/agreement.rs"]
mod agreement;

use agreement::{bench, estimate, Plan};
use goodput_sim::engine::{EngineConfig, Precision};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let speed = match std::env::args().nth(1).map(|s| s.parse::<f64>()) {
        None => 1.0,
        Some(Ok(s)) if s.is_finite() && s > 0.0 => s,
        Some(_) => {
            eprintln!("usage: sim_agreement [SPEED], SPEED a positive number (1 is real time)");
            return ExitCode::FAILURE;
        }
    };
    let cfg = match EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("Llama-3.1-8B BF16 on H100, engine server at {speed}x real time");
    for (name, plan) in [
        ("open loop, 8 req/s", Plan::open_loop(speed)),
        ("closed loop, 16 users", Plan::closed_loop(speed)),
        ("sessions, 8 users, 3 turns, 300 ms think time", Plan::sessions(speed)),
    ] {
        let predicted = estimate(&cfg, &plan);
        let measured = bench(&cfg, &plan).await;
        let unit = if plan.turns.is_some() { "sessions" } else { "requests" };
        println!("\n{name} ({} {unit} after {} warm-up)", plan.requests, plan.warmup);
        println!("  {:<22} {:>10} {:>10} {:>8}", "", "bench", "estimate", "error");
        let rows = [
            ("TTFT p50 (ms)", measured.ttft_p50_ms, predicted.ttft_p50_ms),
            ("TPOT p50 (ms)", measured.tpot_p50_ms, predicted.tpot_p50_ms),
            ("output tokens/s", measured.output_tokens_per_s, predicted.output_tokens_per_s),
        ];
        for ((label, m, p), (_, err)) in rows.into_iter().zip(measured.errors(&predicted)) {
            println!("  {label:<22} {m:>10.2} {p:>10.2} {:>+7.2}%", err * 100.0);
        }
    }
    ExitCode::SUCCESS
}
