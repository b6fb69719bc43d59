//! What each request asks: synthetic prompts of drawn lengths, or entries of a
//! dataset (JSONL or ShareGPT), with the output length to force. Item `i` is
//! a pure function of the seed and `i`, so a run can be repeated exactly.

use crate::protocol::PromptBody;
use crate::tokenizer::TokenCounter;
use goodput_core::SessionTurn;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use serde_json::Value;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// A distribution of token lengths: `128`, `uniform:64..256`,
/// `normal:512,128`, `lognormal:MEAN,SIGMA`. Draws are rounded and clamped at 1.
#[derive(Debug, Clone, PartialEq)]
pub enum LengthDist {
    Fixed(u32),
    Uniform {
        lo: u32,
        hi: u32,
    },
    Normal {
        mean: f64,
        std: f64,
    },
    /// `mean` is the mean length in tokens; `sigma` the σ of the underlying normal.
    LogNormal {
        mean: f64,
        sigma: f64,
    },
}

impl LengthDist {
    pub fn sample(&self, rng: &mut impl Rng) -> u32 {
        let x = match *self {
            LengthDist::Fixed(n) => return n.max(1),
            LengthDist::Uniform { lo, hi } => return rng.random_range(lo..=hi).max(1),
            LengthDist::Normal { mean, std } => Normal::new(mean, std).map(|d| d.sample(rng)).unwrap_or(mean),
            LengthDist::LogNormal { mean, sigma } => {
                // E[X] = exp(μ + σ²/2), so μ = ln(mean) − σ²/2 keeps the mean as given.
                let mu = mean.ln() - sigma * sigma / 2.0;
                LogNormal::new(mu, sigma).map(|d| d.sample(rng)).unwrap_or(mean)
            }
        };
        x.round().clamp(1.0, u32::MAX as f64) as u32
    }

    /// The distribution's mean, for summaries and planning.
    pub fn mean(&self) -> f64 {
        match *self {
            LengthDist::Fixed(n) => n as f64,
            LengthDist::Uniform { lo, hi } => (lo as f64 + hi as f64) / 2.0,
            LengthDist::Normal { mean, .. } | LengthDist::LogNormal { mean, .. } => mean,
        }
    }
}

/// The request shapes users name (README, "Use"), as an input and an output
/// length. They are starting points: `--input-tokens`/`--output-tokens`
/// given beside a preset win over its lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Preset {
    /// Short prompt, long answer: input lognormal:256,0.5, output lognormal:512,0.5.
    Chat,
    /// 2k+ tokens in, short out: input uniform:2048..4096, output lognormal:256,0.4.
    Summarization,
    /// Code context in, completion out: input lognormal:1024,0.6, output lognormal:256,0.6.
    Code,
    /// Long document in (the model's context must hold it), short answer out: input uniform:8192..12288, output lognormal:256,0.4.
    LongDocument,
}

impl Preset {
    pub const ALL: [Preset; 4] = [Preset::Chat, Preset::Summarization, Preset::Code, Preset::LongDocument];

    /// The name on the command line and in the result's config.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Chat => "chat",
            Preset::Summarization => "summarization",
            Preset::Code => "code",
            Preset::LongDocument => "long-document",
        }
    }

    /// Input and output lengths. Log-normal where real lengths skew long.
    pub fn lengths(self) -> (LengthDist, LengthDist) {
        let ln = |mean: f64, sigma: f64| LengthDist::LogNormal { mean, sigma };
        match self {
            Preset::Chat => (ln(256.0, 0.5), ln(512.0, 0.5)),
            Preset::Summarization => (LengthDist::Uniform { lo: 2048, hi: 4096 }, ln(256.0, 0.4)),
            Preset::Code => (ln(1024.0, 0.6), ln(256.0, 0.6)),
            Preset::LongDocument => (LengthDist::Uniform { lo: 8192, hi: 12288 }, ln(256.0, 0.4)),
        }
    }
}

impl FromStr for LengthDist {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "invalid length '{s}': {why}; expected 128, uniform:64..256, normal:512,128 or lognormal:MEAN,SIGMA"
            )
        };
        let num = |t: &str| t.trim().parse::<f64>().map_err(|_| bad(&format!("'{t}' is not a number")));
        let count = |t: &str| t.trim().parse::<u32>().map_err(|_| bad(&format!("'{t}' is not a whole number")));
        let Some((kind, args)) = s.split_once(':') else {
            let n = count(s)?;
            return if n == 0 { Err(bad("a length must be at least 1")) } else { Ok(LengthDist::Fixed(n)) };
        };
        let pair = |sep: &str| args.split_once(sep).ok_or_else(|| bad(&format!("missing '{sep}'")));
        match kind.trim() {
            "fixed" => count(args).map(LengthDist::Fixed),
            "uniform" => {
                let (a, b) = pair("..")?;
                let (lo, hi) = (count(a)?, count(b)?);
                if lo > hi {
                    return Err(bad("the lower bound is above the upper"));
                }
                Ok(LengthDist::Uniform { lo, hi })
            }
            "normal" => {
                let (a, b) = pair(",")?;
                let (mean, std) = (num(a)?, num(b)?);
                if !(mean > 0.0 && std >= 0.0) {
                    return Err(bad("the mean must be positive and the deviation not negative"));
                }
                Ok(LengthDist::Normal { mean, std })
            }
            "lognormal" => {
                let (a, b) = pair(",")?;
                let (mean, sigma) = (num(a)?, num(b)?);
                if !(mean > 0.0 && sigma >= 0.0) {
                    return Err(bad("the mean must be positive and sigma not negative"));
                }
                Ok(LengthDist::LogNormal { mean, sigma })
            }
            other => Err(bad(&format!("unknown distribution '{other}'"))),
        }
    }
}

