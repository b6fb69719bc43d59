//! Reads per-request records (JSONL from `bench --records`) of a run against
//! the fixed-timing server and reports how far the measured inter-token
//! latency strays from the server's exact one, and whether the client kept
//! up: `cargo run --release --example itl_error -- rec.jsonl 10ms`.

use goodput_core::metrics::RequestMetrics;
use goodput_core::{percentile, RequestRecord};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(itl)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: itl_error RECORDS.jsonl ITL (e.g. 10ms)");
        std::process::exit(2);
    };
    let itl = humantime::parse_duration(itl).expect("ITL like 10ms");
    let text = std::fs::read_to_string(path).expect("readable records");
    let recs: Vec<RequestRecord> =
        text.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).expect("a record")).collect();
    let ok: Vec<&RequestRecord> = recs.iter().filter(|r| r.outcome.is_success()).collect();
    let expected = itl.as_secs_f64() * 1e3;
    let mut err: Vec<f64> = Vec::new();
    // Where in the run the gaps more than 1 ms off fall, by whole second.
    let mut off_by_second: Vec<(u64, u64)> = Vec::new();
    for r in &ok {
        for w in r.chunks.windows(2) {
            let per = (w[1].t - w[0].t).as_secs_f64() * 1e3 / w[1].tokens.max(1) as f64;
            let e = (per - expected).abs();
            err.push(e);
            let s = w[1].t.as_secs() as usize;
            if off_by_second.len() <= s {
                off_by_second.resize(s + 1, (0, 0));
            }
            off_by_second[s].1 += 1;
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
    let seconds: Vec<String> = off_by_second
        .iter()
        .enumerate()
        .filter(|(_, (_, n))| *n > 0)
        .map(|(i, (off, n))| format!("{i}s {:.1}%", 100.0 * *off as f64 / *n as f64))
        .collect();
    println!("gaps more than 1 ms off, by second of the run: {}", seconds.join(" · "));
    println!(
        "achieved/offered token rate per stream: median {:.4} · p1 {:.4} · min {:.4}",
        percentile(&ratio, 50.0).unwrap_or(f64::NAN),
        percentile(&ratio, 1.0).unwrap_or(f64::NAN),
        ratio.first().copied().unwrap_or(f64::NAN)
    );
}
