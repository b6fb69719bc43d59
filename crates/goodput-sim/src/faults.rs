//! Fault injection for testing clients: each request draws, from a seed and
//! its arrival number, whether it fails with HTTP 500, breaks mid-stream with
//! an error event or a dropped connection, or stalls once mid-stream, and,
//! on the fixed profile, whether it plays one of the [`Hostile`] cases
//! (`--fault CASE:RATE`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Fault rates (0..=1 each, together at most 1), the stall length and the
/// trickle's pace.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// Answer HTTP 500 before any byte of the stream.
    pub error_rate: f64,
    /// Send an `{"error": …}` event halfway through the output, then stop.
    pub stream_error_rate: f64,
    /// Drop the connection halfway through the output.
    pub disconnect_rate: f64,
    /// Pause once, halfway through the output, for `stall`.
    pub stall_rate: f64,
    pub stall: Duration,
    /// The hostile cases and their rates (`--fault CASE:RATE`), each case
    /// at most once; the fixed profile plays them, the engine refuses them.
    pub hostile: Vec<(Hostile, f64)>,
    /// Between two bytes of a [`Hostile::Trickle`] response.
    pub trickle_gap: Duration,
    pub seed: u64,
    /// Scripted answers (`--answers`), with their wrong and diverging shares.
    pub answers: Option<std::sync::Arc<crate::answers::Answers>>,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            error_rate: 0.0,
            stream_error_rate: 0.0,
            disconnect_rate: 0.0,
            stall_rate: 0.0,
            stall: Duration::ZERO,
            hostile: Vec::new(),
            trickle_gap: Duration::from_millis(1),
            seed: 0,
            answers: None,
        }
    }
}

/// What happens to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    HttpError,
    StreamError,
    Disconnect,
    Stall(Duration),
    Hostile(Hostile),
}

/// A misbehaviour of a server, or of what stands in front of it, that the
/// fixed profile plays on demand: `goodput serve --profile fixed --fault
/// CASE:RATE`. Each is something a client must survive, recording the
/// request as what it was and leaving every other request alone
/// (docs/hostile-servers.md lists what goodput records for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hostile {
    /// A data line of malformed JSON halfway through the stream.
    MalformedJson,
    /// Bytes that are not UTF-8 inside a token's text, halfway through.
    NonUtf8,
    /// Halfway through, a line that never ends: `data: aaaa…` until the
    /// client hangs up.
    EndlessLine,
    /// A response head of more than a megabyte.
    OversizedHeader,
    /// The request read, then the connection reset (RST) with no answer.
    ResetBefore,
    /// The connection reset halfway through the stream.
    ResetDuring,
    /// The request read and never answered: the connection held open until
    /// the client goes.
    NeverAnswer,
    /// A valid response written one byte at a time, `trickle_gap` apart.
    Trickle,
    /// The chunked framing broken halfway through the stream.
    BrokenChunked,
    /// More `data:` lines after `[DONE]` (after the stream's last event).
    DataAfterDone,
    /// A stream of usage alone, with no output.
    UsageOnly,
    /// An `event: error` halfway through the stream.
    EventError,
    /// HTTP 429 with `Retry-After: 1`.
    TooManyRequests,
    /// HTTP 503 with `Retry-After: 1`.
    Unavailable,
    /// HTTP 200 with an HTML page (a proxy's, a login's).
    Html200,
    /// A normal response with keep-alive advertised, then the connection
    /// closed once the client's next request has come (or 100 ms after):
    /// llama-server closes after every response, and a pooled client races
    /// the close; here it meets the race every time.
    CloseAfterResponse,
}

impl Hostile {
    /// Every case, in the order of the fault draw.
    pub const ALL: [Hostile; 16] = [
        Hostile::MalformedJson,
        Hostile::NonUtf8,
        Hostile::EndlessLine,
        Hostile::OversizedHeader,
        Hostile::ResetBefore,
        Hostile::ResetDuring,
        Hostile::NeverAnswer,
        Hostile::Trickle,
        Hostile::BrokenChunked,
        Hostile::DataAfterDone,
        Hostile::UsageOnly,
        Hostile::EventError,
        Hostile::TooManyRequests,
        Hostile::Unavailable,
        Hostile::Html200,
        Hostile::CloseAfterResponse,
    ];

