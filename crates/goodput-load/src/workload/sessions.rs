//! Multi-turn sessions: how many turns, the think time between them, and
//! the conversation a session carries.

use super::item::{item_rng, WorkItem};
use super::lengths::{Counted, LengthDist};
use crate::error::{SpecError, WorkloadError};
use crate::protocol::PromptBody;
use rand::Rng;
use rand_distr::{Distribution, Exp};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The pause between a session's answer and its next question: `2s`,
/// `uniform:1s..5s`, or `exponential:2s` (memoryless, with that mean).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThinkTime {
    Fixed(Duration),
    Uniform { lo: Duration, hi: Duration },
    Exponential { mean: Duration },
}

impl ThinkTime {
    /// The mean pause.
    pub fn mean(&self) -> Duration {
        match *self {
            ThinkTime::Fixed(d) => d,
            ThinkTime::Uniform { lo, hi } => lo + (hi - lo) / 2,
            ThinkTime::Exponential { mean } => mean,
        }
    }

    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        match *self {
            ThinkTime::Fixed(d) => d,
            ThinkTime::Uniform { lo, hi } => lo + (hi - lo).mul_f64(rng.random::<f64>()),
            ThinkTime::Exponential { mean } => {
                let x: f64 = Exp::new(1.0).map(|d| d.sample(rng)).unwrap_or(1.0);
                // Within what a mean of up to 100 years times 1e6 holds, then
                // clamped to what a run's clock takes.
                mean.mul_f64(x.min(1e6)).min(goodput_core::HORIZON)
            }
        }
    }
}

impl FromStr for ThinkTime {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        let bad = |why: String| SpecError {
            what: "think time",
            spec: s.to_owned(),
            why,
            expected: "2s, uniform:1s..5s or exponential:2s",
        };
        let dur = |t: &str| match humantime::parse_duration(t.trim()) {
            // A pause is added to the run's clock.
            Ok(d) if d <= goodput_core::HORIZON => Ok(d),
            Ok(_) => Err(bad(format!("'{}' is longer than any run (100 years)", t.trim()))),
            Err(_) => Err(bad(format!("'{}' is not a duration", t.trim()))),
        };
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

impl Sessions {
    /// `--turns` and `--think-time` as a document keeps them, as their
    /// flags' text.
    pub fn config(&self) -> goodput_core::doc::config::SessionsConfig {
        goodput_core::doc::config::SessionsConfig { turns: self.turns.to_string(), think_time: self.think.to_string() }
    }
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
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        if s.trim() == "all" {
            return Ok(Turns::All);
        }
        const TURNS: Counted = Counted {
            what: "turn count",
            at_least_one: "a session has at least 1 turn",
            at_most: ("a session has at most", "turns"),
            expected: "all (a dataset's own), 3, uniform:2..6, normal:4,1 or lognormal:MEAN,SIGMA",
        };
        LengthDist::parse_counted(s, &TURNS).map(Turns::Drawn)
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

impl Sessions {
    /// Session `s`'s turn count (at most `available`, the questions its
    /// conversation holds, when bounded), and the think time before each
    /// turn after the first: a pure function of the seed and `s`.
    pub fn shape(&self, seed: u64, s: u64, available: Option<u32>) -> Result<(u32, Vec<Duration>), WorkloadError> {
        let mut rng = item_rng(seed ^ SESSION_SALT, s);
        let drawn = match &self.turns {
            Turns::Drawn(d) => d.sample(&mut rng).max(1),
            Turns::All => available.ok_or(WorkloadError::TurnsAllNeedsConversations)?,
        };
        let turns = drawn.min(available.unwrap_or(u32::MAX)).max(1);
        let think = (1..turns).map(|_| self.think.sample(&mut rng)).collect();
        Ok((turns, think))
    }
}

/// A conversation being held: the turns so far and their tokens. Each
/// question is asked with the whole history before it.
#[derive(Debug, Clone)]
pub struct Conversation {
    turns: Vec<String>,
    /// Tokens of the history: the questions as meant, the answers as
    /// counted; `None` once a question had no intended length (a dataset's),
    /// as the history that holds it has none either.
    tokens: Option<u64>,
}

impl Default for Conversation {
    fn default() -> Self {
        Conversation { turns: Vec::new(), tokens: Some(0) }
    }
}

impl Conversation {
    /// The request that asks `question` after the history. Its intended
    /// input is the history's tokens and the question's, or none when a
    /// question so far had no intended length (a dataset's: its tokens are
    /// the server's or the tokenizer's to count, else unknown, and said so;
    /// they had been counted as 0, a dataset's opening turn "0 in").
    pub fn ask(&mut self, question: WorkItem) -> WorkItem {
        let PromptBody::Text(text) = question.prompt else { unreachable!("session questions are synthetic text") };
        self.turns.push(text);
        self.tokens = self.tokens.zip(question.intended_input_tokens).map(|(history, asked)| history + asked);
        WorkItem {
            prompt: PromptBody::Turns(self.turns.clone()),
            intended_input_tokens: self.tokens,
            max_tokens: question.max_tokens,
            session: question.session,
            reference: question.reference,
            repeat: None,
            media: Default::default(),
        }
    }

    /// The answer to the last question, `tokens` long, joins the history.
    pub fn answered(&mut self, reply: String, tokens: u64) {
        self.turns.push(reply);
        self.tokens = self.tokens.map(|history| history + tokens);
    }
}
