//! Reads per-request records (JSONL from `bench --records`) of a run against
//! the fixed-timing server and reports how far the measured inter-token
//! latency strays from the server's exact one, and whether the client kept
//! up: `cargo run --release --example itl_error -- rec.jsonl 10ms`.
//!
//! With `run.json stalls.csv` after those (the run's document and what
//! `stall_probe` logged beside it), it also splits the gaps into those near
//! a stall of the machine (overlapping one, or within 20 ms after one ended:
//! the time a loaded server or client needs to catch up) and the rest.
//!
//! With `--writes writes.jsonl` (the server's `serve --profile fixed
//! --write-log`, the client sending `--header 'X-Request-Id: {request}'`), it
//! pairs every measured gap with the gap between the same two writes on the
//! server and splits the error: the server's share (its write gap against
//! the exact one) and the client's own (its measured gap against the write
//! gap: the time the chunk spent between the server's write and the client's
//! stamp, changing from one chunk to the next).

use goodput_core::analysis::metrics::RequestMetrics;
use goodput_core::{percentile, RequestRecord};
use std::time::Duration;

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let writes = args.iter().position(|a| a == "--writes").map(|i| {
        let path = args.get(i + 1).cloned().expect("--writes FILE");
        args.drain(i..i + 2);
        path
    });
    let (Some(path), Some(itl)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: itl_error RECORDS.jsonl ITL (e.g. 10ms) [RUN.json STALLS.csv] [--writes WRITES.jsonl]");
        std::process::exit(2);
    };
    let itl = humantime::parse_duration(itl).expect("ITL like 10ms");
    let text = std::fs::read_to_string(path).expect("readable records");
    let recs: Vec<RequestRecord> =
        text.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).expect("a record")).collect();
    let ok: Vec<&RequestRecord> = recs.iter().filter(|r| r.outcome.is_success()).collect();
    let expected = itl.as_secs_f64() * 1e3;
    let stalls = match (args.get(3), args.get(4)) {
        (Some(run), Some(csv)) => Some(Stalls::read(run, csv)),
        _ => None,
    };
    let mut err: Vec<f64> = Vec::new();
    // The same errors split by whether a stall of the machine was near.
    let (mut near, mut clear): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    // Where in the run the gaps more than 1 ms off fall, by whole second.
    let mut off_by_second: Vec<(u64, u64, u64)> = Vec::new();
    // Two chunks of one stream that came in one read carry the same stamp:
    // the client fell a whole period behind on that socket. Each such read
    // spoils two gaps (the one before it is long, its own is zero); this is
    // the client's own share of the error, whatever the server did.
    let mut merged = 0usize;
    for r in &ok {
        for (a, b) in r.chunks.pairs() {
            let same_read = b.t == a.t;
            merged += usize::from(same_read);
            let per = (b.t - a.t).as_secs_f64() * 1e3 / b.tokens.max(1) as f64;
            let e = (per - expected).abs();
            err.push(e);
            if let Some(st) = &stalls {
                if st.near(a.t.as_secs_f64(), b.t.as_secs_f64()) {
                    near.push(e);
                } else {
                    clear.push(e);
                }
            }
            let s = b.t.as_secs() as usize;
            if off_by_second.len() <= s {
                off_by_second.resize(s + 1, (0, 0, 0));
            }
            off_by_second[s].1 += 1;
            off_by_second[s].2 += u64::from(same_read);
            if e > 1.0 {
                off_by_second[s].0 += 1;
            }
        }
    }
    err.sort_by(f64::total_cmp);
    // Per stream: tokens after the first over the time they took, against 1/ITL.
    let mut ratio: Vec<f64> =
        ok.iter().filter_map(|r| r.tpot()).map(|t: Duration| itl.as_secs_f64() / t.as_secs_f64()).collect();
    ratio.sort_by(f64::total_cmp);
    let tokens: u64 = ok.iter().map(|r| r.output_tokens).sum();
    println!("requests {} ({} ok) · output tokens {tokens} · ITL samples {}", recs.len(), ok.len(), err.len());
    println!(
        "|ITL − {expected} ms|: median {:.3} ms · p90 {:.3} ms · p99 {:.3} ms · max {:.3} ms",
        percentile(&err, 50.0).unwrap_or(f64::NAN),
        percentile(&err, 90.0).unwrap_or(f64::NAN),
        percentile(&err, 99.0).unwrap_or(f64::NAN),
        err.last().copied().unwrap_or(f64::NAN)
    );
    let within = |ms: f64| 100.0 * err.iter().filter(|e| **e <= ms).count() as f64 / err.len().max(1) as f64;
    println!(
        "client gaps within: 0.512 ms {:.2}% · 1.024 ms {:.2}% · 4.096 ms {:.2}% · 8.192 ms {:.2}% of 10 ms",
        within(0.512),
        within(1.024),
        within(4.096),
        within(8.192)
    );
    println!(
        "chunks that shared a read with the one before: {:.3}% of gaps (the client's own share, ≈ twice that in spoiled gaps)",
        100.0 * merged as f64 / err.len().max(1) as f64
    );
    let seconds: Vec<String> = off_by_second
        .iter()
        .enumerate()
        .filter(|(_, (_, n, _))| *n > 0)
        .map(|(i, (off, n, same))| {
            format!(
                "{i}s {:.1}% ({:.1}% shared a read)",
                100.0 * *off as f64 / *n as f64,
                100.0 * *same as f64 / *n as f64
            )
        })
        .collect();
    println!("gaps more than 1 ms off, by second of the run: {}", seconds.join(" · "));
    println!(
        "achieved/offered token rate per stream: median {:.4} · p1 {:.4} · min {:.4}",
        percentile(&ratio, 50.0).unwrap_or(f64::NAN),
        percentile(&ratio, 1.0).unwrap_or(f64::NAN),
        ratio.first().copied().unwrap_or(f64::NAN)
    );
    if let Some(st) = &stalls {
        st.report(&err, &mut near, &mut clear);
    }
    if let Some(w) = &writes {
        split_by_writes(&ok, w, expected);
    }
}

