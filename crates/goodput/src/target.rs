//! The server a run loads: the embedded simulator started when there is no
//! `--url`, the model found, the server waited for, and the client built.

use crate::cli::{EngineArgs, ProfileArg, SimArgs, TargetArgs};
use anyhow::{anyhow, bail, Context, Result};
use goodput_core::doc::config::{ClientSettings, EmbeddedServer};
use goodput_core::Target;
use goodput_load::client::{
    error_chain, join_url, key_header_overridden, normalize_base, request_headers, secrets_of, Cancellation,
};
use goodput_load::{Api, BodyOptions, Client, ClientConfig, KeyHeader, TokenCounter};
use goodput_sim::fixed::{FixedProfile, FixedServer};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::{CancellationToken, DropGuard};

/// A reachable target: the URL, the model to ask for, and the client.
pub struct HttpTarget {
    /// The root URL as shown and written: its query's values masked.
    pub base: String,
    /// The root URL requests are sent to, query and all (never shown).
    pub root: String,
    /// The model(s) asked for, as shown and written: secrets masked (the
    /// client sends the name as given or listed).
    pub model: String,
    pub embedded: bool,
    pub client: Arc<Client>,
    /// `--max-buffer`: the most one answer may make the client hold, the
    /// scrapes' too.
    pub max_buffer: usize,
    /// The `client` block of the run's config.
    pub config: ClientSettings,
    /// The headers a probe sends (the key's among them), for the hints
    /// that ask the server again after a run.
    probe_headers: Vec<(String, String)>,
    /// Stops the embedded server when dropped.
    _server: Option<Box<Embedded>>,
}

/// The embedded server, on a runtime of its own with one worker thread, as a
/// real server would be in a process of its own: its work (the simulated
/// engine's steps, its writes) never holds up the client's reads, so the
/// client's read lag is the client's alone.
struct Embedded {
    rt: Option<tokio::runtime::Runtime>,
    stop: Option<DropGuard>,
}

