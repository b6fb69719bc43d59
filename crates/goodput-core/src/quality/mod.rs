//! Answer quality beside speed: the scorers and a request's scores (in
//! [`scoring`], re-exported here), what a run's scores add up to (`summary`:
//! means, corpus scores, per model, consistency) and how two runs' answers
//! to the same prompts differ (`paired`).

pub mod paired;
pub mod scoring;
pub mod summary;

pub use paired::{compare_answers, AnswerChange, PairedChange};
pub use scoring::{
    add_stats, bleu_score, bleu_stats, chrf, chrf_score, chrf_stats, exact, last_number, normalize_answer, number,
    reference_number, rouge_l, rouge_tokens, score, tokenize_13a, BleuStats, ChrfStats, RequestQuality, Scorer,
    UnknownScorer, BLEU_ORDER, CHRF_ORDER,
};
pub use summary::{summarize, Consistency, ModelQuality, QualityScores, QualitySummary, ScoreMean};
