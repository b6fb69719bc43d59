//! goodput: measure, explain and predict the performance of LLM inference
//! services. The binary is thin: parse, dispatch, print the error chain.

use goodput::{bench, cli, compare, estimate, merge, monitor, plan, report, serve, shell, sweep};
use std::process::ExitCode;

/// mimalloc, not the system's allocator: it keeps blocks of one size
/// together on pages of their own, so the state of hundreds of streams that
/// a reader thread reaches for once a chunk (each reach slow once the host
/// has run the server in between; see docs/measurement.md) lies on fewer
/// pages. Measured at 1,000 streams: the client's user time 0.6× glibc's,
/// CPU a token 0.77×, peak memory 40–60 MB more (issue 30).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A count from environment variable `name`: unset or empty (a script's
/// `NAME=${X:-}`) is `None`; anything else but a whole number from `min`
/// to `max` is an error that says what it sets.
fn env_count(name: &str, min: usize, max: usize, what: &str) -> Result<Option<usize>, String> {
    let Some(raw) = std::env::var_os(name) else { return Ok(None) };
    let text = raw.to_string_lossy();
    if text.trim().is_empty() {
        return Ok(None);
    }
    match text.trim().parse::<usize>() {
        Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(format!("{name}={text:?} is not a count from {min} to {max} ({what}); set it to one, or unset it")),
    }
}

fn usage_error(message: &str) -> ExitCode {
    goodput_core::tell!("error: {message}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli = cli::parse();
    goodput::limits::raise_open_file_limit();
    // The two tuning knobs of the client's threads, checked before anything runs.
    let threads = match env_count("GOODPUT_THREADS", 1, 1024, "the async runtime's worker threads; 1 runs one thread") {
        Ok(n) => n,
        Err(e) => return usage_error(&e),
    };
    if let Err(e) = env_count("GOODPUT_STREAM_THREADS", 0, 64, "the stream reader threads; 0 turns them off") {
        return usage_error(&e);
    }
    let rt = match threads {
        Some(1) => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build(),
        None => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            goodput_core::tell!("error: cannot start the async runtime: {e}");
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
            // (no escape sequence of theirs acts on the terminal); its own
            // line breaks stay.
            goodput_core::tell!(
                "error: {}",
                goodput_report::escape::terminal_lines(&goodput_core::util::redact::scrub(&format!("{e:#}")))
            );
            ExitCode::from(2)
        }
    }
}
