//! goodput: measure, explain and predict the performance of LLM inference
//! services. The binary is thin: parse, dispatch, print the error chain.

use goodput::{bench, cli, compare, estimate, merge, monitor, plan, report, serve, shell, sweep};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::parse();
    goodput::limits::raise_open_file_limit();
    let threads: Option<usize> = std::env::var("GOODPUT_THREADS").ok().and_then(|v| v.parse().ok());
    let rt = match threads {
        Some(1) => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build(),
        None => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let res = rt.block_on(async {
        match cli.command {
            cli::Command::Bench(a) => bench::bench(*a).await,
            cli::Command::Estimate(a) => estimate::estimate(*a),
            cli::Command::Serve(a) => serve::serve(*a).await,
            cli::Command::Report(a) => report::report(*a),
            cli::Command::Sweep(a) => sweep::sweep(*a).await,
            cli::Command::Plan(a) => plan::plan(*a),
            cli::Command::Monitor(a) => monitor::monitor(*a).await,
            cli::Command::Compare(a) => compare::compare(*a),
            cli::Command::Merge(a) => merge::merge(*a),
            cli::Command::Completions(a) => shell::completions(a),
            cli::Command::Man(a) => shell::man(a),
        }
    });
    // Streams of the embedded server may still be open; do not wait for them.
    rt.shutdown_background();
    match res {
        Ok(code) => code,
        Err(e) => {
            // An error can carry a server's words: masked, and shown as text
            // (no escape sequence of theirs acts on the terminal).
            eprintln!(
                "error: {}",
                goodput_report::escape::terminal(&goodput_core::util::redact::scrub(&format!("{e:#}")))
            );
            ExitCode::from(2)
        }
    }
}