impl fmt::Display for LengthDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthDist::Fixed(n) => write!(f, "{n}"),
            LengthDist::Uniform { lo, hi } => write!(f, "uniform:{lo}..{hi}"),
            LengthDist::Normal { mean, std } => write!(f, "normal:{mean},{std}"),
            LengthDist::LogNormal { mean, sigma } => write!(f, "lognormal:{mean},{sigma}"),
        }
    }
}

/// The pause between a session's answer and its next question: `2s`,
/// `uniform:1s..5s`, or `exponential:2s` (memoryless, with that mean).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThinkTime {
    Fixed(Duration),
    Uniform { lo: Duration, hi: Duration },
    Exponential { mean: Duration },
}

impl ThinkTime {
    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        match *self {
            ThinkTime::Fixed(d) => d,
            ThinkTime::Uniform { lo, hi } => lo + (hi - lo).mul_f64(rng.random::<f64>()),
            ThinkTime::Exponential { mean } => {
                let x: f64 = Exp::new(1.0).map(|d| d.sample(rng)).unwrap_or(1.0);
                mean.mul_f64(x.min(1e6))
            }
        }
    }
}

impl FromStr for ThinkTime {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad =
            |why: String| format!("invalid think time '{s}': {why}; expected 2s, uniform:1s..5s or exponential:2s");
        let dur =
            |t: &str| humantime::parse_duration(t.trim()).map_err(|_| bad(format!("'{}' is not a duration", t.trim())));
        match s.split_once(':') {
            None => dur(s).map(ThinkTime::Fixed),
            Some((kind, args)) => match kind.trim() {
                "fixed" => dur(args).map(ThinkTime::Fixed),
                "uniform" => {
                    let (a, b) = args.split_once("..").ok_or_else(|| bad("missing '..'".into()))?;
                    let (lo, hi) = (dur(a)?, dur(b)?);
                    if lo > hi {
                        return Err(bad("the lower bound is above the upper".into()));
                    }
                    Ok(ThinkTime::Uniform { lo, hi })
                }
                "exponential" | "exp" => dur(args).map(|mean| ThinkTime::Exponential { mean }),
                other => Err(bad(format!("unknown distribution '{other}'"))),
            },
        }
    }
}

impl fmt::Display for ThinkTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = |d: Duration| humantime::format_duration(d).to_string();
        match *self {
            ThinkTime::Fixed(d) => write!(f, "{}", h(d)),
            ThinkTime::Uniform { lo, hi } => write!(f, "uniform:{}..{}", h(lo), h(hi)),
            ThinkTime::Exponential { mean } => write!(f, "exponential:{}", h(mean)),
        }
    }
}

/// Multi-turn conversations (README, "Use"): each session asks `turns`
/// questions, each after the answer to the one before and a think time, and
/// each carries the whole conversation so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Sessions {
    pub turns: Turns,
    pub think: ThinkTime,
}

/// How many turns a session holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Turns {
    /// Drawn per session (at least 1); a dataset's conversation caps it.
    Drawn(LengthDist),
    /// Each dataset conversation's own.
    All,
}

impl Turns {
    /// The turns of every session, when a fixed count (`--turns N`) sets
    /// them (at least 1); a dataset's conversation may still be shorter.
    pub fn fixed(&self) -> Option<u32> {
        match self {
            Turns::Drawn(LengthDist::Fixed(k)) => Some((*k).max(1)),
            _ => None,
        }
    }
}

impl FromStr for Turns {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "all" {
            return Ok(Turns::All);
        }
        s.parse().map(Turns::Drawn).map_err(|e: String| {
            e.replace("invalid length", "invalid turn count")
                .replace("expected 128", "expected all (a dataset's own), 3")
        })
    }
}

impl fmt::Display for Turns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Turns::Drawn(d) => d.fmt(f),
            Turns::All => f.write_str("all"),
        }
    }
}

const SESSION_SALT: u64 = 0x5E55_1045_u64;
const QUESTION_SALT: u64 = 0x0A5C_ED0F_u64;

