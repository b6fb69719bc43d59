//! `goodput serve`: the simulated OpenAI-compatible server on a socket — the
//! engine model in real time (the default), or the fixed-timing profile.

use crate::cli::{ProfileArg, ProgressArg, ServeArgs};
use crate::progress::ServeStatus;
use crate::sim_server::{engine_server, faults, listen, Served};
use anyhow::{bail, Context, Result};
use goodput_sim::connections::ConnectionLimits;
use goodput_sim::fixed::{FixedProfile, FixedServer};
use std::process::ExitCode;
use std::time::Duration;

/// A live status line's source.
type StatusFn = Box<dyn Fn() -> ServeStatus + Send>;

/// How many responses are in flight: what a shutdown finishes.
type LiveFn = Box<dyn Fn() -> u64 + Send>;

/// How long responses in flight get to finish once the server is stopped.
const GRACE_S: u64 = goodput_sim::connections::GRACE.as_secs();

/// A flag of the other profile is refused, not dropped: `--profile engine
/// --ttft 10ms` served the engine's own TTFT, `--profile fixed --gpu h200`
/// fixed timings.
fn other_profiles_flags(a: &ServeArgs) -> Result<()> {
    match a.profile {
        ProfileArg::Engine => {
            if let Some(flag) = a.given.first(FIXED_FLAGS) {
                bail!(
                    "{flag} sets the fixed profile's timing, and the engine profile times each step from its model: \
                     add --profile fixed, or drop {flag}"
                );
            }
        }
        ProfileArg::Fixed => {
            use clap::Args;
            let engine = crate::cli::EngineHwArgs::augment_args(clap::Command::new("engine"));
            let typed = std::iter::once(("--model".to_owned(), "model".to_owned()))
                .chain(engine.get_arguments().filter_map(|arg| {
                    arg.get_long().map(|long| (format!("--{long}"), arg.get_id().as_str().to_owned()))
                }))
                .find(|(_, id)| a.given.has(id));
            if let Some((flag, _)) = typed {
                bail!(
                    "{flag} describes the engine profile, and the fixed profile serves fixed timings (--ttft, \
                     --itl): drop {flag}, or serve --profile engine"
                );
            }
        }
    }
    Ok(())
}

/// The fixed profile's own flags: the flag, and its clap id.
pub(crate) const FIXED_FLAGS: &[(&str, &str)] = &[
    ("--ttft", "ttft"),
    ("--itl", "itl"),
    ("--tokens-per-chunk", "tokens_per_chunk"),
    ("--slow-every", "slow_every"),
    ("--slow-ttft", "slow_ttft"),
    ("--ttft-jitter", "ttft_jitter"),
    ("--jitter-seed", "jitter_seed"),
    ("--write-log", "write_log"),
];