    /// The case's name in `--fault CASE:RATE`.
    pub fn name(self) -> &'static str {
        match self {
            Hostile::MalformedJson => "malformed-json",
            Hostile::NonUtf8 => "non-utf8",
            Hostile::EndlessLine => "endless-line",
            Hostile::OversizedHeader => "oversized-header",
            Hostile::ResetBefore => "reset-before",
            Hostile::ResetDuring => "reset-during",
            Hostile::NeverAnswer => "never-answer",
            Hostile::Trickle => "trickle",
            Hostile::BrokenChunked => "broken-chunked",
            Hostile::DataAfterDone => "data-after-done",
            Hostile::UsageOnly => "usage-only",
            Hostile::EventError => "event-error",
            Hostile::TooManyRequests => "429",
            Hostile::Unavailable => "503",
            Hostile::Html200 => "html-200",
            Hostile::CloseAfterResponse => "close-after-response",
        }
    }

    /// The case's `kind` label in `goodput_sim_faults_injected_total`.
    pub fn label(self) -> String {
        self.name().replace('-', "_")
    }

    fn index(self) -> usize {
        Hostile::ALL.iter().position(|&h| h == self).unwrap_or(0)
    }
}

impl std::fmt::Display for Hostile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A fault setting refused: a `--fault` spec that does not read, or rates
/// that cannot all be played.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultError {
    #[error("unknown fault case '{case}': the cases are {known}")]
    UnknownCase { case: String, known: String },
    #[error("'{spec}' is not CASE:RATE (e.g. reset-during:0.1)")]
    NotCaseRate { spec: String },
    #[error("the rate of {case} in '{spec}' is not a number between 0 and 1")]
    RateNotANumber { case: Hostile, spec: String },
    #[error("the rate of {case} must be between 0 and 1, not {rate}")]
    CaseRateOutOfRange { case: Hostile, rate: f64 },
    /// A rate flag (`--fault-error-rate`, `--fault CASE`) out of 0..=1.
    #[error("{flag} must be between 0 and 1, not {rate}")]
    RateOutOfRange { flag: String, rate: f64 },
    #[error("--fault {case} is given twice: give each case once")]
    Twice { case: Hostile },
    #[error("the fault rates add up to {total}, more than 1: each request draws at most one fault")]
    OverOne { total: f64 },
}

impl std::str::FromStr for Hostile {
    type Err = FaultError;

    fn from_str(s: &str) -> Result<Self, FaultError> {
        let s = s.trim();
        Hostile::ALL.into_iter().find(|h| h.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            let known: Vec<&str> = Hostile::ALL.iter().map(|h| h.name()).collect();
            FaultError::UnknownCase { case: s.to_owned(), known: known.join(", ") }
        })
    }
}

/// Reads `--fault CASE:RATE` (e.g. `trickle:0.1`, `429:0.05`).
pub fn parse_fault(spec: &str) -> Result<(Hostile, f64), FaultError> {
    let Some((case, rate)) = spec.rsplit_once(':') else {
        return Err(FaultError::NotCaseRate { spec: spec.to_owned() });
    };
    let case: Hostile = case.parse()?;
    let rate: f64 = rate.trim().parse().map_err(|_| FaultError::RateNotANumber { case, spec: spec.to_owned() })?;
    if !(0.0..=1.0).contains(&rate) {
        return Err(FaultError::CaseRateOutOfRange { case, rate });
    }
    Ok((case, rate))
}

