//! The run's single numbers outside the latency distributions: throughput,
//! goodput, counts, cost, ratings, sessions, the client's CPU and quality.

use super::{Better, Unit};
use goodput_core::RunResult;

/// A single number of the run outside the latency distributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    RequestsPerS,
    InputTokensPerS,
    OutputTokensPerS,
    TotalTokensPerS,
    PeakOutputTokensPerS,
    GoodputRequestsPerS,
    GoodputOutputTokensPerS,
    /// Goodput's share: the judged requests that met every threshold.
    SloAttainment,
    /// The limits' attainment the verdict held to its target
    /// (`slo.attainment.measured`), where it counted the limits alone:
    /// [`goodput_core::SloReport::limits_attainment`].
    SloLimitsAttainment,
    UsefulWork,
    Sent,
    Completed,
    Failed,
    Cancelled,
    /// failed / (completed + failed): cancelled requests neither pass nor fail.
    ErrorRate,
    InFlightMean,
    InFlightPeak,
    UsdPerMillionOutputTokens,
    UsdPerMillionTotalTokens,
    UsdPerRequest,
    UsdPerMillionGoodOutputTokens,
    /// Per million input tokens: the price of an embeddings or rerank run.
    UsdPerMillionInputTokens,
    /// `energy.joules_per_output_token`: the GPUs' joules per output token.
    JoulesPerOutputToken,
    /// `energy.output_tokens_per_s_per_provisioned_mw`.
    OutputTokensPerSPerMw,
    TimesReadingSpeed,
    /// Completed multi-turn sessions per second (runs with `--turns`).
    SessionsPerS,
    UsdPerSession,
    /// The client's own CPU per output token (`bench`, Linux).
    ClientCpuPerToken,
    /// Share of looked-up prompt tokens the server's prefix cache hit over
    /// the window (its counters, or the simulated engine's): what explains
    /// a TTFT far better than another run's.
    PrefixCacheHitRate,
    /// `summary.quality`: exact match, number, ROUGE-L and sentence chrF
    /// means, corpus BLEU and chrF, and the share of repeated prompts that
    /// came back identical.
    QualityExact,
    QualityNumber,
    QualityRougeL,
    QualityChrf,
    QualityBleu,
    QualityChrfCorpus,
    QualityIdentical,
}

impl Scalar {
    pub const ALL: [Scalar; 36] = [
        Scalar::RequestsPerS,
        Scalar::InputTokensPerS,
        Scalar::OutputTokensPerS,
        Scalar::TotalTokensPerS,
        Scalar::PeakOutputTokensPerS,
        Scalar::GoodputRequestsPerS,
        Scalar::GoodputOutputTokensPerS,
        Scalar::SloAttainment,
        Scalar::SloLimitsAttainment,
        Scalar::UsefulWork,
        Scalar::Sent,
        Scalar::Completed,
        Scalar::Failed,
        Scalar::Cancelled,
        Scalar::ErrorRate,
        Scalar::InFlightMean,
        Scalar::InFlightPeak,
        Scalar::UsdPerMillionOutputTokens,
        Scalar::UsdPerMillionTotalTokens,
        Scalar::UsdPerRequest,
        Scalar::UsdPerMillionGoodOutputTokens,
        Scalar::UsdPerMillionInputTokens,
        Scalar::JoulesPerOutputToken,
        Scalar::OutputTokensPerSPerMw,
        Scalar::TimesReadingSpeed,
        Scalar::SessionsPerS,
        Scalar::UsdPerSession,
        Scalar::ClientCpuPerToken,
        Scalar::PrefixCacheHitRate,
        Scalar::QualityExact,
        Scalar::QualityNumber,
        Scalar::QualityRougeL,
        Scalar::QualityChrf,
        Scalar::QualityBleu,
        Scalar::QualityChrfCorpus,
        Scalar::QualityIdentical,
    ];

