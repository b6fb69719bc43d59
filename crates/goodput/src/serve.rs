//! `goodput serve`: the simulated OpenAI-compatible server on a socket.

use crate::cli::{FaultArgs, ProfileArg, ServeArgs};
use anyhow::{anyhow, Context, Result};
use goodput_sim::faults::FaultConfig;
use goodput_sim::fixed::{FixedProfile, FixedServer};
use std::process::ExitCode;

pub fn faults(f: &FaultArgs) -> FaultConfig {
    FaultConfig {
        error_rate: f.fault_error_rate,
        stream_error_rate: f.fault_stream_error_rate,
        disconnect_rate: f.fault_disconnect_rate,
        stall_rate: f.fault_stall_rate,
        stall: f.fault_stall,
        seed: f.fault_seed,
    }
}

pub async fn serve(a: ServeArgs) -> Result<ExitCode> {
    let app = match a.profile {
        ProfileArg::Fixed => {
            let profile = FixedProfile {
                model: a.model.clone(),
                ttft: a.ttft,
                itl: a.itl,
                tokens_per_chunk: a.tokens_per_chunk,
                default_max_tokens: a.default_max_tokens,
                slow_every: a.slow_every.zip(a.slow_ttft),
                faults: faults(&a.faults),
            };
            profile.validate().map_err(|e| anyhow!(e))?;
            goodput_sim::fixed::app(FixedServer::new(profile))
        }
    };
    let listener = tokio::net::TcpListener::bind((a.host.as_str(), a.port))
        .await
        .with_context(|| format!("cannot bind {}:{} (is the port in use? pick another with --port)", a.host, a.port))?;
    let addr = listener.local_addr()?;
    eprintln!(
        "goodput serve: {:?} profile, model {} · listening on http://{addr} (Ctrl-C to stop)",
        a.profile, a.model
    );
    goodput_sim::server::serve(listener, app, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .context("serving")?;
    Ok(ExitCode::SUCCESS)
}