impl FaultConfig {
    pub fn validate(&self) -> Result<(), FaultError> {
        let mut total = 0.0;
        let older = [
            ("--fault-error-rate".to_owned(), self.error_rate),
            ("--fault-stream-error-rate".to_owned(), self.stream_error_rate),
            ("--fault-disconnect-rate".to_owned(), self.disconnect_rate),
            ("--fault-stall-rate".to_owned(), self.stall_rate),
        ];
        let cases = self.hostile.iter().map(|(h, r)| (format!("--fault {h}"), *r));
        for (name, r) in older.into_iter().chain(cases) {
            if !(0.0..=1.0).contains(&r) {
                return Err(FaultError::RateOutOfRange { flag: name, rate: r });
            }
            total += r;
        }
        for (i, (h, _)) in self.hostile.iter().enumerate() {
            if self.hostile[..i].iter().any(|(g, _)| g == h) {
                return Err(FaultError::Twice { case: *h });
            }
        }
        // One draw per request against the rates laid end to end: past 1
        // the last ones would be cut short without a word.
        if total > 1.0 + 1e-9 {
            return Err(FaultError::OverOne { total });
        }
        Ok(())
    }

    pub fn is_active(&self) -> bool {
        self.error_rate > 0.0
            || self.stream_error_rate > 0.0
            || self.disconnect_rate > 0.0
            || self.stall_rate > 0.0
            || self.hostile.iter().any(|(_, r)| *r > 0.0)
    }

    /// The hostile cases asked for, with a rate above 0.
    pub fn hostile_cases(&self) -> impl Iterator<Item = Hostile> + '_ {
        self.hostile.iter().filter(|(_, r)| *r > 0.0).map(|(h, _)| *h)
    }

    /// The fault for the `n`-th request (0-based, in arrival order).
    pub fn draw(&self, n: u64) -> Fault {
        if !self.is_active() {
            return Fault::None;
        }
        // One uniform draw per request, compared against cumulative rates:
        // the four older faults, then the hostile cases in `Hostile::ALL`'s
        // order (whatever order the flags came in).
        let u = goodput_core::util::hash::unit(self.seed, n);
        let mut edge = 0.0;
        let older = [
            (self.error_rate, Fault::HttpError),
            (self.stream_error_rate, Fault::StreamError),
            (self.disconnect_rate, Fault::Disconnect),
            (self.stall_rate, Fault::Stall(self.stall)),
        ];
        let cases = Hostile::ALL.into_iter().filter_map(|h| {
            let rate = self.hostile.iter().find(|(g, _)| *g == h)?.1;
            Some((rate, Fault::Hostile(h)))
        });
        for (rate, fault) in older.into_iter().chain(cases) {
            edge += rate;
            if u < edge {
                return fault;
            }
        }
        Fault::None
    }
}

/// Counts of requests and of each fault injected, for tests and `/metrics`.
#[derive(Debug, Default)]
pub struct FaultCounters {
    pub requests: AtomicU64,
    pub http_errors: AtomicU64,
    pub stream_errors: AtomicU64,
    pub disconnects: AtomicU64,
    pub stalls: AtomicU64,
    /// Each hostile case, in `Hostile::ALL`'s order.
    hostile: [AtomicU64; Hostile::ALL.len()],
}

impl FaultCounters {
    /// Takes the next arrival number and counts the fault drawn for it.
    pub fn next(&self, cfg: &FaultConfig) -> (u64, Fault) {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let f = cfg.draw(n);
        self.count(f);
        (n, f)
    }

    /// [`FaultCounters::next`] for an embeddings or rerank request, a whole
    /// JSON answer: the faults it can play (HTTP 500, 429 and 503, a stall)
    /// are drawn and counted; a stream's faults leave it alone and are not
    /// counted (they had been counted as injected while the request was
    /// served as usual).
    pub fn next_pooled(&self, cfg: &FaultConfig) -> (u64, Fault) {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let f = match cfg.draw(n) {
            f @ (Fault::HttpError
            | Fault::Stall(_)
            | Fault::Hostile(Hostile::TooManyRequests | Hostile::Unavailable)) => f,
            _ => Fault::None,
        };
        self.count(f);
        (n, f)
    }