pub async fn serve(a: ServeArgs) -> Result<ExitCode> {
    let served = crate::common::names_of("--served-model-name", a.served_model_name.as_deref())?;
    let mut inputs: Vec<(&str, &std::path::Path)> =
        a.faults.answers.iter().map(|p| ("--answers", p.as_path())).collect();
    inputs.extend(a.hw.calibration.as_deref().map(|p| ("--calibration", p)));
    inputs.extend(crate::output::named_file("--model", &a.model));
    crate::output::distinct_files(&inputs, &[("--write-log", a.write_log.as_deref())])?;
    other_profiles_flags(&a)?;
    let (app, what, status, live) = match a.profile {
        ProfileArg::Engine => engine_app(&a, &served)?,
        ProfileArg::Fixed => fixed_app(&a, &served)?,
    };
    let listener = listen((a.host.as_str(), a.port)).await.map_err(|e| bind_error(&a.host, a.port, e))?;
    let addr = listener.local_addr()?;
    // Taken over before "listening on" is said, so that a stop signal sent
    // once it is seen is caught (it had been taken in the task below, and a
    // signal that came first killed the server outright).
    let signals = crate::interrupt::StopSignals::listen();
    // What goes wrong with connections (the cap reached, accept failing)
    // is said on stderr, whatever the live view.
    let limits = ConnectionLimits {
        log: Some(std::sync::Arc::new(|line: &str| goodput_core::tell!("goodput serve: {line}"))),
        ..ConnectionLimits::default()
    };
    goodput_core::tell!(
        "goodput serve · {what}\nlistening on http://{addr} (Ctrl-C to stop) · at most {} connections, \
         each closed when a request head, or then its body, takes over {} s\nroutes: {}",
        limits.max_connections,
        limits.head_timeout.as_secs(),
        routes_line(),
        // The served names come from the command line or a model's
        // config.json: their control characters are shown escaped, as
        // estimate, plan and report show them.
        what = crate::output::shown(&what)
    );
    let stop = tokio_util::sync::CancellationToken::new();
    let abort = tokio_util::sync::CancellationToken::new();
    let view = show_status(&a, addr, status, &stop);
    tokio::spawn(stop_on_signals(signals, live, stop.clone(), abort.clone()));
    let serving = app.serve(listener, limits, async move { stop.cancelled().await });
    let (res, code) = tokio::select! {
        res = serving => (res, ExitCode::SUCCESS),
        // Dropping the server ends the connections still open.
        () = abort.cancelled() => (Ok(()), ExitCode::from(130)),
    };
    if let Some(v) = view {
        let _ = v.join();
    }
    res.context("serving")?;
    Ok(code)
}

/// Ctrl-C or SIGTERM: once, stop taking requests and give those in flight
/// up to [`GRACE_S`] to finish, saying how many there are; twice, stop now.
/// The second had been ignored and the first said nothing, so a server with
/// live streams seemed to hang for its grace.
async fn stop_on_signals(
    mut signals: crate::interrupt::StopSignals,
    live: LiveFn,
    stop: tokio_util::sync::CancellationToken,
    abort: tokio_util::sync::CancellationToken,
) {
    let Some(name) = signals.next().await else { return };
    let n = live();
    if n == 0 {
        goodput_core::tell!("\nstopping ({name})");
    } else {
        goodput_core::tell!(
            "\nstopping ({name}): finishing {n} live {} for up to {GRACE_S} s (Ctrl-C or SIGTERM again to stop now)",
            if n == 1 { "response" } else { "responses" }
        );
    }
    stop.cancel();
    if let Some(again) = signals.next().await {
        let n = live();
        goodput_core::tell!(
            "stopping now ({again}): {n} live {} cut short",
            if n == 1 { "response" } else { "responses" }
        );
        abort.cancel();
    }
}

/// Why `host:port` cannot be listened on, with the hint its error calls
/// for: the port taken, an address that is not this machine's, a port
/// below 1024 (one hint, about the port, had been given for every error).
fn bind_error(host: &str, port: u16, e: std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    let hint = match e.kind() {
        ErrorKind::AddrInUse => "the port is in use: pick another with --port, or --port 0 for a free one".to_owned(),
        ErrorKind::AddrNotAvailable => format!(
            "{host} is not an address of this machine: use --host 127.0.0.1 for this machine only, or --host 0.0.0.0 \
             for all its addresses"
        ),
        ErrorKind::PermissionDenied if port != 0 && port < 1024 => {
            format!("ports below 1024 need privileges: pick --port {} or above, or --port 0 for a free one", 1024)
        }
        ErrorKind::PermissionDenied => "permission denied: pick another --host or --port".to_owned(),
        _ => "check --host and --port".to_owned(),
    };
    anyhow::anyhow!("cannot bind {host}:{port} ({hint}): {e}")
}

/// What a simulated engine on `gpu` should say when the GPU's family is
/// uncalibrated (it runs on another family's constants), or calibrated on part of
/// what it predicts (CDNA3); `None` for the others or a name the catalog
/// does not know (refused elsewhere).
pub(crate) fn family_warning(gpu: &str) -> Option<String> {
    goodput_sim::engine::accuracy::gpu_note(&goodput_sim::engine::GpuSpec::lookup(gpu).ok()?)
}

