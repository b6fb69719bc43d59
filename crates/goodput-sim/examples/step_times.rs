//! Sets step times measured on a GPU (`scripts/gpu-step-times.py`) beside
//! the engine's step-time model and prints the errors.
//!
//! cargo run --release -p goodput-sim --example step_times -- FILE.csv

use goodput_sim::engine::step_table::{compare, parse_step_table, render};
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: step_times FILE.csv (a table written by scripts/gpu-step-times.py)");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let compared = match parse_step_table(&text) {
        Ok(rows) => compare(&rows),
        Err(e) => Err(e),
    };
    match compared {
        Ok(c) => {
            print!("{}", render(&c));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