impl Sessions {
    /// Session `s`'s turn count (at most `available`, the questions its
    /// conversation holds, when bounded), and the think time before each
    /// turn after the first: a pure function of the seed and `s`.
    pub fn shape(&self, seed: u64, s: u64, available: Option<u32>) -> Result<(u32, Vec<Duration>), String> {
        let mut rng = item_rng(seed ^ SESSION_SALT, s);
        let drawn = match &self.turns {
            Turns::Drawn(d) => d.sample(&mut rng).max(1),
            Turns::All => available.ok_or(
                "--turns all plays each ShareGPT conversation's own turns; synthetic questions need a count \
                 (--turns 3, or uniform:2..6)",
            )?,
        };
        let turns = drawn.min(available.unwrap_or(u32::MAX)).max(1);
        let think = (1..turns).map(|_| self.think.sample(&mut rng)).collect();
        Ok((turns, think))
    }
}

/// A conversation being held: the turns so far and their tokens. Each
/// question is asked with the whole history before it.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    turns: Vec<String>,
    /// Tokens of the history: the questions as meant, the answers as counted.
    tokens: u64,
}

impl Conversation {
    /// The request that asks `question` after the history.
    pub fn ask(&mut self, question: WorkItem) -> WorkItem {
        let PromptBody::Text(text) = question.prompt else { unreachable!("session questions are synthetic text") };
        self.turns.push(text);
        let asked = question.intended_input_tokens.unwrap_or(0);
        self.tokens += asked;
        WorkItem {
            prompt: PromptBody::Turns(self.turns.clone()),
            intended_input_tokens: Some(self.tokens),
            max_tokens: question.max_tokens,
            session: question.session,
        }
    }

    /// The answer to the last question, `tokens` long, joins the history.
    pub fn answered(&mut self, reply: String, tokens: u64) {
        self.turns.push(reply);
        self.tokens += tokens;
    }
}

/// One request's content.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkItem {
    pub prompt: PromptBody,
    /// Input tokens the generator meant (exact with a tokenizer).
    pub intended_input_tokens: Option<u64>,
    /// `max_tokens` to send.
    pub max_tokens: Option<u32>,
    /// The session and turn the request is, for headers that name it
    /// (`{session}`), models spread by session, and cancellations picked by
    /// turn.
    pub session: Option<SessionTurn>,
}

/// One entry of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetEntry {
    pub prompt: PromptBody,
    pub max_tokens: Option<u32>,
    /// A ShareGPT conversation's later questions, each with the length of
    /// the answer it got: the turns of a session (`--turns`).
    pub follow_ups: Vec<(String, Option<u32>)>,
}

/// A system prompt shared by a share of requests, placed before each prompt
/// so that servers with prefix caching can reuse its KV blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharedPrefix {
    /// Tokens of the shared prefix, on top of the drawn input length.
    pub tokens: u32,
    /// Share of requests that carry one (0..=1).
    pub ratio: f64,
    /// Distinct prefixes to draw from.
    pub count: u32,
}

impl SharedPrefix {
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.ratio) {
            return Err(format!("--shared-prefix-ratio must be between 0 and 1, not {}", self.ratio));
        }
        if self.count == 0 {
            return Err("--shared-prefixes must be at least 1".into());
        }
        Ok(())
    }
}

/// The lengths of one synthetic request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lengths {
    /// Input tokens, shared prefix included.
    pub input: u32,
    pub output: u32,
    /// `(prefix id, prefix tokens)` when the request carries a shared prefix.
    pub prefix: Option<(u64, u32)>,
}

/// Where prompts come from.
#[derive(Debug, Clone)]
pub enum Workload {
    Synthetic {
        input: LengthDist,
        output: LengthDist,
        seed: u64,
        tokenizer: Option<Arc<TokenCounter>>,
        shared_prefix: Option<SharedPrefix>,
    },
    /// Lengths and prefixes from a trace (its times go to the load plan).
    Trace { entries: Arc<Vec<crate::trace::TraceEntry>>, seed: u64, tokenizer: Option<Arc<TokenCounter>> },
    Dataset {
        entries: Arc<Vec<DatasetEntry>>,
        /// Overrides the entries' own lengths when given.
        output: Option<LengthDist>,
        /// A seeded permutation of the entries, cycled.
        order: Arc<Vec<usize>>,
        seed: u64,
    },
}

impl Workload {
    pub fn dataset(entries: Vec<DatasetEntry>, output: Option<LengthDist>, seed: u64) -> Self {
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.shuffle(&mut StdRng::seed_from_u64(seed));
        Workload::Dataset { entries: Arc::new(entries), output, order: Arc::new(order), seed }
    }

    /// The lengths of synthetic request `i` (the same draws `item` makes,
    /// without building any text), or `None` for a dataset.
    pub fn lengths(&self, i: u64) -> Option<Lengths> {
        match self {
            Workload::Synthetic { input, output, seed, shared_prefix, .. } => {
                Some(draw_lengths(&mut item_rng(*seed, i), input, output, shared_prefix.as_ref()))
            }
            Workload::Trace { entries, .. } => entries.get(i as usize).map(|e| e.lengths),
            Workload::Dataset { .. } => None,
        }
    }

