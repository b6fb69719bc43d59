//! `goodput bench`: check the options, start the embedded server when there
//! is no --url, run the load, stream records, analyse, print and write.

use crate::cli::{ApiArg, ArrivalArg, BenchArgs};
use anyhow::{anyhow, bail, Context, Result};
use goodput_core::{analyze, AnalysisOptions, Compat, RequestRecord, RunResult, Target, Tool, SCHEMA};
use goodput_load::client::{error_chain, normalize_base};
use goodput_load::{
    Api, Arrival, BodyOptions, Client, ClientConfig, Control, LengthDist, LoadPlan, TokenCounter, Workload,
};
use goodput_sim::fixed::{FixedProfile, FixedServer};
use serde_json::{json, Value};
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Everything a bench run needs, checked and built.
struct Setup {
    plan: LoadPlan,
    workload: Workload,
    client_cfg: ClientConfig,
    tokenizer: Option<Arc<TokenCounter>>,
    percentiles: Vec<f64>,
    config: Value,
}

fn setup(a: &BenchArgs, base_url: &str, model: String) -> Result<Setup> {
    let tokenizer = match &a.tokenizer {
        Some(p) => Some(Arc::new(TokenCounter::from_file(p).map_err(|e| anyhow!(e))?)),
        None => None,
    };
    let output = match (&a.output_tokens, &a.dataset) {
        (Some(o), _) => Some(o.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(LengthDist::Fixed(128)),
    };
    let workload = match &a.dataset {
        Some(path) => {
            let entries = goodput_load::workload::load_dataset(path, tokenizer.as_deref()).map_err(|e| anyhow!(e))?;
            Workload::dataset(entries, output.clone(), a.seed)
        }
        None => Workload::Synthetic {
            input: a.input_tokens.clone(),
            output: output.clone().unwrap_or(LengthDist::Fixed(128)),
            seed: a.seed,
            tokenizer: tokenizer.clone(),
        },
    };
    if a.burstiness.is_some() && a.arrival != ArrivalArg::Gamma {
        bail!("--burstiness shapes gamma arrivals only: add --arrival gamma");
    }
    if a.rate.is_none() && (a.arrival != ArrivalArg::Poisson || a.burstiness.is_some()) {
        bail!("--arrival and --burstiness shape an open-loop schedule: add --rate R");
    }
    let arrival = match a.arrival {
        ArrivalArg::Poisson => Arrival::Poisson,
        ArrivalArg::Gamma => Arrival::Gamma { burstiness: a.burstiness.unwrap_or(1.0) },
        ArrivalArg::Constant => Arrival::Constant,
    };
    let concurrency = match (a.concurrency, a.rate) {
        (None, None) => Some(10),
        (c, _) => c,
    };
    let requests = match (a.requests, a.duration) {
        (None, None) => Some(100),
        (n, _) => n,
    };
    let plan = LoadPlan {
        requests,
        duration: a.duration,
        warmup: a.warmup,
        concurrency,
        rate: a.rate.map(|r| (r, arrival)),
        seed: a.seed,
        grace: a.grace,
    };
    plan.validate().map_err(|e| anyhow!(e))?;
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            bail!("--rate must be a positive number of requests per second, not {r}");
        }
    }
    let extra = match &a.extra_body {
        Some(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            Ok(_) => bail!("--extra-body must be a JSON object, e.g. '{{\"temperature\":0}}'"),
            Err(e) => bail!("--extra-body is not valid JSON: {e}"),
        },
        None => Default::default(),
    };
    let api = match a.api {
        ApiArg::Chat => Api::Chat,
        ApiArg::Completions => Api::Completions,
    };
    let body = BodyOptions {
        api,
        model: model.clone(),
        stream: !a.no_stream,
        include_usage: !a.no_usage,
        ignore_eos: a.ignore_eos,
        extra: extra.clone(),
    };
    let client_cfg =
        ClientConfig { base_url: base_url.to_owned(), api_key: a.api_key.clone(), body, timeout: a.timeout };
    let human = |d: Duration| humantime::format_duration(d).to_string();
    let config = json!({
        "load": {
            "concurrency": plan.concurrency,
            "rate": a.rate,
            "arrival": a.rate.map(|_| format!("{:?}", a.arrival).to_lowercase()),
            "burstiness": a.burstiness,
            "requests": plan.requests,
            "duration": a.duration.map(human),
            "warmup": a.warmup,
            "timeout": human(a.timeout),
            "grace": human(a.grace),
            "seed": a.seed,
        },
        "workload": {
            "input_tokens": a.dataset.is_none().then(|| a.input_tokens.to_string()),
            "output_tokens": output.map(|o| o.to_string()),
            "dataset": a.dataset.as_ref().map(|p| p.display().to_string()),
            "tokenizer": a.tokenizer.as_ref().map(|p| p.display().to_string()),
            "ignore_eos": a.ignore_eos,
        },
        "client": {
            "url": base_url,
            "api": api.as_str(),
            "model": model,
            "stream": !a.no_stream,
            "include_usage": !a.no_usage,
            "api_key": a.api_key.as_ref().map(|_| "<redacted>"),
            "extra_body": extra,
        },
        "percentiles": a.percentiles.0,
        "slo": a.judge.slo.as_ref().map(|s| s.to_string()),
        "cost": { "gpu_hour_usd": a.judge.gpu_hour_usd, "gpus": a.judge.gpus },
    });
    Ok(Setup { plan, workload, client_cfg, tokenizer, percentiles: a.percentiles.0.clone(), config })
}