/// Pairs each measured gap with the server's gap between the same two
/// writes (by the request's `X-Request-Id`, which bench set to the record's
/// id) and reports both shares of the error.
fn split_by_writes(ok: &[&RequestRecord], path: &str, expected_ms: f64) {
    let mut by_id: std::collections::HashMap<String, Vec<u64>> = std::collections::HashMap::new();
    for line in std::fs::read_to_string(path).expect("readable write log").lines().filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a write-log line");
        let Some(id) = v["request_id"].as_str() else { continue };
        let ns = v["writes_ns"].as_array().expect("writes_ns").iter().map(|x| x.as_u64().expect("ns")).collect();
        by_id.insert(id.to_owned(), ns);
    }
    let (mut server, mut client, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let (mut paired, mut unpaired) = (0usize, 0usize);
    for r in ok {
        let Some(w) = by_id.get(&r.id.to_string()).filter(|w| w.len() == r.chunks.len()) else {
            unpaired += 1;
            continue;
        };
        paired += 1;
        for (k, (a, b)) in r.chunks.pairs().enumerate() {
            let measured = (b.t - a.t).as_secs_f64() * 1e3;
            let written = (w[k + 1] - w[k]) as f64 / 1e6;
            server.push((written - expected_ms).abs());
            client.push((measured - written).abs());
            total.push((measured - expected_ms).abs());
        }
    }
    println!(
        "paired with the server's writes: {paired} requests ({unpaired} not: no log line, or another chunk count) · {} gaps",
        client.len()
    );
    let line = |name: &str, v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        println!(
            "{name}: median {:.3} ms · p90 {:.3} ms · p99 {:.3} ms · max {:.3} ms · {:.2}% within 1 ms",
            percentile(v, 50.0).unwrap_or(f64::NAN),
            percentile(v, 90.0).unwrap_or(f64::NAN),
            percentile(v, 99.0).unwrap_or(f64::NAN),
            v.last().copied().unwrap_or(f64::NAN),
            100.0 * v.iter().filter(|e| **e <= 1.0).count() as f64 / v.len().max(1) as f64
        );
    };
    // Gaps more than 1 ms off as measured, and how many of those the client
    // itself put more than half a millisecond into.
    let off: Vec<usize> = (0..total.len()).filter(|&i| total[i] > 1.0).collect();
    let client_made = off.iter().filter(|&&i| client[i] > 0.5).count();
    line(&format!("  measured |gap − {expected_ms} ms| (these gaps)"), &mut total.clone());
    line(&format!("  server's share |write gap − {expected_ms} ms|"), &mut server);
    line("  client's own share |measured gap − write gap|", &mut client);
    println!(
        "  of the {} measured gaps more than 1 ms off, the client's own share was over 0.5 ms in {} ({:.1}%)",
        off.len(),
        client_made,
        100.0 * client_made as f64 / off.len().max(1) as f64
    );
}