    /// The question of turn `turn` (0 for the opening one) of session `s`,
    /// alone: a [`Conversation`] puts the history before it. Synthetic
    /// questions carry the shared prefix on the opening turn, if any; a
    /// dataset's are its conversation's human turns.
    pub fn question(&self, s: u64, turn: u32) -> Result<WorkItem, String> {
        match self {
            Workload::Synthetic { input, output, seed, tokenizer, shared_prefix } => {
                let (mut rng, l) = synthetic_question(*seed, input, output, shared_prefix.as_ref(), s, turn);
                Ok(synthetic_item(&mut rng, *seed, l, tokenizer.as_deref()))
            }
            Workload::Dataset { entries, output, order, seed } => {
                // Session s holds conversation s of the seeded order, as lone requests take entries.
                let e = dataset_entry(entries, order, s);
                let (prompt, max_tokens) = match turn.checked_sub(1) {
                    None => match &e.prompt {
                        PromptBody::Text(t) => (t.clone(), e.max_tokens),
                        _ => {
                            return Err("a JSONL entry of chat messages is one request; multi-turn sessions from a \
                                        dataset need ShareGPT conversations (or prompts as {\"prompt\": …})"
                                .into())
                        }
                    },
                    Some(k) => e.follow_ups.get(k as usize).cloned().ok_or("the conversation has no more questions")?,
                };
                let max_tokens = match output {
                    Some(d) => Some(d.sample(&mut item_rng(*seed ^ QUESTION_SALT, s ^ u64::from(turn) << 48))),
                    None => max_tokens,
                };
                Ok(WorkItem {
                    prompt: PromptBody::Text(prompt),
                    intended_input_tokens: None,
                    max_tokens,
                    session: None,
                })
            }
            Workload::Trace { .. } => Err("--trace replays single requests: drop --turns".into()),
        }
    }

    /// The lengths of synthetic [`Workload::question`]s (the same draws,
    /// without building any text), or `None` for a dataset or a trace.
    pub fn question_lengths(&self, s: u64, turn: u32) -> Option<Lengths> {
        match self {
            Workload::Synthetic { input, output, seed, shared_prefix, .. } => {
                Some(synthetic_question(*seed, input, output, shared_prefix.as_ref(), s, turn).1)
            }
            _ => None,
        }
    }

    /// Whether sessions can be held: a dataset must hold conversations of
    /// more than one question.
    pub fn check_sessions(&self) -> Result<(), String> {
        match self {
            Workload::Dataset { entries, .. } if entries.iter().all(|e| e.follow_ups.is_empty()) => Err(
                "the dataset holds no conversation of more than one question: --turns needs ShareGPT conversations \
                 with several human turns, or synthetic questions (drop --dataset)"
                    .into(),
            ),
            _ => Ok(()),
        }
    }

    /// The questions session `s` can ask: a dataset conversation's, or
    /// unbounded for synthetic ones.
    pub fn conversation_turns(&self, s: u64) -> Option<u32> {
        match self {
            Workload::Dataset { entries, order, .. } => {
                Some(1 + dataset_entry(entries, order, s).follow_ups.len() as u32)
            }
            _ => None,
        }
    }

    /// The content of request `i`.
    pub fn item(&self, i: u64) -> WorkItem {
        match self {
            Workload::Synthetic { input, output, seed, tokenizer, shared_prefix } => {
                let mut rng = item_rng(*seed, i);
                let l = draw_lengths(&mut rng, input, output, shared_prefix.as_ref());
                synthetic_item(&mut rng, *seed, l, tokenizer.as_deref())
            }
            Workload::Trace { entries, seed, tokenizer } => {
                // Past the trace's end (never sent by a plan that replays it) the lines cycle.
                let l = entries[(i % entries.len() as u64) as usize].lengths;
                synthetic_item(&mut item_rng(*seed, i), *seed, l, tokenizer.as_deref())
            }
            Workload::Dataset { entries, output, order, seed } => {
                let e = dataset_entry(entries, order, i);
                let max_tokens = match output {
                    Some(d) => Some(d.sample(&mut item_rng(*seed, i))),
                    None => e.max_tokens,
                };
                WorkItem { prompt: e.prompt.clone(), intended_input_tokens: None, max_tokens, session: None }
            }
        }
    }
}

const PREFIX_SALT: u64 = 0x05EE_D0F5_A4ED_u64;

/// Entry `i` of a dataset's seeded order, cycled.
fn dataset_entry<'a>(entries: &'a [DatasetEntry], order: &[usize], i: u64) -> &'a DatasetEntry {
    &entries[order[(i % order.len() as u64) as usize]]
}

/// The draws of synthetic question `turn` of session `s`: its lengths (the
/// shared prefix on the opening turn only), and the generator its text
/// comes from.
fn synthetic_question(
    seed: u64,
    input: &LengthDist,
    output: &LengthDist,
    shared_prefix: Option<&SharedPrefix>,
    s: u64,
    turn: u32,
) -> (StdRng, Lengths) {
    let session_seed: u64 = item_rng(seed ^ QUESTION_SALT, s).random();
    let mut rng = item_rng(session_seed, u64::from(turn));
    let l = draw_lengths(&mut rng, input, output, shared_prefix.filter(|_| turn == 0));
    (rng, l)
}

