//! Why another tool's result cannot be read: each message names the file,
//! what in it is wrong, and what to pass instead.

/// An import refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// A vLLM `bench serve` result whose `what` is not as vLLM writes it.
    #[error(
        "{file} is a vLLM bench serve result whose {what}: the file is damaged or from a vLLM this goodput \
         does not know; save it again with `vllm bench serve --save-result --save-detailed`"
    )]
    Vllm { file: String, what: String },
    #[error(
        "{file} is a vLLM bench serve result saved without --save-detailed: it holds vLLM's summary but no \
         per-request times, so goodput cannot recompute it; run vLLM again with --save-result --save-detailed"
    )]
    VllmNotDetailed { file: String },
    /// A GuideLLM benchmarks report whose `what` is not as GuideLLM writes it.
    #[error(
        "{file} is a GuideLLM benchmarks report whose {what}: the file is damaged or from a GuideLLM this \
         goodput does not know; pass the benchmarks.json GuideLLM wrote (guidellm run --output kind=json)"
    )]
    GuideLlm { file: String, what: String },
    #[error("{file} is a GuideLLM benchmarks report with no benchmark in it: nothing to read")]
    GuideLlmEmpty { file: String },
    #[error(
        "{file} is a GuideLLM benchmarks report of {count} benchmarks (a sweep, or several rates or streams); \
         goodput reads one run a file: run GuideLLM with one rate or stream count per --output file"
    )]
    GuideLlmSeveral { file: String, count: usize },
    /// Line `line` of an AIPerf records file is not as AIPerf writes it.
    #[error(
        "{file} line {line}: {what}: the file is damaged or from an AIPerf this goodput does not know; \
         pass the profile_export.jsonl AIPerf wrote (aiperf profile, any --export-level)"
    )]
    Aiperf { file: String, line: usize, what: String },
    /// AIPerf's summary, whose `what` is not as AIPerf writes it.
    #[error(
        "{file} is AIPerf's summary whose {what}: the file is damaged or from an AIPerf this goodput does not \
         know; pass the profile_export.jsonl AIPerf wrote, with the profile_export_aiperf.json it wrote beside it"
    )]
    AiperfSummary { file: String, what: String },
    #[error(
        "{file} is AIPerf's summary, which holds no per-request records, and its records file {records} \
         cannot be read ({error}): pass the profile_export.jsonl AIPerf wrote beside it"
    )]
    AiperfNoRecords { file: String, records: String, error: String },
    /// A file whose records would not fit in the memory the process has
    /// left: refused before they are built (an allocation that fails aborts
    /// the process, with no message of what it was reading).
    #[error(
        "{file} is {tool}'s result of {requests} requests, and goodput's records of them take about {need}, more \
         than the {left} this process has left (the machine's available memory, and ulimit -v where one is set): \
         free memory or raise the limit, or give a smaller file (a run of fewer requests)"
    )]
    OverMemory { file: String, tool: String, requests: u64, need: String, left: String },
    /// JSON nested deeper than the parser goes: no tool's result is.
    #[error(
        "{file} nests its JSON deeper than goodput reads ({error}): no result of goodput, vLLM bench serve, AIPerf \
         or GuideLLM nests so deep; is it the right file?"
    )]
    TooDeep { file: String, error: String },
    /// `--slo` judges a figure the imported file cannot give.
    #[error(
        "--slo judges {metric}, which {tool}'s file cannot give (its warnings say why): judge this run on what \
         it holds, e.g. ttft, tpot or e2e"
    )]
    SloNotInFile { metric: String, tool: String },
}