/// What a simulated engine of `model` should say when it is a mixture of
/// experts (the engine's throughput of such models is high on the public
/// tables held out); `None` for a dense model or a name the catalog does
/// not know (refused elsewhere).
pub(crate) fn moe_warning(model: &str) -> Option<String> {
    goodput_sim::engine::accuracy::moe_note(&goodput_sim::engine::ModelSpec::lookup(model).ok()?)
}

/// The banner's words for a scheduler other than vLLM's, and SGLang's
/// choice of rank where it is not its default.
fn scheduler_words(cfg: &goodput_sim::engine::EngineConfig) -> String {
    use goodput_sim::engine::SchedulerPolicy;
    let whose = match (cfg.scheduler, cfg.load_balance_words()) {
        (SchedulerPolicy::Vllm, _) => String::new(),
        (SchedulerPolicy::Trtllm, _) => " · TensorRT-LLM's scheduler".into(),
        (SchedulerPolicy::Sglang, None) => " · SGLang's scheduler".into(),
        (SchedulerPolicy::Sglang, Some(m)) => {
            let whose = if cfg.balances_replicas() { "replicas" } else { "ranks" };
            format!(" · SGLang's scheduler ({whose} by {m})")
        }
    };
    let whose = match cfg.scheduler_recv_interval {
        n if n > 1 => format!("{whose} · new requests taken every {n} decode steps"),
        _ => whose,
    };
    let whose = match goodput_core::doc::config::batch_wait_words(
        cfg.batch_wait_timeout_iters,
        cfg.batch_wait_max_tokens_ratio,
    ) {
        Some(words) => format!("{whose} · {words}"),
        None => whose,
    };
    let whose = match cfg.mxfp4_activations {
        Some(a) => format!("{whose} · {}", goodput_core::doc::config::mxfp4_activation_words(&a.to_string())),
        None => whose,
    };
    let whose = match cfg.max_prefill_tokens {
        n if n != goodput_sim::engine::SGLANG_MAX_PREFILL_TOKENS => {
            format!("{whose} · a step's prompts up to {n} tokens past the first")
        }
        _ => whose,
    };
    match cfg.async_scheduling {
        true => format!("{whose} · scheduled a step ahead"),
        false => format!("{whose} · each step scheduled after the last"),
    }
}

