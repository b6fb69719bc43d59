//! The checks of a run that loads a pooling route (`--api embeddings`,
//! `--api rerank`): such a request is answered whole, with input tokens and
//! no output, so the options that shape a stream or an answer mean nothing
//! for it and are refused with the fix.

use crate::cli::{ShapeArgs, TargetArgs, WorkloadArgs};
use anyhow::{bail, Result};
use goodput_load::Api;

/// Refuses the options a pooling run cannot honour, and the pooling knobs
/// on a run of another API.
/// `traced`: a `--trace` gives the prompts' lengths.
pub fn check(t: &TargetArgs, w: &WorkloadArgs, shape: &ShapeArgs, traced: bool) -> Result<()> {
    let api = t.api;
    if api != Api::Embeddings && t.embed_batch.is_some() {
        bail!("--embed-batch sets the inputs of an embeddings request: add --api embeddings, or drop --embed-batch");
    }
    if !api.reranks() && t.rerank_docs.is_some() {
        bail!("--rerank-docs sets the documents of a rerank request: add --api rerank (or tei-rerank), or drop --rerank-docs");
    }
    if !api.pools() {
        return Ok(());
    }
    let name = api.as_str();
    let given = [
        (w.ignore_eos, "--ignore-eos"),
        (w.output_tokens.is_some(), "--output-tokens"),
        (t.no_usage, "--no-usage"),
        (shape.turns.is_some(), "--turns"),
        (w.score.is_some(), "--score"),
        (w.repeat > 1, "--repeat"),
    ];
    if let Some((_, flag)) = given.iter().find(|g| g.0) {
        bail!(
            "{flag}: --api {name} is answered whole, with input tokens and no generated output, so {flag} (which \
             shapes a stream or its answer) has nothing to act on; drop {flag}, or load a generation route (--api \
             chat or completions)"
        );
    }
    // A prompt of fewer words than its pieces has its words repeated, and
    // the server counts more tokens than the workload gave (`--input-tokens
    // 16 --rerank-docs 4096` had sent 8,192 and called the rest the server's).
    let (pieces, flag) = match (t.embed_batch, t.rerank_docs) {
        (Some(b), _) => (u64::from(b), "--embed-batch"),
        (_, Some(d)) => (u64::from(d) + 1, "--rerank-docs"),
        _ => return Ok(()),
    };
    let input = crate::setup::synthetic_input(w);
    if w.dataset.is_none() && !traced && input.mean() < pieces as f64 {
        bail!(
            "{flag} splits each prompt into {pieces} pieces at its words, and --input-tokens {input} gives fewer \
             words than that: give --input-tokens {pieces} or more, or a smaller {flag}"
        );
    }
    Ok(())
}

/// Refuses a pooling API in a command that replays generation in virtual
/// time (`estimate`, `plan`, `sweep --estimate`).
pub fn refuse_virtual(api: Api, command: &str) -> Result<()> {
    if api.pools() {
        bail!(
            "--api {}: {command} simulates generation in virtual time and does not model embeddings or rerank \
             requests; measure them with goodput bench (against the server, or the embedded one with --sim-profile \
             engine)",
            api.as_str()
        );
    }
    Ok(())
}