impl Embedded {
    /// Starts the server `sim` describes; its address once it listens.
    /// `models` are the names it serves (bench's `--model` list), the
    /// engine's own name when empty.
    async fn start(sim: &SimArgs, models: Vec<String>) -> Result<(Embedded, std::net::SocketAddr)> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("goodput-embedded")
            .enable_all()
            .build()
            .context("cannot start the embedded server's runtime")?;
        let stop = CancellationToken::new();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (sim, s) = (sim.clone(), stop.clone());
        rt.spawn(async move {
            let started = async {
                // Built here so that the engine's own task runs on this runtime.
                let app = embedded_app(&sim, &models)?;
                let listener = crate::sim_server::listen("127.0.0.1:0").await.context("binding a loopback port")?;
                let addr = listener.local_addr()?;
                anyhow::Ok((app, listener, addr))
            };
            match started.await {
                Ok((app, listener, addr)) => {
                    let _ = tx.send(Ok(addr));
                    let limits = goodput_sim::connections::ConnectionLimits::default();
                    let _ = app.serve(listener, limits, async move { s.cancelled().await }).await;
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
        let embedded = Embedded { rt: Some(rt), stop: Some(stop.drop_guard()) };
        let addr = rx.await.map_err(|_| anyhow!("the embedded server stopped before it listened"))??;
        Ok((embedded, addr))
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        drop(self.stop.take());
        // Inside the client's runtime a runtime may not wait for its tasks.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The embedded simulated engine's configuration.
fn embedded_engine(sim: &SimArgs) -> Result<goodput_sim::engine::EngineConfig> {
    let (engine, ep_typed) = embedded_engine_args(sim)?;
    crate::virtual_point::refuse_unused_sizes(&engine.hw, sim.given.has("sim_tp"), ep_typed).map_err(as_sim_flags)?;
    goodput_sim::engine::EngineConfig::try_from(&engine).map_err(as_sim_flags)
}

/// `--sim-engine`'s words parsed as `goodput serve`'s engine flags are.
#[derive(clap::Parser)]
#[command(name = "--sim-engine", no_binary_name = true, disable_help_flag = true, disable_version_flag = true)]
struct SimEngineFlags {
    #[command(flatten)]
    hw: crate::cli::EngineHwArgs,
}

/// The embedded engine's flags: the `--sim-*` ones, and `--sim-engine`'s
/// for the rest; and whether `--ep` was among them.
fn embedded_engine_args(sim: &SimArgs) -> Result<(EngineArgs, bool)> {
    use clap::{CommandFactory, FromArgMatches};
    let Some(text) = sim.sim_engine.as_deref() else { return Ok((EngineArgs::from(sim), false)) };
    let words = shlex::split(text).ok_or_else(|| {
        anyhow!("--sim-engine {text:?} does not split into words (an unclosed quote?): quote it as a shell would")
    })?;
    // A flag of serve's that has a `--sim-*` twin is given as the twin.
    for word in words.iter().filter(|w| w.starts_with("--")) {
        let name = word.split('=').next().unwrap_or(word);
        let twin = SIM_ENGINE_FLAGS
            .iter()
            .map(|(f, _)| *f)
            .filter(|f| *f != "--sim-engine")
            .find(|f| f.strip_prefix("--sim-").is_some_and(|plain| name.strip_prefix("--") == Some(plain)));
        if let Some(sim_flag) = twin {
            bail!("--sim-engine sets {name}, which the embedded engine takes as {sim_flag}: give {sim_flag} instead");
        }
    }
    let matches = SimEngineFlags::command().try_get_matches_from(&words).map_err(|e| {
        let said = e.render().to_string();
        let first = said.lines().next().unwrap_or("not engine flags").trim_start_matches("error: ").to_owned();
        anyhow!("--sim-engine {text:?}: {first}; it takes the engine flags of `goodput serve --profile engine` (--pp, --ep, --spec-tokens, --max-num-seqs, --scheduler, …)")
    })?;
    let parsed = SimEngineFlags::from_arg_matches(&matches).map_err(|e| anyhow!("--sim-engine {text:?}: {e}"))?;
    let ep_typed = matches.value_source("ep") == Some(clap::parser::ValueSource::CommandLine);
    Ok((sim.engine_over(parsed.hw), ep_typed))
}

/// The GPUs a run's price is paid for when neither --gpus nor a config
/// file gives them: the embedded simulated engine's (--sim-tp × --sim-dp, or
/// its --sim-pd pools), else 1 (a server at --url, or the fixed profile).
pub fn default_gpus(t: &TargetArgs, sim: &SimArgs, judge: &crate::cli::JudgeArgs) -> Result<u32> {
    if t.url.is_some() || sim.sim_profile != ProfileArg::Engine {
        return Ok(1);
    }
    check_sim_flags(t, sim)?;
    let engine = embedded_engine(sim)?;
    // Another count would price GPUs the engine does not run on, as
    // estimate refuses it.
    crate::estimate::refuse_other_gpus_named(judge, &engine, "--sim-")?;
    Ok(engine.gpus())
}

/// An error about the embedded server's settings, naming the `--sim-*`
/// flags that were typed (`--sim-tp 3`) where the engine names its own
/// (`--tp 3 does not divide …`).
fn as_sim_flags(e: anyhow::Error) -> anyhow::Error {
    let mut text = format!("{e:#}");
    let flags = SIM_ENGINE_FLAGS.iter().chain(SIM_FIXED_FLAGS).map(|(f, _)| *f);
    for sim_flag in flags {
        let plain = sim_flag.replacen("--sim-", "--", 1);
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find(&plain) {
            let after = &rest[at + plain.len()..];
            let whole = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-');
            out.push_str(&rest[..at]);
            out.push_str(if whole { sim_flag } else { &plain });
            rest = after;
        }
        out.push_str(rest);
        text = out;
    }
    anyhow::anyhow!(text)
}

/// The `--sim-*` flags that the server in use reads, and no others: a
/// server at `--url` reads none, the engine profile not the fixed
/// profile's timings, the fixed profile not the engine's. Each was dropped
/// in silence (`--sim-ttft 10ms` on the engine, `--sim-gpu h200` on the
/// fixed profile).
fn check_sim_flags(t: &TargetArgs, sim: &SimArgs) -> Result<()> {
    let given = &sim.given;
    if t.url.is_some() {
        if let Some(flag) = sim_flag_typed(given) {
            bail!("{flag} sets up the embedded simulator, and --url loads a server of its own: drop {flag}, or --url");
        }
        return Ok(());
    }
    match sim.sim_profile {
        ProfileArg::Engine => {
            if let Some(flag) = given.first(SIM_FIXED_FLAGS) {
                bail!(
                    "{flag} sets the fixed profile's timing, and the embedded engine times each step from its model: \
                     add --sim-profile fixed, or drop {flag}"
                );
            }
        }
        ProfileArg::Fixed => {
            if let Some(flag) = given.first(SIM_ENGINE_FLAGS) {
                bail!(
                    "{flag} describes the embedded engine, and --sim-profile fixed serves fixed timings (--sim-ttft, \
                     --sim-itl): drop {flag}, or the fixed profile"
                );
            }
        }
    }
    Ok(())
}

/// The first flag typed of those that set up the embedded simulator
/// (`--sim-profile` and either profile's), for a command that starts none.
pub(crate) fn sim_flag_typed(given: &crate::cli::Given) -> Option<&'static str> {
    given.first(SIM_FIXED_FLAGS).or(given.first(SIM_ENGINE_FLAGS)).or(given.first(&[("--sim-profile", "sim_profile")]))
}

/// The embedded fixed profile's flags: the flag, and its clap id.
pub(crate) const SIM_FIXED_FLAGS: &[(&str, &str)] =
    &[("--sim-ttft", "sim_ttft"), ("--sim-itl", "sim_itl"), ("--sim-tokens-per-chunk", "sim_tokens_per_chunk")];

/// The embedded engine's flags: the flag, and its clap id.
pub(crate) const SIM_ENGINE_FLAGS: &[(&str, &str)] = &[
    ("--sim-model", "sim_model"),
    ("--sim-gpu", "sim_gpu"),
    ("--sim-precision", "sim_precision"),
    ("--sim-tp", "sim_tp"),
    ("--sim-dp", "sim_dp"),
    ("--sim-router", "sim_router"),
    ("--sim-internal-lb", "sim_internal_lb"),
    ("--sim-api-server-count", "sim_api_server_count"),
    ("--sim-pd", "sim_pd"),
    ("--sim-chat-template", "sim_chat_template"),
    ("--sim-engine", "sim_engine"),
];

/// With no `--url`, on the embedded simulated engine: refuses requests its
/// model's context cannot hold before the run, as `estimate` does (each
/// would be answered 400).
pub fn check_embedded_context(t: &TargetArgs, sim: &SimArgs, workload: &goodput_load::Workload) -> Result<()> {
    check_sim_flags(t, sim)?;
    if t.url.is_some() || sim.sim_profile != ProfileArg::Engine {
        return Ok(());
    }
    let other = format!("the embedded simulated engine serves {}; --sim-model picks another", sim.sim_model);
    crate::virtual_point::check_context(
        &embedded_engine(sim)?,
        workload,
        crate::virtual_point::prompt_kind(t.api),
        &other,
    )
}

/// The embedded server's app: the simulated engine or the fixed profile.
fn embedded_app(sim: &SimArgs, models: &[String]) -> Result<crate::sim_server::Served> {
    Ok(match sim.sim_profile {
        ProfileArg::Engine => {
            let cfg = embedded_engine(sim)?;
            let server = crate::sim_server::engine_server(cfg, models, 1.0, 128, Default::default())?;
            crate::sim_server::Served::Engine(goodput_sim::engine_server::app(server))
        }
        ProfileArg::Fixed => {
            let profile = FixedProfile {
                ttft: sim.sim_ttft,
                itl: sim.sim_itl,
                tokens_per_chunk: sim.sim_tokens_per_chunk,
                ..FixedProfile::default()
            };
            profile.validate().map_err(|e| as_sim_flags(e.into()))?;
            crate::sim_server::Served::Fixed(FixedServer::new(profile))
        }
    })
}

impl HttpTarget {
    /// The hint for a run whose every request failed with an HTTP status,
    /// as the checks before a run give when `--model` is not given (with
    /// it, the model list is never asked for, and the run had said nothing):
    /// 401 or 403, the key refused or missing (the flags that send one; never
    /// the key); 404, the models the server does serve when it lists them
    /// and the run's is not one, or, when the API's model list does not
    /// answer, the API whose list does (Ollama's `/api/tags`: `--api
    /// ollama-chat`), found as the checks before a run find it.
    pub async fn all_failed_hint(&self, result: &goodput_core::RunResult) -> Option<String> {
        let q = &result.summary.requests;
        // Every failure an HTTP status, or the sample (the earliest) speaks
        // for none of the others (one 401 among timeouts had read "every
        // request was answered HTTP 401").
        if self.embedded || q.completed > 0 || q.errors_by_kind.get("http_status") != Some(&q.failed) {
            return None;
        }
        let sample = q.error_samples.get("http_status")?;
        let http = self.client.http();
        if let Some(status) = ["401", "403"].into_iter().find(|c| sample.starts_with(&format!("HTTP {c}"))) {
            return Some(format!(
                "every request was answered HTTP {status}: the server {}; a server that takes its credentials \
                 another way takes them with --header 'NAME: VALUE'",
                key_advice(&self.probe_headers)
            ));
        }
        if !sample.starts_with("HTTP 404") {
            return None;
        }
        let api = self.client.api();
        let Some(served) = served_models(http, &self.root, api, &self.probe_headers, self.max_buffer).await else {
            // The API's own list does not answer either: another API's may.
            let other = other_api(http, &self.root, api, &self.probe_headers).await?;
            return Some(format!("the server answered 404 to every request (--api {}), and {other}", api.as_str()));
        };
        // Compared as shown: the run's model is kept masked.
        let served: Vec<String> = served.iter().map(|s| goodput_core::util::redact::scrub(s).into_owned()).collect();
        let asked: Vec<&str> = self.model.split(',').filter(|m| !served.iter().any(|s| s == m)).collect();
        (!asked.is_empty()).then(|| {
            format!(
                "the server answered 404 to every request, and serves {}: --model {} is not among them",
                goodput_report::escape::terminal(&served.join(", ")),
                goodput_report::escape::terminal(&asked.join(","))
            )
        })
    }

    pub fn target(&self) -> Target {
        Target {
            url: self.base.clone(),
            model: self.model.clone(),
            api: self.client.api().as_str().into(),
            embedded: self.embedded,
            server: self.client.server_header(),
        }
    }
}

/// Starts the embedded server when there is no --url, finds the model, and
/// builds the client.
pub async fn connect(
    t: &TargetArgs,
    sim: &SimArgs,
    tokenizer: Option<Arc<TokenCounter>>,
    ignore_eos: bool,
    cancel: Option<Cancellation>,
    quality: goodput_load::QualityOptions,
) -> Result<HttpTarget> {
    // Several models, comma-separated, spread the requests over them; the
    // embedded server serves those it is given.
    let named = crate::common::names_of("--model", t.model.as_deref())?;
    if let Some(u) = &t.url {
        check_root(u)?;
    }
    let (base, server) = match &t.url {
        // Credentials in the URL go in a header, never into anything written.
        Some(u) => (normalize_base(&goodput_core::util::redact::strip_userinfo(u)), None),
        None => {
            let (server, addr) = Embedded::start(sim, named.clone()).await?;
            (format!("http://{addr}"), Some(Box::new(server)))
        }
    };
    let extra = extra_body(t.extra_body.as_deref())?;
    let api = t.api;
    one_choice(api, &extra)?;
    let key_header = t.key_header.resolve(api, &base);
    if ignore_eos && !api.forces_length() {
        bail!(
            "--ignore-eos: the {} API has no field that forces the output length. Leave it out (lengths then \
             follow the model; --output-tokens still caps them), pass a server's own field with --extra-body \
             where it has one, or load its OpenAI route (--api chat or completions) to force lengths",
            api.as_str()
        );
    }
    let probe = Client::new(ClientConfig::probe(base.clone(), t.timeout), None)?;
    if let Some(name) = key_header_overridden(t.api_key.as_deref(), key_header, &t.header) {
        goodput_core::tell!(
            "warning: --header {name} and --api-key both set {name}: the --header is sent, the key is not"
        );
    }
    let extra_headers = with_url_credentials(t, api, key_header)?;
    let headers = request_headers(api, t.api_key.as_deref(), key_header, &extra_headers)?;
    // Whatever a server echoes of these never reaches stderr or a file.
    let url = t.url.as_deref().unwrap_or("");
    goodput_core::util::redact::set_global(secrets_of(t.api_key.as_deref(), &headers, &extra_headers, url));
    if let (Some(wait), None) = (t.wait_ready, &server) {
        wait_ready(probe.http(), &base, api, &headers, wait).await?;
    }
    let models = if named.is_empty() {
        vec![discover_model(probe.http(), &base, api, &headers, t.max_buffer).await?]
    } else {
        named
    };
    let model = models.join(",");
    let body = BodyOptions {
        api,
        model: models[0].clone(),
        models: if models.len() > 1 { models.clone() } else { Vec::new() },
        // A pooling route answers whole.
        stream: !t.no_stream && !api.pools(),
        include_usage: !t.no_usage,
        ignore_eos,
        extra: extra.clone(),
        embed_batch: t.embed_batch.unwrap_or(1),
        rerank_docs: t.rerank_docs.unwrap_or(1),
    };
    let client = Client::new(
        ClientConfig {
            base_url: base.clone(),
            api_key: t.api_key.clone(),
            body,
            timeout: t.timeout,
            transport: t.transport,
            stamps: t.stamp,
            key_header,
            headers: extra_headers,
            cancel,
            max_buffer: t.max_buffer,
        },
        tokenizer,
    )?
    .with_quality(quality);
    let embedded = server.is_some();
    let shown = goodput_core::util::redact::redact_url(&base);
    // The name is sent as the list gave it, and shown and written masked:
    // a server may name its model after the key it was sent.
    let model = goodput_core::util::redact::scrub(&model).into_owned();
    let config = client_settings(t, sim, &client, Settled { base: &shown, model: &model, key_header, extra, embedded });
    let max_buffer = t.max_buffer;
    Ok(HttpTarget {
        base: shown,
        root: base,
        model,
        embedded,
        client: Arc::new(client),
        max_buffer,
        config,
        probe_headers: headers,
        _server: server,
    })
}

/// The API routes goodput adds to `--url` itself: a `--url` that ends in
/// one names an endpoint, not the server's root.
const ROUTES: [&str; 13] = [
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/messages",
    "/v1/models",
    "/chat/completions",
    "/completions",
    "/api/chat",
    "/api/generate",
    "/generate_stream",
    "/generate",
    "/completion",
    "/metrics",
    "/health",
];

/// A `--url` with a fragment, refused before the root is normalised, so
/// that the message echoes the path as given (the client's own check sees
/// `/v1` gone), the fragment masked.
pub(crate) fn refuse_fragment(url: &str) -> Result<()> {
    if url.contains('#') {
        return Err(
            goodput_load::error::ClientError::Fragment { url: goodput_core::util::redact::redact_url(url) }.into()
        );
    }
    Ok(())
}

/// Refuses a `--url` that names an endpoint (`…/v1/chat/completions`):
/// goodput adds the API's path, so it would send to the path twice.
fn check_root(url: &str) -> Result<()> {
    refuse_fragment(url)?;
    let path_end = url.find(['?', '#']).unwrap_or(url.len());
    let path = url[..path_end].trim_end_matches('/');
    let Some(scheme_end) = path.find("://").map(|i| i + 3) else { return Ok(()) };
    let Some(route) = ROUTES.iter().find(|r| path[scheme_end..].ends_with(*r)) else { return Ok(()) };
    let root = &path[..path.len() - route.len()];
    bail!(
        "--url is the server's root, not an endpoint: {} ends in {route}, which goodput adds itself (--api picks \
         the route); give --url {}",
        goodput_core::util::redact::redact_url(url),
        goodput_core::util::redact::redact_url(if root.ends_with("://") { path } else { root })
    )
}

/// `--extra-body` as the JSON object it must be.
fn extra_body(given: Option<&str>) -> Result<serde_json::Map<String, Value>> {
    Ok(match given {
        Some(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            Ok(_) => bail!("--extra-body must be a JSON object, e.g. '{{\"temperature\":0}}'"),
            Err(e) => bail!("--extra-body is not valid JSON: {e}"),
        },
        None => Default::default(),
    })
}

/// `--extra-body` asking an OpenAI route for several answers a request
/// (`"n"`) is refused: their chunks come interleaved in one stream, and
/// goodput times one answer a request (it would merge them, halving ITL and
/// TPOT).
fn one_choice(api: Api, extra: &serde_json::Map<String, Value>) -> Result<()> {
    let Some(n) = extra.get("n").filter(|n| !n.is_null() && n.as_f64() != Some(1.0)) else { return Ok(()) };
    if matches!(api, Api::Chat | Api::Completions) {
        bail!(
            "--extra-body asks for \"n\": {n} answers a request, and goodput times one answer a request (the \
             answers' chunks come interleaved in one stream; merged, they would halve ITL and TPOT). Drop \"n\" \
             from --extra-body (or set it to 1); for more answers at once, raise -c"
        );
    }
    Ok(())
}

/// What [`connect`] settled on beyond the flags: the server's root as
/// shown (credentials out), the model(s) sent, the key's header, the extra
/// body fields, and whether the server is the embedded one.
struct Settled<'a> {
    base: &'a str,
    model: &'a str,
    key_header: KeyHeader,
    extra: serde_json::Map<String, Value>,
    embedded: bool,
}

/// The result's `config.client`: how requests were sent, secrets left out.
fn client_settings(t: &TargetArgs, sim: &SimArgs, client: &Client, settled: Settled) -> ClientSettings {
    let Settled { base, model, key_header, extra, embedded } = settled;
    ClientSettings {
        url: base.to_owned(),
        api: t.api.as_str().into(),
        model: model.to_owned(),
        stream: !t.no_stream && !t.api.pools(),
        embed_batch: (t.api == goodput_load::Api::Embeddings).then(|| t.embed_batch.unwrap_or(1)),
        rerank_docs: t.api.reranks().then(|| t.rerank_docs.unwrap_or(1)),
        include_usage: !t.no_usage,
        api_key: t.api_key.as_ref().map(|_| "<redacted>".into()),
        // Names only: a header's value may be a secret.
        headers: t.header.iter().map(|(name, _)| name.clone()).collect(),
        key_header: match key_header {
            KeyHeader::Bearer => "bearer",
            KeyHeader::XApiKey => "x-api-key",
        }
        .into(),
        extra_body: extra,
        timeout: humantime::format_duration(t.timeout).to_string(),
        transport: client.transport_name().into(),
        stamp: client.stamp_name().into(),
        embedded: embedded.then(|| match sim.sim_profile {
            ProfileArg::Engine => EmbeddedServer::Engine {
                model: sim.sim_model.clone(),
                gpu: sim.sim_gpu.clone(),
                precision: sim.sim_precision.clone(),
                tp: sim.sim_tp,
                dp: sim.sim_dp,
                router: (sim.sim_dp > 1 && !sim.sim_internal_lb).then(|| sim.sim_router.clone()),
                chat_template: sim.sim_chat_template.clone(),
                pd: sim.sim_pd.clone(),
                internal_lb: sim.sim_internal_lb,
                api_server_count: sim.sim_api_server_count,
                engine_flags: sim.sim_engine.clone(),
            },
            ProfileArg::Fixed => EmbeddedServer::Fixed {
                ttft: humantime::format_duration(sim.sim_ttft).to_string(),
                itl: humantime::format_duration(sim.sim_itl).to_string(),
                tokens_per_chunk: sim.sim_tokens_per_chunk,
            },
        }),
        extra: Default::default(),
    }
}

/// `--header`s, with `Authorization: Basic` from the credentials of
/// `--url` (`http://user:pass@host`) when it has some and nothing else sets
/// that header; where something does, it wins and the run says so.
fn with_url_credentials(t: &TargetArgs, api: Api, key_header: KeyHeader) -> Result<Vec<(String, String)>> {
    let mut headers = t.header.clone();
    let Some(basic) = t.url.as_deref().and_then(goodput_core::util::redact::basic_auth) else {
        return Ok(headers);
    };
    let given = request_headers(api, t.api_key.as_deref(), key_header, &t.header)?;
    if given.iter().any(|(n, _)| n.eq_ignore_ascii_case("authorization")) {
        goodput_core::tell!(
            "warning: --url carries credentials and an Authorization header is also given (--api-key or \
             --header): that header is sent, the URL's credentials are not"
        );
    } else {
        headers.push(("Authorization".into(), basic));
    }
    Ok(headers)
}

/// Asks the server which model it serves, to send when --model is not
/// given (on a connection of its own, as every probe: a server that closes
/// after each response without saying so, as llama.cpp does, would close a
/// kept one as the next probe went out): `/v1/models` (OpenAI, Anthropic, llama.cpp), or the server's own
/// list for its native API (Ollama's `/api/tags`, TGI's `/info`). The
/// answer is read up to `max_body` bytes (`--max-buffer`).
pub async fn discover_model(
    http: &reqwest::Client,
    base: &str,
    api: Api,
    headers: &[(String, String)],
    max_body: usize,
) -> Result<String> {
    let (path, pointer) = model_list(api);
    let resp = probe(http, base, path, headers, MODEL_LIST_WAIT).send().await.map_err(|e| {
        let chain = error_chain(&e);
        match goodput_load::client::tls_hint(&chain) {
            Some(hint) => anyhow!("cannot reach {base}: {hint} ({chain})"),
            // Reached, and silent: "cannot reach" had sent people to check a
            // server that was up.
            None if e.is_timeout() && !e.is_connect() => anyhow!(
                "the server at {base} did not answer {path} within {}s (it may have taken the connection and not \
                 answered: a server still loading its model, or stuck): pass --model NAME, which needs no model \
                 list, and check the server",
                MODEL_LIST_WAIT.as_secs()
            ),
            None => anyhow!("cannot reach {base}: {chain}. Is the server running and is --url right?"),
        }
    })?;
    if !resp.status().is_success() {
        // A redirect is not followed (see goodput_load's Client::new): say where it pointed.
        let to = resp
            .headers()
            .get("location")
            .map(|l| format!(", a redirect to {} not followed", String::from_utf8_lossy(l.as_bytes())));
        let status = resp.status();
        if matches!(status.as_u16(), 401 | 403) {
            return Err(refused_key(base, path, status, headers, resp).await);
        }
        let location = resp.headers().get("location").map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
        let hint =
            match (status.is_redirection().then_some(location).flatten(), other_api(http, base, api, headers).await) {
                // Every request would be redirected as the list was (--model
                // alone had failed them all): the server is where it points.
                (Some(to), _) => format!(
                "if the API is served there, pass --url {} (goodput follows no redirect: with --model alone, every \
                 request would be redirected as the list was)",
                goodput_core::util::redact::redact_url(&redirect_root(base, path, &to))
            ),
                (None, Some(other)) => other,
                (None, None) => "pass --model NAME".into(),
            };
        bail!(
            "the server at {base} did not list its models (HTTP {status} from {path}{}): {hint}",
            to.unwrap_or_default()
        );
    }
    use crate::scrape::{read_capped, Capped};
    let content_type = resp.headers().get("content-type").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let body = match read_capped(resp, max_body).await {
        Ok(body) => body,
        Err(Capped::TooLong) => bail!(
            "the server at {base} answered {path} with more than {} (--max-buffer): pass --model NAME, or raise \
             --max-buffer",
            goodput_core::util::input::size(max_body as u64)
        ),
        Err(Capped::Fetch(e)) => return Err(anyhow!("reading {path}: {}", error_chain(&e))),
    };
    let v: Value = serde_json::from_slice(&body).map_err(|e| {
        // What came instead (a login page, a proxy's HTML), shown escaped.
        let start: String = String::from_utf8_lossy(&body).chars().take(100).collect();
        anyhow!(
            "the server at {base} did not answer {path} with JSON ({e}): it sent {} starting \"{}\"; pass --model \
             NAME, which needs no model list, or check that --url is the API and not a page or a proxy",
            content_type.as_deref().map_or_else(|| "no content type".to_owned(), crate::output::shown),
            start.escape_debug()
        )
    })?;
    let id = v
        .pointer(pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("the server at {base} lists no model at {path}: pass --model NAME"))?;
    // A name no server gives (10 MB of it had been printed and written to
    // every output): refused, not cut, as a cut name would be sent as another.
    if id.len() > MAX_MODEL_ID {
        bail!(
            "the server at {base} lists a model name of {} bytes at {path}, more than the {MAX_MODEL_ID} goodput \
             takes from a model list: pass --model NAME",
            id.len()
        );
    }
    Ok(id.to_owned())
}

/// The root a redirect of `path` under `base` to `to` points at: `to`
/// resolved against the URL asked, less `path` (and `/v1`) where it ends in
/// it; `to` as resolved where it does not.
fn redirect_root(base: &str, path: &str, to: &str) -> String {
    let asked = reqwest::Url::parse(&join_url(base, path)).ok();
    let Some(to) = asked.and_then(|a| a.join(to).ok()) else { return to.to_owned() };
    let mut root = to.clone();
    match to.path().strip_suffix(path) {
        Some(prefix) => root.set_path(prefix),
        None => return to.to_string(),
    }
    normalize_base(root.as_str())
}

/// A model list's 401 or 403: the key was refused (naming the flags that
/// send it) or, with none sent, one is asked for; with the server's words.
async fn refused_key(
    base: &str,
    path: &str,
    status: reqwest::StatusCode,
    headers: &[(String, String)],
    resp: reqwest::Response,
) -> anyhow::Error {
    let body = crate::scrape::read_capped(resp, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    // The server's message as a failed request's is read (OpenAI's `error`,
    // FastAPI's `detail`, a bare `message`).
    let said = serde_json::from_str::<Value>(&text)
        .ok()
        .map(|v| goodput_load::protocol::error_message(v.get("error").or(v.get("detail")).unwrap_or(&v)))
        .unwrap_or_else(|| text.trim().chars().take(200).collect());
    let said = if said.is_empty() { String::new() } else { format!(": \"{}\"", said.escape_debug()) };
    let advice = key_advice(headers);
    let (what, fix) = advice.split_once(": ").unwrap_or((&advice, ""));
    anyhow!("the server at {base} {what} (HTTP {status} from {path}{said}): {fix}")
}

/// What a 401 or 403 says, as "what: the fix": the key sent was refused
/// (naming the header it went in, never the key), or none was sent.
fn key_advice(headers: &[(String, String)]) -> String {
    let sent =
        headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("authorization") || n.eq_ignore_ascii_case("x-api-key"));
    match sent {
        Some((name, _)) => {
            format!("refused the API key: check --api-key (or OPENAI_API_KEY), and --key-header (it went in {name})")
        }
        None => "asks for an API key: pass --api-key (or set OPENAI_API_KEY), and --key-header if it takes the key \
                 in x-api-key"
            .to_owned(),
    }
}

/// How long the model list may take to answer.
const MODEL_LIST_WAIT: Duration = Duration::from_secs(10);

/// The longest model name goodput takes from a model list (a Hugging Face
/// id is at most 96 characters; a path to weights may be a few hundred).
const MAX_MODEL_ID: usize = 1024;

/// Which other API the server at `base` speaks, when `api`'s model list
/// did not answer: the first other list that answers 2xx, with the `--api`
/// that goes with it.
async fn other_api(http: &reqwest::Client, base: &str, api: Api, headers: &[(String, String)]) -> Option<String> {
    let own = model_list(api).0;
    let lists = [
        ("/v1/models", "an OpenAI-compatible server (vLLM, SGLang, llama.cpp, …): try --api chat, or completions"),
        ("/api/tags", "an Ollama server: try --api ollama-chat, or ollama-generate"),
        ("/info", "a TGI server: try --api tgi"),
    ];
    for (path, says) in lists.into_iter().filter(|(p, _)| *p != own) {
        let answered = probe(http, base, path, headers, Duration::from_secs(5)).send().await;
        if answered.is_ok_and(|r| r.status().is_success()) {
            return Some(format!("{path} answers: this looks like {says}"));
        }
    }
    None
}

/// The names the server at `base` lists (`api`'s model list), when it
/// lists any: for the hint after requests that asked for a model it does
/// not serve.
pub async fn served_models(
    http: &reqwest::Client,
    base: &str,
    api: Api,
    headers: &[(String, String)],
    max_body: usize,
) -> Option<Vec<String>> {
    let (path, _) = model_list(api);
    let resp = probe(http, base, path, headers, Duration::from_secs(5)).send().await.ok();
    let resp = resp.filter(|r| r.status().is_success())?;
    let body = crate::scrape::read_capped(resp, max_body).await.ok()?;
    let v: Value = serde_json::from_slice(&body).ok()?;
    let names: Vec<String> = match api {
        Api::OllamaChat | Api::OllamaGenerate => v.pointer("/models")?.as_array()?.iter(),
        _ => v.pointer("/data")?.as_array()?.iter(),
    }
    .filter_map(|m| m.get("id").or_else(|| m.get("name")).and_then(Value::as_str).map(str::to_owned))
    .collect();
    (!names.is_empty()).then_some(names)
}

/// A GET of `path` under `base` with the run's `headers`, on a connection
/// of its own: a server that closes after each response without saying so,
/// as llama.cpp does, would close a kept one as the next probe went out.
fn probe(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> reqwest::RequestBuilder {
    let mut req = http.get(join_url(base, path)).timeout(timeout).header("connection", "close");
    for (name, value) in headers {
        req = req.header(name, value);
    }
    req
}

/// Where `api`'s server lists its models, and where the first name is in the answer.
fn model_list(api: Api) -> (&'static str, &'static str) {
    match api {
        Api::OllamaChat | Api::OllamaGenerate => ("/api/tags", "/models/0/name"),
        Api::Tgi | Api::TeiRerank => ("/info", "/model_id"),
        _ => ("/v1/models", "/data/0/id"),
    }
}

/// Waits until the server is ready, up to `wait`: its `/health` answers
/// 2xx (vLLM, SGLang, TGI, llama.cpp once its model is loaded), or, where
/// there is no `/health` (Ollama), its model list does. Refused
/// connections, 503s and the like are retried every 250 ms.
pub async fn wait_ready(
    http: &reqwest::Client,
    base: &str,
    api: Api,
    headers: &[(String, String)],
    wait: Duration,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + wait;
    let get = |path: &str| probe(http, base, path, headers, Duration::from_secs(5)).send();
    let mut said = false;
    loop {
        let last = match get("/health").await {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => match get(model_list(api).0).await {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => format!("{} answered HTTP {}", model_list(api).0, r.status()),
                Err(e) => error_chain(&e),
            },
            Ok(r) => format!("/health answered HTTP {}", r.status()),
            Err(e) => error_chain(&e),
        };
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "the server at {base} was not ready within {} (last: {last}): is it starting, and is --url right? \
                 A longer --wait-ready gives it more time",
                goodput_core::util::duration_text(wait)
            );
        }
        if !said {
            goodput_core::tell!(
                "waiting up to {} for {} to be ready ({})",
                goodput_core::util::duration_text(wait),
                goodput_core::util::redact::redact_url(base),
                crate::output::shown(&last)
            );
            said = true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
