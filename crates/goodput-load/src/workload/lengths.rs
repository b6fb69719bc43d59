//! Token-length distributions and the named presets.

use crate::error::SpecError;
use rand::Rng;
use rand_distr::{Distribution, LogNormal, Normal};
use std::fmt;
use std::str::FromStr;

/// The longest prompt, shared prefix or answer goodput builds or asks for:
/// 2,097,152 tokens (2 Mi), beyond the contexts served today (1–2 M for the
/// longest). A synthetic prompt is built word by word, so a length is memory
/// and time: `--input-tokens 4000000000` asked for 64 GB and aborted, and a
/// billion-token shared prefix took over a minute to build, deaf to Ctrl-C;
/// at this bound a prompt takes well under a second.
pub const MAX_TOKENS: u32 = 1 << 21;

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
        x.round().clamp(1.0, MAX_TOKENS as f64) as u32
    }

    /// The most a draw gives, or for the unbounded ones (normal, lognormal)
    /// the mean: what a request of these lengths is checked against before a
    /// run (a model's context).
    pub fn most(&self) -> u32 {
        match *self {
            LengthDist::Fixed(n) => n,
            LengthDist::Uniform { hi, .. } => hi,
            LengthDist::Normal { mean, .. } | LengthDist::LogNormal { mean, .. } => {
                mean.round().clamp(1.0, MAX_TOKENS as f64) as u32
            }
        }
    }

    /// The median draw: what a typical request of these lengths is (a
    /// lognormal's is exp(μ), below its mean), rounded and clamped as a
    /// draw is.
    pub fn median(&self) -> u32 {
        let x = match *self {
            LengthDist::Fixed(n) => return n.max(1),
            LengthDist::Uniform { lo, hi } => return (((lo as u64 + hi as u64) / 2) as u32).max(1),
            LengthDist::Normal { mean, .. } => mean,
            LengthDist::LogNormal { mean, sigma } => (mean.ln() - sigma * sigma / 2.0).exp(),
        };
        if x.is_finite() {
            x.round().clamp(1.0, MAX_TOKENS as f64) as u32
        } else {
            1
        }
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

/// What a length distribution is written as.
const LENGTHS: &str = "128, uniform:64..256, normal:512,128 or lognormal:MEAN,SIGMA";

/// What a distribution's draws count, for its parse errors: tokens (a
/// prompt's or an answer's length) or a session's turns.
pub(crate) struct Counted {
    /// The spec's name in the error ("length", "turn count").
    pub what: &'static str,
    /// Why 0 is refused.
    pub at_least_one: &'static str,
    /// Why a count above [`MAX_TOKENS`] is refused: the words before
    /// the number and after it.
    pub at_most: (&'static str, &'static str),
    /// How the spec is written.
    pub expected: &'static str,
}

/// Tokens: a prompt's or an answer's length.
const TOKENS: Counted = Counted {
    what: "length",
    at_least_one: "a length must be at least 1",
    at_most: ("a length is at most", "tokens (2 Mi, beyond any model's context)"),
    expected: LENGTHS,
};

impl FromStr for LengthDist {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        LengthDist::parse_counted(s, &TOKENS)
    }
}

impl LengthDist {
    /// Parses a distribution whose draws count `unit`, its errors said of it.
    pub(crate) fn parse_counted(s: &str, unit: &Counted) -> Result<Self, SpecError> {
        let bad =
            |why: &str| SpecError { what: unit.what, spec: s.to_owned(), why: why.to_owned(), expected: unit.expected };
        let too_long = || bad(&format!("{} {MAX_TOKENS} {}", unit.at_most.0, unit.at_most.1));
        let num = |t: &str| t.trim().parse::<f64>().map_err(|_| bad(&format!("'{t}' is not a number")));
        let count = |t: &str| match t.trim().parse::<u64>() {
            Ok(n) if n > u64::from(MAX_TOKENS) => Err(too_long()),
            Ok(n) => Ok(n as u32),
            Err(_) => Err(bad(&format!("'{t}' is not a whole number"))),
        };
        let Some((kind, args)) = s.split_once(':') else {
            let n = count(s)?;
            return if n == 0 { Err(bad(unit.at_least_one)) } else { Ok(LengthDist::Fixed(n)) };
        };
        let pair = |sep: &str| args.split_once(sep).ok_or_else(|| bad(&format!("missing '{sep}'")));
        match kind.trim() {
            // At least 1, as a plain number is (`fixed:0` had sent 1 and recorded 0).
            "fixed" => match count(args)? {
                0 => Err(bad(unit.at_least_one)),
                n => Ok(LengthDist::Fixed(n)),
            },
            "uniform" => {
                let (a, b) = pair("..")?;
                let (lo, hi) = (count(a)?, count(b)?);
                if lo > hi {
                    return Err(bad("the lower bound is above the upper"));
                }
                if lo == 0 {
                    return Err(bad(&format!("{}: start the range at 1 or more", unit.at_least_one)));
                }
                Ok(LengthDist::Uniform { lo, hi })
            }
            "normal" => {
                let (a, b) = pair(",")?;
                let (mean, std) = (num(a)?, num(b)?);
                // A deviation of inf had been taken, and every draw fell back to the mean.
                if !(mean > 0.0 && std >= 0.0 && std.is_finite()) {
                    return Err(bad("the mean must be positive and the deviation a finite number, not negative"));
                }
                if mean > MAX_TOKENS as f64 {
                    return Err(too_long());
                }
                Ok(LengthDist::Normal { mean, std })
            }
            "lognormal" => {
                let (a, b) = pair(",")?;
                let (mean, sigma) = (num(a)?, num(b)?);
                if !(mean > 0.0 && sigma >= 0.0 && sigma.is_finite()) {
                    return Err(bad("the mean must be positive and sigma a finite number, not negative"));
                }
                if mean > MAX_TOKENS as f64 {
                    return Err(too_long());
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

/// Draws a checking estimate takes: enough for a share of a percent within
/// a tenth of a percent, in about a millisecond.
const CHECK_DRAWS: u32 = 20_000;

/// The share of requests whose prompt (`input` plus `extra` tokens) and
/// output, drawn as a run draws them, pass `limit` tokens together (a
/// model's context): estimated from a fixed seed's draws.
pub fn share_past(input: &LengthDist, extra: u64, output: &LengthDist, limit: u64) -> f64 {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let past = (0..CHECK_DRAWS)
        .filter(|_| {
            let i = u64::from(input.sample(&mut rng)) + extra;
            i + u64::from(output.sample(&mut rng)) > limit
        })
        .count();
    past as f64 / f64::from(CHECK_DRAWS)
}

/// `n` draws of `d` from `seed`, as a run draws them (rounded, clamped):
/// what a check reads where the run's own draws are not known.
pub fn seeded_draws(d: &LengthDist, n: usize, seed: u64) -> Vec<u32> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| d.sample(&mut rng)).collect()
}