/// Stalls of the machine that `stall_probe` logged, on the run's clock.
struct Stalls {
    /// (start, end) in seconds since the run's zero, sorted by start.
    spans: Vec<(f64, f64)>,
    /// Stalls and stalled seconds per CPU.
    per_cpu: Vec<(usize, f64)>,
}

/// How long after a stall the gaps still count as near it.
const RECOVERY_S: f64 = 0.020;

impl Stalls {
    fn read(run: &str, csv: &str) -> Stalls {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run).expect("readable run document")).expect("JSON");
        let zero = doc["started_unix_s"].as_f64().expect("started_unix_s in the run document");
        let mut spans = Vec::new();
        let mut per_cpu: Vec<(usize, f64)> = Vec::new();
        for line in std::fs::read_to_string(csv).expect("readable stalls").lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let (cpu, a, b): (usize, f64, f64) =
                (f[0].parse().expect("cpu"), f[1].parse().expect("start"), f[2].parse().expect("end"));
            if per_cpu.len() <= cpu {
                per_cpu.resize(cpu + 1, (0, 0.0));
            }
            per_cpu[cpu].0 += 1;
            per_cpu[cpu].1 += b - a;
            spans.push((a - zero, b - zero));
        }
        spans.sort_by(|x, y| x.0.total_cmp(&y.0));
        Stalls { spans, per_cpu }
    }

    /// Whether a stall overlaps the gap from `t0` to `t1`, or ended less than
    /// `RECOVERY_S` before it began.
    fn near(&self, t0: f64, t1: f64) -> bool {
        // Spans starting before t1; any of them ending after t0 − recovery.
        let end = self.spans.partition_point(|s| s.0 < t1);
        self.spans[..end].iter().rev().take(64).any(|s| s.1 + RECOVERY_S > t0)
    }

    fn report(&self, all: &[f64], near: &mut [f64], clear: &mut [f64]) {
        for (cpu, (n, secs)) in self.per_cpu.iter().enumerate() {
            println!("stalls on CPU {cpu}: {n}, {:.1} ms in all", secs * 1e3);
        }
        near.sort_by(f64::total_cmp);
        clear.sort_by(f64::total_cmp);
        let bad = |v: &[f64]| v.iter().filter(|e| **e > 1.0).count();
        println!(
            "gaps near a stall (or within {} ms after one): {:.2}% of all gaps, {:.1}% of the gaps more than 1 ms off",
            RECOVERY_S * 1e3,
            100.0 * near.len() as f64 / all.len().max(1) as f64,
            100.0 * bad(near) as f64 / bad(all).max(1) as f64
        );
        println!(
            "the other gaps: |ITL error| median {:.3} ms · p99 {:.3} ms · {:.2}% within 1.024 ms",
            percentile(clear, 50.0).unwrap_or(f64::NAN),
            percentile(clear, 99.0).unwrap_or(f64::NAN),
            100.0 * clear.iter().filter(|e| **e <= 1.024).count() as f64 / clear.len().max(1) as f64
        );
    }
}