    /// The path as the result document spells it (`cost.…` lives beside
    /// `summary`, the rest inside it).
    pub fn key(self) -> &'static str {
        match self {
            Scalar::RequestsPerS => "throughput.requests_per_s",
            Scalar::InputTokensPerS => "throughput.input_tokens_per_s",
            Scalar::OutputTokensPerS => "throughput.output_tokens_per_s",
            Scalar::TotalTokensPerS => "throughput.total_tokens_per_s",
            Scalar::PeakOutputTokensPerS => "throughput.peak_output_tokens_per_s",
            Scalar::GoodputRequestsPerS => "goodput.requests_per_s",
            Scalar::GoodputOutputTokensPerS => "goodput.output_tokens_per_s",
            Scalar::SloAttainment => "goodput.slo_attainment",
            Scalar::SloLimitsAttainment => "slo.attainment.measured",
            Scalar::UsefulWork => "goodput.useful_work",
            Scalar::Sent => "requests.sent",
            Scalar::Completed => "requests.completed",
            Scalar::Failed => "requests.failed",
            Scalar::Cancelled => "requests.cancelled",
            Scalar::ErrorRate => "error_rate",
            Scalar::InFlightMean => "in_flight.mean",
            Scalar::InFlightPeak => "in_flight.peak",
            Scalar::UsdPerMillionOutputTokens => "cost.usd_per_million_output_tokens",
            Scalar::UsdPerMillionTotalTokens => "cost.usd_per_million_total_tokens",
            Scalar::UsdPerRequest => "cost.usd_per_request",
            Scalar::UsdPerMillionGoodOutputTokens => "cost.usd_per_million_good_output_tokens",
            Scalar::UsdPerMillionInputTokens => "cost.usd_per_million_input_tokens",
            Scalar::JoulesPerOutputToken => "energy.joules_per_output_token",
            Scalar::OutputTokensPerSPerMw => "energy.output_tokens_per_s_per_provisioned_mw",
            Scalar::TimesReadingSpeed => "ratings.times_reading_speed",
            Scalar::SessionsPerS => "sessions.per_s",
            Scalar::UsdPerSession => "cost.usd_per_session",
            Scalar::ClientCpuPerToken => "client.cpu_us_per_output_token",
            Scalar::PrefixCacheHitRate => "server.prefix_cache_hit_rate",
            Scalar::QualityExact => "quality.exact.mean",
            Scalar::QualityNumber => "quality.number.mean",
            Scalar::QualityRougeL => "quality.rouge_l.mean",
            Scalar::QualityChrf => "quality.chrf.mean",
            Scalar::QualityBleu => "quality.bleu",
            Scalar::QualityChrfCorpus => "quality.chrf_corpus",
            Scalar::QualityIdentical => "quality.consistency.identical_share",
        }
    }

    /// Shorter names accepted on the command line, among them the column
    /// each figure has in `summary.csv` (`usd_per_million_output_tokens`).
    pub(super) fn aliases(self) -> &'static [&'static str] {
        match self {
            Scalar::RequestsPerS => &["requests_per_s"],
            Scalar::InputTokensPerS => &["input_tokens_per_s"],
            Scalar::OutputTokensPerS => &["output_tokens_per_s"],
            Scalar::TotalTokensPerS => &["total_tokens_per_s"],
            Scalar::PeakOutputTokensPerS => &["peak_output_tokens_per_s"],
            // docs/metrics.md: "goodput" is good requests per second.
            Scalar::GoodputRequestsPerS => &["goodput", "goodput_requests_per_s"],
            Scalar::GoodputOutputTokensPerS => &["goodput_tokens_per_s", "goodput_output_tokens_per_s"],
            Scalar::SloAttainment => &["slo_attainment"],
            Scalar::SloLimitsAttainment => &["slo_limits_attainment"],
            Scalar::UsefulWork => &["useful_work"],
            Scalar::UsdPerMillionOutputTokens => &["usd_per_million_output_tokens"],
            Scalar::UsdPerMillionTotalTokens => &["usd_per_million_total_tokens"],
            Scalar::UsdPerRequest => &["usd_per_request"],
            Scalar::UsdPerMillionGoodOutputTokens => &["usd_per_million_good_output_tokens"],
            Scalar::UsdPerMillionInputTokens => &["usd_per_million_input_tokens"],
            Scalar::UsdPerSession => &["usd_per_session"],
            Scalar::PrefixCacheHitRate => &["prefix_cache_hit_rate"],
            Scalar::JoulesPerOutputToken => &["joules_per_output_token"],
            Scalar::OutputTokensPerSPerMw => &["output_tokens_per_s_per_provisioned_mw"],
            Scalar::QualityExact => &["quality.exact"],
            Scalar::QualityNumber => &["quality.number"],
            Scalar::QualityRougeL => &["quality.rouge_l"],
            Scalar::QualityChrf => &["quality.chrf"],
            _ => &[],
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Scalar::RequestsPerS => "requests/s",
            Scalar::InputTokensPerS => "input tok/s",
            Scalar::OutputTokensPerS => "output tok/s",
            Scalar::TotalTokensPerS => "total tok/s",
            Scalar::PeakOutputTokensPerS => "peak output tok/s",
            Scalar::GoodputRequestsPerS => "goodput req/s",
            Scalar::GoodputOutputTokensPerS => "goodput tok/s",
            Scalar::SloAttainment => "SLO attainment",
            Scalar::SloLimitsAttainment => "SLO attainment (limits)",
            Scalar::UsefulWork => "useful work",
            Scalar::Sent => "requests sent",
            Scalar::Completed => "requests completed",
            Scalar::Failed => "requests failed",
            Scalar::Cancelled => "requests cancelled",
            Scalar::ErrorRate => "error rate",
            Scalar::InFlightMean => "in flight (mean)",
            Scalar::InFlightPeak => "in flight (peak)",
            Scalar::UsdPerMillionOutputTokens => "$ per M output tokens",
            Scalar::UsdPerMillionTotalTokens => "$ per M total tokens",
            Scalar::UsdPerRequest => "$ per request",
            Scalar::UsdPerMillionGoodOutputTokens => "$ per M good output tokens",
            Scalar::UsdPerMillionInputTokens => "$ per M input tokens",
            Scalar::JoulesPerOutputToken => "J per output token",
            Scalar::OutputTokensPerSPerMw => "output tok/s per MW",
            Scalar::TimesReadingSpeed => "× reading speed",
            Scalar::SessionsPerS => "sessions/s",
            Scalar::UsdPerSession => "$ per session",
            Scalar::ClientCpuPerToken => "client CPU µs/token",
            Scalar::PrefixCacheHitRate => "prefix cache hits",
            Scalar::QualityExact => "exact match",
            Scalar::QualityNumber => "number match",
            Scalar::QualityRougeL => "ROUGE-L",
            Scalar::QualityChrf => "chrF",
            Scalar::QualityBleu => "BLEU",
            Scalar::QualityChrfCorpus => "chrF (corpus)",
            Scalar::QualityIdentical => "repeats identical",
        }
    }

    pub(super) fn of(self, r: &RunResult) -> Option<f64> {
        let s = &r.summary;
        let th = &s.throughput;
        let g = s.goodput.as_ref();
        let c = r.cost.as_ref();
        match self {
            Scalar::RequestsPerS => Some(th.requests_per_s),
            Scalar::InputTokensPerS => Some(th.input_tokens_per_s),
            Scalar::OutputTokensPerS => Some(th.output_tokens_per_s),
            Scalar::TotalTokensPerS => Some(th.total_tokens_per_s),
            Scalar::PeakOutputTokensPerS => crate::read::peers::peak_output_tokens_per_s(r),
            Scalar::GoodputRequestsPerS => g.map(|g| g.requests_per_s),
            Scalar::GoodputOutputTokensPerS => g.map(|g| g.output_tokens_per_s),
            Scalar::SloAttainment => g.map(|g| g.slo_attainment),
            Scalar::SloLimitsAttainment => r.slo.as_ref().and_then(|s| s.limits_attainment()),
            Scalar::UsefulWork => g.map(|g| g.useful_work),
            Scalar::Sent => Some(s.requests.sent as f64),
            Scalar::Completed => Some(s.requests.completed as f64),
            Scalar::Failed => Some(s.requests.failed as f64),
            Scalar::Cancelled => Some(s.requests.cancelled as f64),
            Scalar::ErrorRate => {
                let finished = s.requests.completed + s.requests.failed;
                (finished > 0).then(|| s.requests.failed as f64 / finished as f64)
            }
            Scalar::InFlightMean => Some(s.in_flight.mean),
            Scalar::InFlightPeak => Some(s.in_flight.peak as f64),
            Scalar::UsdPerMillionOutputTokens => c.and_then(|c| c.usd_per_million_output_tokens),
            Scalar::UsdPerMillionTotalTokens => c.and_then(|c| c.usd_per_million_total_tokens),
            Scalar::UsdPerRequest => c.and_then(|c| c.usd_per_request),
            Scalar::UsdPerMillionGoodOutputTokens => c.and_then(|c| c.usd_per_million_good_output_tokens),
            Scalar::UsdPerMillionInputTokens => c.and_then(|c| c.usd_per_million_input_tokens),
            Scalar::JoulesPerOutputToken => r.energy.as_ref().and_then(|e| e.joules_per_output_token),
            Scalar::OutputTokensPerSPerMw => r.energy.as_ref().and_then(|e| e.output_tokens_per_s_per_provisioned_mw),
            Scalar::TimesReadingSpeed => s.ratings.times_reading_speed,
            Scalar::SessionsPerS => s.sessions.as_ref().map(|s| s.per_s),
            Scalar::UsdPerSession => c.and_then(|c| c.usd_per_session),
            Scalar::ClientCpuPerToken => r.client.as_ref().and_then(|c| c.cpu_us_per_output_token),
            Scalar::PrefixCacheHitRate => r
                .server_signals
                .as_ref()
                .and_then(|s| s.window.prefix_cache_hit_rate)
                .or_else(|| r.engine.as_ref().and_then(|e| e.prefix_cache_hit_rate)),
            Scalar::QualityExact => s.quality.as_ref().and_then(|q| q.scores.exact.as_ref()).map(|m| m.mean),
            Scalar::QualityNumber => s.quality.as_ref().and_then(|q| q.scores.number.as_ref()).map(|m| m.mean),
            Scalar::QualityRougeL => s.quality.as_ref().and_then(|q| q.scores.rouge_l.as_ref()).map(|m| m.mean),
            Scalar::QualityChrf => s.quality.as_ref().and_then(|q| q.scores.chrf.as_ref()).map(|m| m.mean),
            Scalar::QualityBleu => s.quality.as_ref().and_then(|q| q.scores.bleu),
            Scalar::QualityChrfCorpus => s.quality.as_ref().and_then(|q| q.scores.chrf_corpus),
            Scalar::QualityIdentical => {
                s.quality.as_ref().and_then(|q| q.consistency.as_ref()).map(|c| c.identical_share)
            }
        }
    }

    pub(super) fn unit(self) -> Unit {
        match self {
            Scalar::RequestsPerS | Scalar::GoodputRequestsPerS => Unit::RequestsPerS,
            Scalar::InputTokensPerS
            | Scalar::OutputTokensPerS
            | Scalar::TotalTokensPerS
            | Scalar::PeakOutputTokensPerS
            | Scalar::GoodputOutputTokensPerS => Unit::TokensPerS,
            Scalar::SloAttainment
            | Scalar::SloLimitsAttainment
            | Scalar::UsefulWork
            | Scalar::ErrorRate
            | Scalar::QualityExact
            | Scalar::QualityNumber
            | Scalar::QualityRougeL
            | Scalar::QualityIdentical
            | Scalar::PrefixCacheHitRate => Unit::Ratio,
            Scalar::QualityChrf | Scalar::QualityBleu | Scalar::QualityChrfCorpus => Unit::Plain,
            Scalar::Sent | Scalar::Completed | Scalar::Failed | Scalar::Cancelled | Scalar::InFlightPeak => Unit::Count,
            Scalar::InFlightMean | Scalar::TimesReadingSpeed | Scalar::SessionsPerS | Scalar::ClientCpuPerToken => {
                Unit::Plain
            }
            Scalar::JoulesPerOutputToken => Unit::Joules,
            Scalar::OutputTokensPerSPerMw => Unit::Count,
            Scalar::UsdPerMillionOutputTokens
            | Scalar::UsdPerMillionTotalTokens
            | Scalar::UsdPerRequest
            | Scalar::UsdPerMillionGoodOutputTokens
            | Scalar::UsdPerMillionInputTokens
            | Scalar::UsdPerSession => Unit::Usd,
        }
    }

    pub(super) fn better(self) -> Better {
        match self {
            Scalar::RequestsPerS
            | Scalar::InputTokensPerS
            | Scalar::OutputTokensPerS
            | Scalar::TotalTokensPerS
            | Scalar::PeakOutputTokensPerS
            | Scalar::GoodputRequestsPerS
            | Scalar::GoodputOutputTokensPerS
            | Scalar::SloAttainment
            | Scalar::SloLimitsAttainment
            | Scalar::UsefulWork
            | Scalar::Completed
            | Scalar::TimesReadingSpeed
            | Scalar::SessionsPerS
            | Scalar::QualityExact
            | Scalar::QualityNumber
            | Scalar::QualityRougeL
            | Scalar::QualityChrf
            | Scalar::QualityBleu
            | Scalar::QualityChrfCorpus
            | Scalar::QualityIdentical
            | Scalar::OutputTokensPerSPerMw => Better::Higher,
            Scalar::Failed
            | Scalar::Cancelled
            | Scalar::ErrorRate
            | Scalar::UsdPerMillionOutputTokens
            | Scalar::UsdPerMillionTotalTokens
            | Scalar::UsdPerRequest
            | Scalar::UsdPerMillionGoodOutputTokens
            | Scalar::UsdPerSession
            | Scalar::UsdPerMillionInputTokens
            | Scalar::JoulesPerOutputToken
            | Scalar::ClientCpuPerToken => Better::Lower,
            // More hits is a faster run, not a better server: it explains a difference.
            Scalar::Sent | Scalar::InFlightMean | Scalar::InFlightPeak | Scalar::PrefixCacheHitRate => Better::Neither,
        }
    }
}
