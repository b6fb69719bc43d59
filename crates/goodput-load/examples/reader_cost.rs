//! What reading one streamed chunk costs the client's reader, without the
//! socket: an OpenAI chat chunk as servers send it (one SSE event, one
//! token) fed to N responses' readers in turn, as a stream reader thread
//! feeds N streams, 100 chunks each. With many streams each reader's state
//! has left the CPU's caches by its next chunk, as it has in a real run;
//! the 1-stream line is the warm cost.
//!
//!   cargo run --release -p goodput-load --example reader_cost -- [RUNS]

use goodput_load::http1::ReadStamp;
use goodput_load::reader::ResponseReader;
use std::time::{Duration, Instant};

const CHUNK: &[u8] = b"data: {\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\
\"model\":\"goodput-fixed\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"finish_reason\":null}]}\n\n";
const TOKENS: usize = 100;

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|r| r.parse().ok()).unwrap_or(7);
    println!("streams  ns per chunk (median of {runs})");
    for streams in [1usize, 30, 300, 1000] {
        let mut per_chunk: Vec<f64> = (0..runs)
            .map(|_| {
                let mut readers: Vec<ResponseReader> = (0..streams)
                    .map(|_| ResponseReader::new(false).keeping_reply().expecting(Some(TOKENS as u32)))
                    .collect();
                let start = Instant::now();
                for k in 0..TOKENS {
                    let t = Duration::from_millis(10 * k as u64 + 10);
                    for (i, r) in readers.iter_mut().enumerate() {
                        let read = ReadStamp { t, lag: None, serial: k as u64 + 1, since: t };
                        r.feed(std::hint::black_box(CHUNK), read);
                        std::hint::black_box(i);
                    }
                }
                let took = start.elapsed();
                assert!(readers.iter().all(|r| !r.finished()), "every stream still open");
                took.as_secs_f64() * 1e9 / (streams * TOKENS) as f64
            })
            .collect();
        per_chunk.sort_by(f64::total_cmp);
        println!("{streams:>7}  {:>8.0}", per_chunk[per_chunk.len() / 2]);
    }
}
