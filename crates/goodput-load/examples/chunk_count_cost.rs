//! What counting each chunk's tokens costs the client, per output token:
//! in context (`TokenCounter::in_context_counts`, what goodput does) beside
//! each chunk counted on its own (what it did before, which did not add
//! up), for answers of growing length, one token a chunk. Linear counting
//! keeps the cost per token flat as answers grow.
//!
//!   cargo run --release -p goodput-load --example chunk_count_cost -- TOKENIZER.json [RUNS]

use goodput_load::TokenCounter;
use std::time::Instant;

const TEXT: &str = "The server streams each token as soon as it is generated, and the client stamps the moment \
    its bytes arrive. Counted in context, the pieces add up to the answer the model gave, whatever the \
    tokenizer does at their edges: café, résumé and déjà vu included. ";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: chunk_count_cost TOKENIZER.json [RUNS]");
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let t = TokenCounter::from_file(std::path::Path::new(path)).unwrap();
    println!("tokens  in-context µs/token (median of {runs})  apart µs/token  ratio");
    for n in [64usize, 256, 1024, 4096] {
        // n pieces of text: the words of the passage, repeated.
        let words: Vec<String> = TEXT.split_inclusive(' ').map(str::to_owned).collect();
        let chunks: Vec<String> = words.iter().cycle().take(n).cloned().collect();
        let time = |f: &dyn Fn() -> u64| {
            let mut v: Vec<f64> = (0..runs)
                .map(|_| {
                    let s = Instant::now();
                    std::hint::black_box(f());
                    s.elapsed().as_secs_f64() * 1e6 / n as f64
                })
                .collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let ctx = time(&|| t.in_context_counts(&chunks).1);
        let apart = time(&|| chunks.iter().map(|c| t.count(c) as u64).sum());
        println!("{n:>6}  {ctx:>10.2}  {apart:>10.2}  {:>5.1}", ctx / apart);
    }
}
