//! The scorers against the reference packages' own numbers, on the fixture
//! scripts/quality_fixture.py wrote (tests/fixtures/quality/README.md).

use goodput_core::quality::{
    add_stats, bleu_score, bleu_stats, chrf_score, chrf_stats, exact, number, rouge_l, BleuStats, ChrfStats,
};
use serde::Deserialize;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/quality/");

#[derive(Deserialize)]
struct Pair {
    hyp: String,
    refs: Vec<String>,
    exact: f64,
    number: f64,
    rouge_l: f64,
    chrf: f64,
    bleu_stats: BleuStats,
    chrf_stats: ChrfStats,
}

#[derive(Deserialize)]
struct Corpus {
    from: usize,
    to: usize,
    bleu: f64,
    chrf: f64,
}

fn lines<T: for<'a> Deserialize<'a>>(name: &str) -> Vec<T> {
    let text = std::fs::read_to_string(format!("{DIR}{name}")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_pair_scores_as_the_reference_packages_do() {
    let pairs: Vec<Pair> = lines("pairs.jsonl");
    assert!(pairs.len() >= 300, "{}", pairs.len());
    for (i, p) in pairs.iter().enumerate() {
        let at = format!("pair {i}: {:?} vs {:?}", p.hyp, p.refs);
        assert_eq!(exact(&p.hyp, &p.refs), p.exact, "exact, {at}");
        assert_eq!(number(&p.hyp, &p.refs).unwrap_or(0.0), p.number, "number, {at}");
        assert!(
            (rouge_l(&p.hyp, &p.refs) - p.rouge_l).abs() < 1e-6,
            "rouge_l {} {}, {at}",
            rouge_l(&p.hyp, &p.refs),
            p.rouge_l
        );
        assert_eq!(bleu_stats(&p.hyp, &p.refs), p.bleu_stats, "bleu stats, {at}");
        let stats = chrf_stats(&p.hyp, &p.refs);
        assert_eq!(stats, p.chrf_stats, "chrf stats, {at}");
        assert!((chrf_score(&stats) - p.chrf).abs() < 1e-6, "chrf {} {}, {at}", chrf_score(&stats), p.chrf);
    }
}

#[test]
fn corpus_bleu_and_chrf_add_up_the_statistics_as_sacrebleu_does() {
    let pairs: Vec<Pair> = lines("pairs.jsonl");
    let corpora: Vec<Corpus> = lines("corpus.jsonl");
    assert!(corpora.len() > 2);
    for c in corpora {
        let (mut b, mut f) = ([0u64; 10], [0u64; 18]);
        for p in &pairs[c.from..c.to] {
            add_stats(&mut b, &bleu_stats(&p.hyp, &p.refs));
            add_stats(&mut f, &chrf_stats(&p.hyp, &p.refs));
        }
        assert!((bleu_score(&b) - c.bleu).abs() < 0.01, "bleu {}..{}: {} vs {}", c.from, c.to, bleu_score(&b), c.bleu);
        assert!((chrf_score(&f) - c.chrf).abs() < 1e-6, "chrf {}..{}: {} vs {}", c.from, c.to, chrf_score(&f), c.chrf);
    }
}