    fn count(&self, f: Fault) {
        let c = match f {
            Fault::None => None,
            Fault::HttpError => Some(&self.http_errors),
            Fault::StreamError => Some(&self.stream_errors),
            Fault::Disconnect => Some(&self.disconnects),
            Fault::Stall(_) => Some(&self.stalls),
            Fault::Hostile(h) => Some(&self.hostile[h.index()]),
        };
        if let Some(c) = c {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Requests that drew the hostile case `h`.
    pub fn hostile(&self, h: Hostile) -> u64 {
        self.hostile[h.index()].load(Ordering::Relaxed)
    }

    /// Prometheus text for these counters: the four older kinds always,
    /// each hostile case of `cfg`.
    pub fn prometheus(&self, cfg: &FaultConfig) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut o = format!(
            "# HELP goodput_sim_requests_total Requests received.\n# TYPE goodput_sim_requests_total counter\n\
             goodput_sim_requests_total {}\n\
             # HELP goodput_sim_faults_injected_total Faults injected, by kind.\n# TYPE goodput_sim_faults_injected_total counter\n\
             goodput_sim_faults_injected_total{{kind=\"http_error\"}} {}\n\
             goodput_sim_faults_injected_total{{kind=\"stream_error\"}} {}\n\
             goodput_sim_faults_injected_total{{kind=\"disconnect\"}} {}\n\
             goodput_sim_faults_injected_total{{kind=\"stall\"}} {}\n",
            g(&self.requests),
            g(&self.http_errors),
            g(&self.stream_errors),
            g(&self.disconnects),
            g(&self.stalls)
        );
        for h in cfg.hostile_cases() {
            o.push_str(&format!("goodput_sim_faults_injected_total{{kind=\"{}\"}} {}\n", h.label(), self.hostile(h)));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_honoured_and_seeded() {
        let cfg = FaultConfig {
            error_rate: 0.1,
            stream_error_rate: 0.2,
            disconnect_rate: 0.05,
            stall_rate: 0.1,
            stall: Duration::from_secs(1),
            seed: 5,
            ..Default::default()
        };
        let n = 100_000;
        let draws: Vec<Fault> = (0..n).map(|i| cfg.draw(i)).collect();
        let share = |f: Fault| draws.iter().filter(|&&d| d == f).count() as f64 / n as f64;
        assert!((share(Fault::HttpError) - 0.1).abs() < 0.01);
        assert!((share(Fault::StreamError) - 0.2).abs() < 0.01);
        assert!((share(Fault::Disconnect) - 0.05).abs() < 0.01);
        assert!((share(Fault::Stall(Duration::from_secs(1))) - 0.1).abs() < 0.01);
        assert_eq!(draws, (0..n).map(|i| cfg.draw(i)).collect::<Vec<_>>());
        assert!(FaultConfig { error_rate: 1.5, ..Default::default() }.validate().is_err());
        assert_eq!(FaultConfig::default().draw(3), Fault::None);
    }

    /// The hostile cases are drawn like the others: each at its rate, the
    /// same requests for the same seed, whatever order the flags came in,
    /// and none where the draw already gave an older fault.
    #[test]
    fn hostile_cases_are_drawn_at_their_rates_by_seed_and_arrival() {
        let cfg = FaultConfig {
            error_rate: 0.1,
            hostile: vec![(Hostile::Trickle, 0.2), (Hostile::ResetBefore, 0.05), (Hostile::TooManyRequests, 0.3)],
            seed: 9,
            ..Default::default()
        };
        cfg.validate().unwrap();
        let n = 100_000;
        let draws: Vec<Fault> = (0..n).map(|i| cfg.draw(i)).collect();
        let share = |f: Fault| draws.iter().filter(|&&d| d == f).count() as f64 / n as f64;
        assert!((share(Fault::HttpError) - 0.1).abs() < 0.01);
        assert!((share(Fault::Hostile(Hostile::Trickle)) - 0.2).abs() < 0.01);
        assert!((share(Fault::Hostile(Hostile::ResetBefore)) - 0.05).abs() < 0.01);
        assert!((share(Fault::Hostile(Hostile::TooManyRequests)) - 0.3).abs() < 0.01);
        assert!((share(Fault::None) - 0.35).abs() < 0.01);
        // The flags' order does not move a fault to other requests.
        let mut reversed = cfg.clone();
        reversed.hostile.reverse();
        assert_eq!(draws, (0..n).map(|i| reversed.draw(i)).collect::<Vec<_>>());
        // Another seed, other requests.
        let other = FaultConfig { seed: 10, ..cfg.clone() };
        assert_ne!(draws[..100], (0..100).map(|i| other.draw(i)).collect::<Vec<_>>()[..]);
        // A case at rate 0 is never drawn, and is no fault at all.
        let zero = FaultConfig { hostile: vec![(Hostile::NeverAnswer, 0.0)], ..Default::default() };
        assert!(!zero.is_active());
        assert!((0..1000).all(|i| zero.draw(i) == Fault::None));
        // The counters count each case apart.
        let counters = FaultCounters::default();
        for _ in 0..1000 {
            counters.next(&cfg);
        }
        let expect = |h| (0..1000).filter(|&i| cfg.draw(i) == Fault::Hostile(h)).count() as u64;
        for h in [Hostile::Trickle, Hostile::ResetBefore, Hostile::TooManyRequests] {
            assert_eq!(counters.hostile(h), expect(h), "{h}");
        }
        assert_eq!(counters.hostile(Hostile::EndlessLine), 0);
        let text = counters.prometheus(&cfg);
        assert!(text.contains(&format!("kind=\"reset_before\"}} {}\n", expect(Hostile::ResetBefore))), "{text}");
        assert!(text.contains("kind=\"429\"}") && !text.contains("endless_line"), "{text}");
    }

    #[test]
    fn fault_specs_parse_or_say_what_is_wrong() {
        assert_eq!(parse_fault("trickle:0.1"), Ok((Hostile::Trickle, 0.1)));
        assert_eq!(parse_fault("429:1"), Ok((Hostile::TooManyRequests, 1.0)));
        assert_eq!(parse_fault("Reset-During:0"), Ok((Hostile::ResetDuring, 0.0)));
        for h in Hostile::ALL {
            assert_eq!(parse_fault(&format!("{h}:0.5")), Ok((h, 0.5)), "{h}");
            assert_eq!(h.name().parse::<Hostile>(), Ok(h));
        }
        let unknown = parse_fault("slow-loris:0.1").unwrap_err().to_string();
        assert!(unknown.contains("unknown fault case 'slow-loris'"), "{unknown}");
        assert!(Hostile::ALL.iter().all(|h| unknown.contains(h.name())), "the known cases are listed: {unknown}");
        assert!(parse_fault("trickle").unwrap_err().to_string().contains("CASE:RATE"));
        assert!(parse_fault("trickle:often").unwrap_err().to_string().contains("not a number"));
        for bad in ["trickle:1.5", "trickle:-0.1", "trickle:NaN"] {
            assert!(parse_fault(bad).unwrap_err().to_string().contains("between 0 and 1"), "{bad}");
        }
        // Rates past 1 together, or a case twice, are refused.
        let two = |a, b| FaultConfig { hostile: vec![a, b], ..Default::default() }.validate();
        let sum = two((Hostile::Trickle, 0.6), (Hostile::Html200, 0.5)).unwrap_err().to_string();
        assert!(sum.contains("add up to 1.1"), "{sum}");
        let over = FaultConfig { error_rate: 0.7, hostile: vec![(Hostile::Trickle, 0.4)], ..Default::default() };
        assert!(over.validate().unwrap_err().to_string().contains("more than 1"));
        assert!(two((Hostile::Trickle, 0.1), (Hostile::Trickle, 0.2)).unwrap_err().to_string().contains("given twice"));
        assert!(two((Hostile::Trickle, 0.5), (Hostile::Html200, 0.5)).is_ok());
        let rate = FaultConfig { hostile: vec![(Hostile::Trickle, 2.0)], ..Default::default() }.validate();
        assert!(rate.unwrap_err().to_string().contains("--fault trickle must be between 0 and 1"));
    }
}