/// A synthetic prompt of `l`'s lengths: its shared prefix (the same text for
/// the same prefix id), then text of its own from `rng`.
fn synthetic_item(rng: &mut StdRng, seed: u64, l: Lengths, tokenizer: Option<&TokenCounter>) -> WorkItem {
    let unique = l.input - l.prefix.map_or(0, |p| p.1);
    let mut text = match l.prefix {
        Some((id, n)) => {
            let mut prng = item_rng(seed ^ PREFIX_SALT, id);
            let mut t = synthetic_text(&mut prng, n, tokenizer);
            t.push(' ');
            t
        }
        None => String::new(),
    };
    text.push_str(&synthetic_text(rng, unique, tokenizer));
    WorkItem {
        prompt: PromptBody::Text(text),
        intended_input_tokens: Some(l.input as u64),
        max_tokens: Some(l.output),
        session: None,
    }
}

fn draw_lengths(rng: &mut StdRng, input: &LengthDist, output: &LengthDist, prefix: Option<&SharedPrefix>) -> Lengths {
    let n_in = input.sample(rng);
    let n_out = output.sample(rng);
    let prefix = prefix.filter(|p| p.tokens > 0).and_then(|p| {
        let carries = rng.random::<f64>() < p.ratio;
        let id = rng.random_range(0..p.count) as u64;
        carries.then_some((id, p.tokens))
    });
    Lengths { input: n_in + prefix.map_or(0, |p| p.1), output: n_out, prefix }
}

fn item_rng(seed: u64, i: u64) -> StdRng {
    // Independent streams per item whatever the order of requests.
    StdRng::seed_from_u64(goodput_core::hash::draw(seed, i))
}

/// Common English words that every mainstream BPE vocabulary holds as one
/// token after a space, so a prompt of n words is close to n tokens even
/// without a tokenizer.
pub const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "time",
    "people",
    "year",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "system",
    "program",
    "question",
    "work",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "name",
    "team",
    "minute",
    "idea",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
    "good",
    "new",
    "first",
    "last",
    "long",
    "great",
    "little",
    "own",
    "other",
    "old",
    "big",
    "high",
    "different",
    "small",
    "large",
    "next",
    "early",
    "young",
    "important",
    "few",
    "public",
    "bad",
    "same",
    "able",
];

fn synthetic_text(rng: &mut StdRng, n: u32, tokenizer: Option<&TokenCounter>) -> String {
    let mut words: Vec<&str> = (0..n).map(|_| WORDS[rng.random_range(0..WORDS.len())]).collect();
    let Some(tok) = tokenizer else {
        return words.join(" ");
    };
    // With a tokenizer the length is made exact: add words until long enough,
    // then cut at the n-th token's end. A tokenizer that gives next to no
    // tokens for the words (refused when loaded if it gives none) ends the
    // growing at 64 times the words asked, with the text as long as it got.
    let most = (n as usize).max(8) * 64;
    loop {
        let text = words.join(" ");
        match tok.truncate(&text, n as usize) {
            Some(cut) => return cut,
            None if words.len() >= most => return text,
            None => words.extend((0..n.max(8) / 4).map(|_| WORDS[rng.random_range(0..WORDS.len())])),
        }
    }
}

/// Reads a dataset: ShareGPT JSON (an array of `{"conversations": [...]}`) or
/// JSONL of `{"prompt": …}` / `{"messages": …}` with optional `max_tokens`.
pub fn load_dataset(path: &Path, tokenizer: Option<&TokenCounter>) -> Result<Vec<DatasetEntry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read dataset {}: {e}", path.display()))?;
    // Editors on Windows begin UTF-8 files with a byte-order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let trimmed = text.trim_start();
    let entries = if trimmed.starts_with('[') {
        let v: Value = serde_json::from_str(trimmed)
            .map_err(|e| format!("dataset {} looks like a JSON array but does not parse: {e}", path.display()))?;
        sharegpt(&v, tokenizer).map_err(|e| format!("dataset {}: {e}", path.display()))?
    } else {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line)
                .map_err(|e| format!("dataset {} line {}: not JSON ({e})", path.display(), i + 1))?;
            out.push(jsonl_entry(&v).map_err(|e| format!("dataset {} line {}: {e}", path.display(), i + 1))?);
        }
        out
    };
    if entries.is_empty() {
        return Err(format!("dataset {} holds no usable entry", path.display()));
    }
    Ok(entries)
}