/// Asks the server which model it serves (`/v1/models`), to send when --model is not given.
async fn discover_model(http: &reqwest::Client, base: &str, api_key: Option<&str>) -> Result<String> {
    let url = format!("{base}/v1/models");
    let mut req = http.get(&url).timeout(Duration::from_secs(10));
    if let Some(k) = api_key {
        req = req.bearer_auth(k);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| anyhow!("cannot reach {base}: {}. Is the server running and is --url right?", error_chain(&e)))?;
    if !resp.status().is_success() {
        bail!(
            "the server at {base} did not list its models (HTTP {} from /v1/models): pass --model NAME",
            resp.status()
        );
    }
    let body = resp.bytes().await.context("reading /v1/models")?;
    let v: Value = serde_json::from_slice(&body).context("/v1/models did not answer JSON")?;
    v.pointer("/data/0/id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("the server at {base} lists no model at /v1/models: pass --model NAME"))
}

/// Writes each record as one JSON line, flushed, the moment it completes.
struct RecordFile {
    out: std::io::BufWriter<std::fs::File>,
    path: std::path::PathBuf,
    failed: bool,
}

impl RecordFile {
    fn create(path: &std::path::Path) -> Result<Self> {
        let f = std::fs::File::create(path)
            .with_context(|| format!("cannot create the records file {}", path.display()))?;
        Ok(RecordFile { out: std::io::BufWriter::new(f), path: path.to_owned(), failed: false })
    }

    fn write(&mut self, r: &RequestRecord) {
        if self.failed {
            return;
        }
        let res = serde_json::to_writer(&mut self.out, r)
            .map_err(std::io::Error::other)
            .and_then(|_| self.out.write_all(b"\n"))
            .and_then(|_| self.out.flush());
        if let Err(e) = res {
            eprintln!("warning: writing records to {} failed ({e}); the run goes on without it", self.path.display());
            self.failed = true;
        }
    }
}

pub async fn bench(a: BenchArgs) -> Result<ExitCode> {
    let started_unix_s =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    // The embedded default: a real server on a loopback port, loaded over real HTTP.
    let shutdown = CancellationToken::new();
    let (base, embedded) = match &a.url {
        Some(u) => (normalize_base(u), false),
        None => {
            let profile = FixedProfile {
                ttft: a.sim_ttft,
                itl: a.sim_itl,
                tokens_per_chunk: a.sim_tokens_per_chunk,
                ..FixedProfile::default()
            };
            profile.validate().map_err(|e| anyhow!(e))?;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.context("binding a loopback port")?;
            let addr = listener.local_addr()?;
            let app = goodput_sim::fixed::app(FixedServer::new(profile));
            let stop = shutdown.clone();
            tokio::spawn(goodput_sim::server::serve(listener, app, async move { stop.cancelled().await }));
            (format!("http://{addr}"), true)
        }
    };
    let _stop_server = shutdown.drop_guard();

    let probe = ClientConfig {
        base_url: base.clone(),
        api_key: a.api_key.clone(),
        body: BodyOptions::default(),
        timeout: a.timeout,
    };
    let probe = Client::new(probe, None).map_err(|e| anyhow!(e))?;
    let model = match &a.model {
        Some(m) => m.clone(),
        None => discover_model(probe.http(), &base, a.api_key.as_deref()).await?,
    };
    let s = setup(&a, &base, model.clone())?;
    a.judge.cost().map_err(|e| anyhow!(e))?;
    let client = Arc::new(Client::new(s.client_cfg.clone(), s.tokenizer.clone()).map_err(|e| anyhow!(e))?);

    let control = Control::default();
    let (stop, abort) = (control.stop.clone(), control.abort.clone());
    let grace = a.grace;
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "\nstopping: no new requests; in-flight ones get {} to finish (Ctrl-C again to cancel them now)",
                humantime::format_duration(grace)
            );
            stop.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                abort.cancel();
            }
        }
    });

    if !a.quiet {
        eprintln!(
            "goodput bench → {base}{} · model {model} · {}",
            if embedded { " (embedded fixed-timing simulator)" } else { "" },
            goodput_report::terminal::load_line(&s.config)
        );
    }
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let progress = (!a.quiet).then(|| {
        let (done, failed) = (done.clone(), failed.clone());
        let planned = s.plan.requests.map(|n| n + s.plan.warmup);
        tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            let mut tick = tokio::time::interval_at(start + Duration::from_secs(5), Duration::from_secs(5));
            loop {
                tick.tick().await;
                let d = done.load(Ordering::Relaxed);
                let of = planned.map(|p| format!("/{p}")).unwrap_or_default();
                eprintln!(
                    "[{:>6.1}s] {d}{of} done · {} failed",
                    start.elapsed().as_secs_f64(),
                    failed.load(Ordering::Relaxed)
                );
            }
        })
    });

    let mut records_file = match &a.records {
        Some(p) => Some(RecordFile::create(p)?),
        None => None,
    };
    let sink = {
        let (done, failed) = (done.clone(), failed.clone());
        move |r: &RequestRecord| {
            done.fetch_add(1, Ordering::Relaxed);
            if r.outcome.failure_kind().is_some() {
                failed.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(f) = records_file.as_mut() {
                f.write(r);
            }
        }
    };
    let out = goodput_load::run(&s.plan, client.clone(), Arc::new(s.workload), control, sink)
        .await
        .map_err(|e| anyhow!(e))?;
    if let Some(p) = progress {
        p.abort();
    }

    let opts = AnalysisOptions {
        percentiles: s.percentiles.clone(),
        slo: a.judge.slo.clone(),
        cost: a.judge.cost().map_err(|e| anyhow!(e))?,
        ..Default::default()
    };
    let analysis = analyze(&out.records, &opts);
    let result = RunResult {
        schema: SCHEMA.into(),
        tool: Tool { name: "goodput".into(), version: env!("CARGO_PKG_VERSION").into() },
        kind: "bench".into(),
        started_unix_s,
        interrupted: out.interrupted,
        config: s.config,
        target: Target {
            url: base.clone(),
            model,
            api: client.api().as_str().into(),
            embedded,
            server: client.server_header(),
        },
        window: analysis.window,
        summary: analysis.summary,
        slo: analysis.slo,
        cost: analysis.cost,
        compat: Compat { vllm: analysis.vllm },
        warnings: analysis.warnings,
        requests: a.include_requests.then(|| out.records.clone()),
    };
    print!("{}", goodput_report::terminal::render(&result));
    if let Some(p) = &a.output {
        goodput_report::write_json(p, &result).with_context(|| format!("cannot write {}", p.display()))?;
        if !a.quiet {
            eprintln!("result written to {}", p.display());
        }
    }
    let q = &result.summary.requests;
    if q.completed == 0 {
        let first = out
            .records
            .iter()
            .find_map(|r| match &r.outcome {
                goodput_core::Outcome::Failed { kind, message } => Some(format!("{kind}: {message}")),
                _ => None,
            })
            .unwrap_or_else(|| "no request finished".into());
        eprintln!("error: no request succeeded ({} sent, {} failed); first failure: {first}", q.sent, q.failed);
        return Ok(ExitCode::from(1));
    }
    if a.judge.fail_on_slo && result.slo.as_ref().is_some_and(|s| !s.pass) {
        eprintln!("error: the run missed its SLO objectives (--fail-on-slo)");
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}