/// The simulated engine's app, a line saying what it serves, and its live status.
fn engine_app(a: &ServeArgs, served: &[String]) -> Result<(Served, String, StatusFn, LiveFn)> {
    if a.write_log.is_some() {
        bail!("--write-log logs the fixed profile's writes: add --profile fixed");
    }
    crate::virtual_point::refuse_unused_sizes(&a.hw, a.given.has("tp"), a.given.has("ep"))?;
    let engine = crate::cli::EngineArgs { engine_model: a.model.clone(), hw: a.hw.clone() };
    let cfg = goodput_sim::engine::EngineConfig::try_from(&engine)?;
    if let Some(note) = crate::virtual_point::family_note(&cfg.gpu, a.hw.calibration.as_deref()) {
        goodput_core::tell!("note: {note}");
    }
    if let Some(note) = goodput_sim::engine::accuracy::moe_note(&cfg.model) {
        goodput_core::tell!("note: {note}");
    }
    if let Some(note) = goodput_sim::engine::accuracy::amd_moe_note(&cfg.model, &cfg.gpu) {
        goodput_core::tell!("note: {note}");
    }
    if let Some(note) = goodput_sim::engine::accuracy::mxfp4_kernels_note(&cfg) {
        goodput_core::tell!("note: {note}");
    }
    let server = engine_server(cfg, served, a.speed, a.default_max_tokens, faults(&a.faults)?)?;
    let c = server.config();
    let replicas = match (c.engine.pd, goodput_sim::engine::KvLink::new(&c.engine)) {
        (Some(pd), Some(link)) => format!(
            "{} (KV link {} Gb/s per GPU, {} µs; {} router) {}",
            goodput_core::doc::config::EngineSettings::from(&c.engine)
                .pd
                .map(|s| s.pools_words(c.engine.pool_tp(false), c.engine.pool_ep(false)))
                .unwrap_or_default(),
            link.gbps,
            link.latency.as_secs_f64() * 1e6,
            c.engine.router,
            if pd.names_sizes() { "of " } else { "each " }
        ),
        _ => {
            let router = match (c.engine.dense_controller(), c.engine.router_poll_s) {
                // The server's own balancer in the router's place.
                (Some(b), _) => b.to_string(),
                (None, Some(s)) => format!("{} router, loads polled every {s} s", c.engine.router),
                (None, None) => format!("{} router", c.engine.router),
            };
            match (c.engine.dp, c.engine.engines()) {
                (1, _) => String::new(),
                (dp, n) if n == dp => format!("{dp} replicas ({router}) each "),
                (dp, 1) => format!("{dp} data-parallel ranks in one expert-parallel group · "),
                (dp, n) => format!("{dp} data-parallel ranks in {n} expert-parallel groups ({router}) · "),
            }
        }
    };
    let replicas = format!("{replicas}{}", c.engine.parallel_words());
    let what = format!(
        "engine: {} ({}) on {replicas}{}{} · KV cache {} tokens{} · max {} sequences{} · chat template {} · speed {}× \
         · serving '{}'",
        c.engine.model.name,
        c.engine.precision,
        match c.engine.pd.filter(|pd| pd.names_sizes()) {
            Some(_) => String::new(),
            None => format!("{}× ", c.engine.tp),
        },
        c.engine.gpu.name,
        server.capacity().tokens(),
        // A request lives on one rank of an expert-parallel group.
        match server.request_kv_tokens() {
            rank if rank < server.capacity().tokens() => format!(" ({rank} a rank, the most one request holds)"),
            _ => String::new(),
        },
        server.max_num_seqs(),
        scheduler_words(&c.engine),
        c.engine.chat_template,
        c.speed,
        c.names().collect::<Vec<_>>().join("', '")
    );
    let s = server.clone();
    let status = Box::new(move || {
        let st = s.stats();
        ServeStatus {
            lines: vec![
                format!("running {} · waiting {}", st.running, st.waiting),
                format!(
                    "{} finished · {} aborted · {} preemptions",
                    st.requests_finished, st.requests_aborted, st.preemptions
                ),
                format!(
                    "{} prompt and {} generated tokens · prefix cache {}",
                    st.prompt_tokens,
                    st.generation_tokens,
                    st.prefix_cache_hit_rate().map(|r| format!("{:.1}% hit", r * 100.0)).unwrap_or("-".into())
                ),
            ],
            tokens_total: st.generation_tokens,
            kv: Some(st.kv_usage),
        }
    });
    let s = server.clone();
    let live = Box::new(move || {
        let st = s.stats();
        st.running as u64 + st.waiting as u64
    });
    Ok((Served::Engine(goodput_sim::engine_server::app(server)), what, status, live))
}