fn jsonl_entry(v: &Value) -> Result<DatasetEntry, String> {
    let max_tokens = match v.get("max_tokens") {
        None | Some(Value::Null) => None,
        Some(m) => Some(
            m.as_u64()
                .filter(|&n| n > 0 && n <= u32::MAX as u64)
                .ok_or("\"max_tokens\" must be a positive whole number")? as u32,
        ),
    };
    let prompt = if let Some(p) = v.get("prompt") {
        PromptBody::Text(p.as_str().ok_or("\"prompt\" must be a string")?.to_owned())
    } else if let Some(m) = v.get("messages") {
        let msgs = m.as_array().ok_or("\"messages\" must be an array")?;
        if msgs.is_empty() {
            return Err("\"messages\" is empty".into());
        }
        PromptBody::Messages(msgs.clone())
    } else {
        return Err("an entry needs \"prompt\" (a string) or \"messages\" (chat messages)".into());
    };
    Ok(DatasetEntry { prompt, max_tokens, follow_ups: Vec::new() })
}

fn sharegpt(v: &Value, tokenizer: Option<&TokenCounter>) -> Result<Vec<DatasetEntry>, String> {
    let arr = v.as_array().ok_or("expected a JSON array")?;
    let mut out = Vec::new();
    for item in arr {
        let Some(conv) = item.get("conversations").and_then(Value::as_array) else {
            continue;
        };
        // The first human turn is the prompt; the reply that follows sets the output length.
        let turn = |i: usize| conv.get(i).and_then(|t| t.get("value")).and_then(Value::as_str);
        let (Some(prompt), Some(reply)) = (turn(0), turn(1)) else {
            continue;
        };
        if prompt.is_empty() || reply.is_empty() {
            continue;
        }
        let reply_tokens = |reply: &str| {
            let n = match tokenizer {
                Some(t) => t.count(reply),
                None => reply.len().div_ceil(4), // ≈4 characters a token for English
            };
            n.max(1) as u32
        };
        // Later questions, each with the answer it got, while the turns alternate.
        let follow_ups = (1..)
            .map_while(|k| Some((turn(2 * k)?, turn(2 * k + 1)?)))
            .take_while(|(q, a)| !q.is_empty() && !a.is_empty())
            .map(|(q, a)| (q.to_owned(), Some(reply_tokens(a))))
            .collect();
        out.push(DatasetEntry {
            prompt: PromptBody::Text(prompt.to_owned()),
            max_tokens: Some(reply_tokens(reply)),
            follow_ups,
        });
    }
    if out.is_empty() && !arr.is_empty() {
        return Err("no entry with \"conversations\" holding a prompt and a reply (ShareGPT format)".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_drawn_from_the_seed_and_conversations_carry_their_history() {
        let w = Workload::Synthetic {
            input: LengthDist::Fixed(8),
            output: LengthDist::Fixed(3),
            seed: 5,
            tokenizer: None,
            shared_prefix: Some(SharedPrefix { tokens: 16, ratio: 1.0, count: 1 }),
        };
        // A question is a pure function of (seed, session, turn); only the opening one has the prefix.
        assert_eq!(w.question(4, 1).unwrap(), w.question(4, 1).unwrap());
        assert_ne!(w.question(4, 1).unwrap(), w.question(5, 1).unwrap());
        assert_eq!(w.question(4, 0).unwrap().intended_input_tokens, Some(24));
        assert_eq!(w.question(4, 1).unwrap().intended_input_tokens, Some(8));
        assert_eq!(w.question_lengths(4, 0).unwrap().prefix, Some((0, 16)));
        let mut c = Conversation::default();
        let first = c.ask(w.question(4, 0).unwrap());
        c.answered("an answer".into(), 3);
        let second = c.ask(w.question(4, 1).unwrap());
        let PromptBody::Turns(parts) = &second.prompt else { panic!("not a conversation") };
        assert_eq!(parts.len(), 3);
        assert_eq!(PromptBody::Turns(vec![parts[0].clone()]), first.prompt);
        assert_eq!(parts[1], "an answer");
        assert_eq!(second.intended_input_tokens, Some(24 + 3 + 8));
        assert_eq!(second.max_tokens, Some(3));
        // A dataset of chat messages brings no questions.
        let msgs = PromptBody::Messages(vec![serde_json::json!({"role": "user", "content": "x"})]);
        let d = Workload::dataset(vec![DatasetEntry { prompt: msgs, max_tokens: None, follow_ups: vec![] }], None, 0);
        assert!(d.question(0, 0).unwrap_err().contains("ShareGPT"));
        let all = Sessions { turns: Turns::All, think: ThinkTime::Fixed(Duration::ZERO) };
        assert!(all.shape(0, 0, None).unwrap_err().contains("--turns all"));
        assert_eq!("all".parse::<Turns>().unwrap(), Turns::All);
        assert!("x".parse::<Turns>().unwrap_err().contains("invalid turn count"));

        // Turn counts and think times per session.
        let s = Sessions {
            turns: Turns::Drawn(LengthDist::Uniform { lo: 2, hi: 6 }),
            think: "exponential:2s".parse().unwrap(),
        };
        let shapes: Vec<(u32, Vec<Duration>)> = (0..2000).map(|i| s.shape(1, i, None).unwrap()).collect();
        assert_eq!(shapes[7], s.shape(1, 7, None).unwrap());
        assert_eq!(s.shape(1, 7, Some(1)).unwrap(), (1, vec![]), "a conversation's questions cap the turns");
        assert!(shapes.iter().all(|(n, t)| (2..=6).contains(n) && t.len() == *n as usize - 1));
        let thinks: Vec<f64> = shapes.iter().flat_map(|(_, t)| t.iter().map(Duration::as_secs_f64)).collect();
        let mean = thinks.iter().sum::<f64>() / thinks.len() as f64;
        assert!((mean - 2.0).abs() < 0.1, "exponential think time of mean 2 s, drew {mean}");
    }

    #[test]
    fn think_times_parse_and_print() {
        for (text, want) in [
            ("2s", ThinkTime::Fixed(Duration::from_secs(2))),
            ("uniform:500ms..3s", ThinkTime::Uniform { lo: Duration::from_millis(500), hi: Duration::from_secs(3) }),
            ("exponential:2s", ThinkTime::Exponential { mean: Duration::from_secs(2) }),
        ] {
            let t: ThinkTime = text.parse().unwrap();
            assert_eq!(t, want);
            assert_eq!(t.to_string().parse::<ThinkTime>().unwrap(), want, "{text} round-trips");
        }
        for bad in ["2", "uniform:3s..1s", "gamma:2s", "uniform:1s"] {
            let e = bad.parse::<ThinkTime>().unwrap_err();
            assert!(e.contains("expected 2s, uniform:1s..5s or exponential:2s"), "{e}");
        }
    }

    #[test]
    fn parses_length_specs() {
        assert_eq!("128".parse(), Ok(LengthDist::Fixed(128)));
        assert_eq!("uniform:64..256".parse(), Ok(LengthDist::Uniform { lo: 64, hi: 256 }));
        assert_eq!("normal:512,128".parse(), Ok(LengthDist::Normal { mean: 512.0, std: 128.0 }));
        assert_eq!("lognormal:300,0.5".parse(), Ok(LengthDist::LogNormal { mean: 300.0, sigma: 0.5 }));
        for bad in ["0", "abc", "uniform:9..3", "normal:5", "zipf:1,2", "lognormal:-1,1", "uniform:1-3"] {
            let e = bad.parse::<LengthDist>().unwrap_err();
            assert!(e.contains("expected 128"), "{bad}: {e}");
        }
        for s in ["128", "uniform:64..256", "normal:512,128", "lognormal:300,0.5"] {
            assert_eq!(s.parse::<LengthDist>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn presets_have_the_shapes_their_names_promise() {
        let mut rng = StdRng::seed_from_u64(7);
        let mean = |d: &LengthDist, rng: &mut StdRng| (0..20_000).map(|_| d.sample(rng) as f64).sum::<f64>() / 20_000.0;
        for p in Preset::ALL {
            let (input, output) = p.lengths();
            let (i, o) = (mean(&input, &mut rng), mean(&output, &mut rng));
            assert!((i / input.mean() - 1.0).abs() < 0.03 && (o / output.mean() - 1.0).abs() < 0.03, "{p:?}");
            match p {
                // Short prompt, long answer.
                Preset::Chat => assert!(o > 1.5 * i),
                // Long in, short out; summarisation is 2k+ tokens in every draw.
                Preset::Summarization | Preset::LongDocument => {
                    assert!(i > 8.0 * o);
                    assert!((0..1000).all(|_| input.sample(&mut rng) >= 2048));
                }
                Preset::Code => assert!(i > 2.0 * o),
            }
        }
        let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names, ["chat", "summarization", "code", "long-document"]);
    }

    #[test]
    fn samples_respect_bounds_and_means() {
        let mut rng = StdRng::seed_from_u64(1);
        let u: LengthDist = "uniform:10..20".parse().unwrap();
        assert!((0..1000).map(|_| u.sample(&mut rng)).all(|x| (10..=20).contains(&x)));
        let n: LengthDist = "normal:5,50".parse().unwrap();
        assert!((0..1000).all(|_| n.sample(&mut rng) >= 1), "clamped at 1");
        let l: LengthDist = "lognormal:400,0.6".parse().unwrap();
        let mean = (0..20000).map(|_| l.sample(&mut rng) as f64).sum::<f64>() / 20000.0;
        assert!((mean - 400.0).abs() < 12.0, "lognormal mean {mean}");
    }

    #[test]
    fn synthetic_items_are_deterministic_and_of_the_asked_length() {
        let w = Workload::Synthetic {
            input: LengthDist::Fixed(50),
            output: LengthDist::Fixed(7),
            seed: 3,
            tokenizer: None,
            shared_prefix: None,
        };
        let (a, b) = (w.item(5), w.item(5));
        assert_eq!(a, b);
        assert_ne!(w.item(5), w.item(6));
        let PromptBody::Text(t) = &a.prompt else { panic!() };
        assert_eq!(t.split_whitespace().count(), 50);
        assert_eq!((a.intended_input_tokens, a.max_tokens), (Some(50), Some(7)));
    }

    #[test]
    fn shared_prefixes_are_common_text_and_lengths_match_items() {
        let w = Workload::Synthetic {
            input: "uniform:10..20".parse().unwrap(),
            output: LengthDist::Fixed(7),
            seed: 3,
            tokenizer: None,
            shared_prefix: Some(SharedPrefix { tokens: 30, ratio: 0.5, count: 2 }),
        };
        let mut by_prefix: std::collections::HashMap<u64, Vec<String>> = Default::default();
        let mut without = 0;
        for i in 0..200 {
            let (l, item) = (w.lengths(i).unwrap(), w.item(i));
            let PromptBody::Text(t) = &item.prompt else { panic!() };
            let words: Vec<&str> = t.split_whitespace().collect();
            assert_eq!(words.len() as u32, l.input, "lengths() agrees with item()");
            assert_eq!(item.intended_input_tokens, Some(l.input as u64));
            match l.prefix {
                Some((id, n)) => by_prefix.entry(id).or_default().push(words[..n as usize].join(" ")),
                None => without += 1,
            }
        }
        assert!((60..140).contains(&without), "about half carry a prefix: {without}");
        assert_eq!(by_prefix.len(), 2);
        for texts in by_prefix.values() {
            assert!(texts.iter().all(|t| t == &texts[0]), "one prefix, one text");
        }
        assert_ne!(by_prefix[&0][0], by_prefix[&1][0]);
    }

    #[test]
    fn a_byte_order_mark_before_a_dataset_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [
            ("d.jsonl", "\u{feff}{\"prompt\":\"hello\"}\n"),
            (
                "s.json",
                "\u{feff}[{\"conversations\":[{\"from\":\"human\",\"value\":\"hello\"},{\"from\":\"gpt\",\"value\":\"hi\"}]}]",
            ),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            let e = load_dataset(&p, None).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(e[0].prompt, PromptBody::Text("hello".into()), "{name}");
        }
    }

    #[test]
    fn jsonl_and_sharegpt_datasets() {
        let dir = tempfile::tempdir().unwrap();
        let jl = dir.path().join("d.jsonl");
        std::fs::write(
            &jl,
            "{\"prompt\":\"hello\",\"max_tokens\":5}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n",
        )
        .unwrap();
        let e = load_dataset(&jl, None).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0],
            DatasetEntry { prompt: PromptBody::Text("hello".into()), max_tokens: Some(5), follow_ups: vec![] }
        );
        assert!(matches!(e[1].prompt, PromptBody::Messages(_)));

        let sg = dir.path().join("s.json");
        std::fs::write(&sg, r#"[{"id":"a","conversations":[{"from":"human","value":"What is up?"},{"from":"gpt","value":"Not much, friend."}]},{"id":"b","conversations":[{"from":"human","value":"x"}]}]"#).unwrap();
        let e = load_dataset(&sg, None).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].max_tokens, Some(5));
        assert!(e[0].follow_ups.is_empty());
        // A conversation's later questions, each with its answer's length, while the turns alternate.
        std::fs::write(
            &sg,
            r#"[{"conversations":[{"from":"human","value":"Hi"},{"from":"gpt","value":"Hello there"},
                {"from":"human","value":"And then?"},{"from":"gpt","value":"Then this, at length."},
                {"from":"human","value":"Last"}]}]"#,
        )
        .unwrap();
        let e = load_dataset(&sg, None).unwrap();
        assert_eq!(e[0].follow_ups, [("And then?".to_string(), Some(6))]);
        let w = Workload::dataset(e, None, 0);
        assert_eq!(w.conversation_turns(0), Some(2));
        let q = w.question(0, 1).unwrap();
        assert_eq!((q.prompt, q.max_tokens), (PromptBody::Text("And then?".into()), Some(6)));
        assert_eq!(w.question(0, 0).unwrap().max_tokens, Some(3));

        let bad = dir.path().join("b.jsonl");
        std::fs::write(&bad, "{\"prompt\":\"ok\"}\n{\"text\":\"no\"}\n").unwrap();
        let err = load_dataset(&bad, None).unwrap_err();
        assert!(err.contains("line 2") && err.contains("\"prompt\""), "{err}");
        let missing = load_dataset(Path::new("/nonexistent/x.jsonl"), None).unwrap_err();
        assert!(missing.contains("cannot read dataset"), "{missing}");
    }

    #[test]
    fn dataset_workload_cycles_in_a_seeded_order() {
        let entries: Vec<_> = (0..3)
            .map(|i| DatasetEntry {
                prompt: PromptBody::Text(format!("p{i}")),
                max_tokens: Some(i + 1),
                follow_ups: vec![],
            })
            .collect();
        let w = Workload::dataset(entries, None, 9);
        let first: Vec<_> = (0..3).map(|i| w.item(i)).collect();
        let again: Vec<_> = (3..6).map(|i| w.item(i)).collect();
        assert_eq!(first, again);
        let mut seen: Vec<_> = first.iter().map(|x| x.max_tokens.unwrap()).collect();
        seen.sort();
        assert_eq!(seen, vec![1, 2, 3]);
    }
}