/// The fixed profile's app, a line saying what it serves, and its live status.
fn fixed_app(a: &ServeArgs, served: &[String]) -> Result<(Served, String, StatusFn, LiveFn)> {
    // With no --served-model-name the fixed profile answers to any name;
    // with names, to those only (404 for another, as the engine and vLLM).
    let name = served.first().cloned().unwrap_or_else(|| "goodput-fixed".into());
    let profile = FixedProfile {
        model: name.clone(),
        also: served.iter().skip(1).cloned().collect(),
        strict_names: !served.is_empty(),
        ttft: a.ttft,
        itl: a.itl,
        tokens_per_chunk: a.tokens_per_chunk,
        default_max_tokens: a.default_max_tokens,
        slow_every: a.slow_every.zip(a.slow_ttft),
        ttft_jitter: a.ttft_jitter,
        jitter_seed: a.jitter_seed,
        faults: faults(&a.faults)?,
    };
    profile.validate()?;
    let server = match &a.write_log {
        None => FixedServer::new(profile),
        Some(path) => FixedServer::logging_writes(profile, path)
            .with_context(|| format!("cannot write --write-log {}", path.display()))?,
    };
    let s = server.clone();
    let status = Box::new(move || ServeStatus {
        lines: vec![format!("{} requests received", s.counters.requests.load(std::sync::atomic::Ordering::Relaxed))],
        tokens_total: 0,
        kv: None,
    });
    let mut what = format!(
        "fixed timings: TTFT {}, a chunk of {} tokens every {} · serving '{name}'",
        goodput_core::util::duration_text(a.ttft),
        a.tokens_per_chunk,
        goodput_core::util::duration_text(a.itl)
    );
    for (case, rate) in &a.faults.fault {
        what.push_str(&format!(" · --fault {case}:{rate}"));
    }
    let s = server.clone();
    let live = Box::new(move || s.live_responses());
    Ok((Served::Fixed(server), what, status, live))
}

/// The live status: a full-screen view on a terminal, else a line every
/// 10 s while it changes; `Some` holds the view to wait for at the end.
fn show_status(
    a: &ServeArgs,
    addr: std::net::SocketAddr,
    status: StatusFn,
    stop: &tokio_util::sync::CancellationToken,
) -> Option<std::thread::JoinHandle<()>> {
    let tui = match a.progress {
        ProgressArg::Tui => true,
        ProgressArg::Auto => !a.quiet && crate::progress::on_terminal(),
        _ => false,
    };
    let mut view = None;
    if tui {
        view = crate::progress::serve_view(format!(" goodput serve · http://{addr} "), status, stop.clone());
    } else if !a.quiet && a.progress != ProgressArg::None {
        tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            let mut last = String::new();
            let mut tick = tokio::time::interval_at(start + Duration::from_secs(10), Duration::from_secs(10));
            loop {
                tick.tick().await;
                let line = status().lines.join(" · ");
                // Quiet while nothing changes.
                if line != last {
                    goodput_core::tell!("[{:>7.0}s] {line}", start.elapsed().as_secs_f64());
                    last = line;
                }
            }
        });
    }
    view
}

/// Every route both profiles serve, as the start-up banner lists them:
/// generation, then pooling, then the rest. Built from the servers' own
/// route lists, so that a route added there is named here.
fn routes_line() -> String {
    use goodput_sim::openai::{pooling::PoolRoute, Route};
    let generation: Vec<&str> = Route::ALL.iter().map(|r| r.path()).collect();
    let pooling: Vec<&str> = PoolRoute::ALL.iter().map(|r| r.path()).collect();
    format!(
        "{} · {} · /v1/models /api/tags /info /health /metrics /reset_prefix_cache",
        generation.join(" "),
        pooling.join(" ")
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_uncalibrated_family_and_a_checked_part_of_one_are_warned_about() {
        let amd = super::family_warning("mi355x").unwrap();
        assert!(amd.starts_with("MI355X (cdna4) is uncalibrated"), "{amd}");
        let cdna3 = super::family_warning("mi300x").unwrap();
        assert!(cdna3.starts_with("MI300X (cdna3) runs on constants fitted on AMD's offline vLLM runs"), "{cdna3}");
        let blackwell = super::family_warning("b200").unwrap();
        assert!(blackwell.starts_with("B200 (blackwell) runs on constants fitted on TensorRT-LLM's"), "{blackwell}");
        assert!(super::family_warning("h100").is_none());
        assert!(super::family_warning("no-such-gpu").is_none());
    }
}
