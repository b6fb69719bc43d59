//! The value parsers of the command line: durations, sizes, shares, lists,
//! windows, headers, SLOs. Each error names the value and the form it takes.

use goodput_core::Slo;
use goodput_load::error::SpecError;
use goodput_load::{LengthDist, ThinkTime, Turns};
use std::time::Duration;

/// Parses `150ms`, `2s`, `1m30s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d =
        humantime::parse_duration(s).map_err(|e| format!("'{s}' is not a duration ({e}); write e.g. 150ms, 2s, 1m"))?;
    within_horizon(s, d)
}

/// `d` (as `s` wrote it) if a run's clock can take it: every duration is
/// added to a start somewhere, and past [`goodput_core::HORIZON`] that
/// overflowed (a panic).
fn within_horizon(s: &str, d: Duration) -> Result<Duration, String> {
    if d > goodput_core::HORIZON {
        return Err(format!("'{}' is longer than any run (100 years); write e.g. 150ms, 2s, 1m", s.trim()));
    }
    Ok(d)
}

/// A duration that must be more than nothing: a timeout, a run's length, a
/// scrape interval.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("'{s}' is no time at all; give a positive duration, e.g. 150ms, 2s, 1m")),
        d => Ok(d),
    }
}

/// A scrape interval: at least 10 ms. Each scrape is a request to the
/// server and a sample kept for the run (`--metrics-interval 1ns` had made
/// 23,000 scrapes in 10 s and held 1.35 GB).
pub fn parse_scrape_interval(s: &str) -> Result<Duration, String> {
    match parse_positive_duration(s)? {
        d if d < Duration::from_millis(10) => {
            Err(format!("'{s}' is shorter than a scrape can be useful (10 ms at least); give e.g. 100ms, 1s"))
        }
        d => Ok(d),
    }
}

/// A size in bytes: a number, optionally with K/KiB, M/MiB or G/GiB
/// (powers of 1,024 all), of at least 1 KiB: less cannot hold a line of an
/// answer (an SSE event's framing alone is tens of bytes), and 0 and 1
/// alike would fail every request.
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("'{s}' is not a size: give bytes, or a number with KiB, MiB or GiB (64MiB)")),
    };
    let n: usize = num.parse().map_err(|_| format!("'{s}' is not a size: give e.g. 64MiB"))?;
    match n.checked_mul(1 << shift) {
        Some(b) if b < 1 << 10 => {
            Err(format!("'{s}' is less than 1KiB, too little to hold a line of an answer: give at least 1KiB"))
        }
        Some(b) => Ok(b),
        None => Err(format!("'{s}' is more than this machine can address")),
    }
}

/// A share, 0 to 1.
pub fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a share: give a number from 0 to 1, e.g. 0.1 for a tenth")),
    }
}

/// The unit a number flag is in, given where the flag is declared (it had
/// been looked up by the words of `what`, which a change of wording would
/// have silently cut from its unit): the spellings of it that may be left
/// out of a number given with it, and whether the flag takes a share (from
/// 0 to 1), which a percentage is read as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Units {
    /// A number of no unit (a gamma shape).
    Plain,
    /// Requests per second: `/s`, `rps`, `req/s`, `qps`.
    PerSecond,
    /// Microseconds: `us`, `µs`.
    Microseconds,
    /// Gigabits per second: `Gb/s`, `Gbps`.
    GbPerSecond,
    /// US dollars an hour: `USD`, `$`, `/h`.
    UsdPerHour,
    /// How many times: `x`, `×`.
    Times,
    /// A share, 0 to 1 (`5%` is told to be 0.05).
    Share,
}

impl Units {
    /// The spellings of the unit, which a number may be given with.
    fn spellings(self) -> &'static [&'static str] {
        match self {
            Units::PerSecond => &["/s", "rps", "req/s", "qps", "/sec", "per second"],
            Units::Microseconds => &["us", "µs"],
            Units::GbPerSecond => &["gb/s", "gbps", "gbit/s"],
            Units::UsdPerHour => &["usd", "$", "/h", "$/h", "usd/h"],
            Units::Times => &["x", "×"],
            Units::Plain | Units::Share => &[],
        }
    }
}

/// A parser of a plain number for `flag`, which takes `what` in `units`,
/// e.g. `eg`: its error names what the flag takes and how to write it,
/// where clap's own had said only "invalid float literal" (`--rate 10/s`,
/// `--rate 10rps`). Only a unit that is the flag's own (`/s` for `--rate`,
/// `us` for a time in microseconds) is named as the part to leave out; a
/// share's percentage is given as the share (`5%`: 0.05); any other unit is
/// not converted (`--rate 600/min` is not 600 a second), and the example is
/// given. A comma before one, two or four digits or more is a decimal
/// comma; before three, it may group thousands, and both readings are
/// given.
pub fn number(
    flag: &'static str,
    what: &'static str,
    eg: &'static str,
    units: Units,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let t = s.trim();
        if let Ok(v) = t.parse::<f64>() {
            return Ok(v);
        }
        let plain = format!("{flag} takes {what} as a plain number, e.g. {flag} {eg}");
        // The longest start of it that is a number: `10` of `10/s`.
        let lead = (1..=t.len()).rev().filter(|&i| t.is_char_boundary(i)).find(|&i| t[..i].parse::<f64>().is_ok());
        let Some((n, rest)) = lead.map(|i| (&t[..i], t[i..].trim())) else { return Err(plain) };
        let (own, share) = (units.spellings(), units == Units::Share);
        Err(match rest.strip_prefix(',') {
            Some(d) if !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()) && !n.contains('.') => {
                if d.len() == 3 {
                    format!(
                        "{flag} takes {what} as a plain number, without a comma: write {flag} {n}{d} for \
                         {n}{d}, or {flag} {n}.{d}"
                    )
                } else {
                    format!("{flag} takes {what} as a plain number, its decimals after a point: write {flag} {n}.{d}")
                }
            }
            _ if share && rest == "%" => match n.parse::<f64>() {
                Ok(p) => format!("{flag} takes {what} from 0 to 1, not a percentage: write {flag} {}", p / 100.0),
                Err(_) => plain,
            },
            _ if own.iter().any(|u| u.eq_ignore_ascii_case(rest)) => {
                format!("{flag} takes {what} as a plain number: write {flag} {n} (without '{rest}')")
            }
            _ => format!("{plain} ('{rest}' after the number is not a unit it reads)"),
        })
    }
}

/// `--gpu-hour-usd`: the price of one GPU-hour in US dollars, a `$` before
/// it read as written (`'$3'` had been refused as "invalid float literal").
pub fn parse_gpu_hour_usd(s: &str) -> Result<f64, String> {
    let t = s.trim();
    number("--gpu-hour-usd", "the price of one GPU-hour in US dollars", "3", Units::UsdPerHour)(
        t.strip_prefix('$').unwrap_or(t),
    )
}

/// The scorers `--score` names.
#[derive(Debug, Clone, PartialEq)]
pub struct ScorerList(pub Vec<goodput_core::quality::Scorer>);

/// `--score exact,rouge-l,…`: the scorers, each once.
pub fn parse_scorers(s: &str) -> Result<ScorerList, String> {
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let scorer = name.parse().map_err(|e: goodput_core::quality::UnknownScorer| e.to_string())?;
        if !out.contains(&scorer) {
            out.push(scorer);
        }
    }
    if out.is_empty() {
        return Err("no scorer named: give e.g. exact,rouge-l (exact, number, rouge-l, bleu, chrf)".into());
    }
    Ok(ScorerList(out))
}

/// `--meta KEY=VALUE`.
pub fn parse_meta(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!("'{s}' is not a note: write KEY=VALUE, e.g. gpu=H100")),
    }
}

/// `--label NAME`: something to show, not blank.
pub fn parse_label(s: &str) -> Result<String, String> {
    match s.trim() {
        "" => Err("a label is a name to show for the run: give some text, e.g. --label vllm-0.11-h100".into()),
        t => Ok(t.to_owned()),
    }
}

/// `--header 'Name: value'`.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    // The text is not repeated: a header may hold a secret.
    let (name, value) = s.split_once(':').ok_or_else(|| {
        "it has no colon: write 'Name: value', e.g. 'X-Team: infra' (the value given is not shown: a header may hold \
         a secret)"
            .to_string()
    })?;
    let (name, value) = (name.trim(), value.trim());
    goodput_load::client::check_header(name, value).map_err(|e| e.to_string())?;
    Ok((name.to_owned(), value.to_owned()))
}

/// `--window`: `FROM..TO`, either end left open.
pub fn parse_window(s: &str) -> Result<goodput_core::TimeSlice, String> {
    let hint = "write FROM..TO with times from the run's start, e.g. 30s..90s, 1m.. or ..2m";
    let (from, to) = s.split_once("..").ok_or_else(|| format!("'{s}' is not a window: {hint}"))?;
    let at = |t: &str| -> Result<Option<Duration>, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        let d =
            humantime::parse_duration(t).map_err(|e| format!("'{t}' in --window '{s}' is not a time ({e}): {hint}"))?;
        within_horizon(t, d).map(Some)
    };
    let (from, to) = (at(from)?.unwrap_or_default(), at(to)?);
    if to.is_some_and(|to| to < from) {
        return Err(format!("--window '{s}' ends before it starts: {hint}"));
    }
    if to == Some(from) {
        return Err(format!("--window '{s}' ends where it starts, and holds no time: {hint}"));
    }
    Ok(goodput_core::TimeSlice { from, to })
}

/// `--window` as it was given, in humantime's words.
pub fn window_text(w: &goodput_core::TimeSlice) -> String {
    let t = |d: Duration| humantime::format_duration(d).to_string();
    format!("{}..{}", t(w.from), w.to.map(t).unwrap_or_default())
}

/// `--warmup`: a request count or a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WarmupArg {
    Requests(u64),
    Time(Duration),
}

pub fn parse_warmup(s: &str) -> Result<WarmupArg, String> {
    if let Ok(n) = s.trim().parse::<u64>() {
        return Ok(WarmupArg::Requests(n));
    }
    let d = humantime::parse_duration(s.trim())
        .map_err(|_| format!("invalid warm-up '{s}': give a request count (10) or a time (30s)"))?;
    within_horizon(s, d).map(WarmupArg::Time)
}

pub fn parse_length(s: &str) -> Result<LengthDist, SpecError> {
    s.parse()
}

pub fn parse_turns(s: &str) -> Result<Turns, SpecError> {
    s.parse()
}

pub fn parse_think_time(s: &str) -> Result<ThinkTime, SpecError> {
    s.parse()
}

/// A list of percentiles, parsed from `50,90,99.9`: in ascending order,
/// each once, whatever order and repeats were given (`99,50,99` is
/// `50,99`), as every table and the result's keys list them.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileList(pub Vec<f64>);

pub fn parse_percentiles(s: &str) -> Result<PercentileList, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let p: f64 = part
            .trim_start_matches('p')
            .parse()
            .map_err(|_| format!("'{part}' is not a percentile; write e.g. 50,90,99.9"))?;
        // The range a saved result's percentiles are read back in: p0 had
        // been written, and the document then refused by report and compare.
        if !(p > 0.0 && p <= 100.0) {
            return Err(format!("percentile {part} is outside (0, 100]: give one above 0 and at most 100, e.g. 50,99"));
        }
        // At most four decimals (99.9999): 1e-300 had named a key of 300 characters.
        let scaled = p * 1e4;
        if scaled.round() < 1.0 || (scaled - scaled.round()).abs() > 1e-6 {
            return Err(format!("percentile {part} has more than four decimals: give e.g. 99.99 or 0.01"));
        }
        out.push(p);
    }
    if out.is_empty() {
        return Err("give at least one percentile, e.g. 50,90,99".into());
    }
    // Given out of order, p99 had headed a table before p50.
    out.sort_by(f64::total_cmp);
    out.dedup();
    Ok(PercentileList(out))
}

pub fn parse_slo(s: &str) -> Result<Slo, goodput_core::SloError> {
    s.parse()
}

/// `--seed`: the number given, or one drawn for this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed {
    pub value: u64,
    /// Drawn fresh (no `--seed`): a later run draws another, so a server's
    /// prefix cache cannot serve one run's prompts from an earlier one's.
    pub drawn: bool,
}

impl Seed {
    /// The seed of a run that repeats no server state: virtual time starts
    /// every run on an empty engine, so it keeps the same answer for the
    /// same flags (0, unless `--seed` says otherwise).
    pub fn fixed_unless_given(self) -> Seed {
        if self.drawn {
            Seed { value: 0, drawn: false }
        } else {
            self
        }
    }

    /// The seed of a sweep's `k`-th run (0 for the first point): each
    /// point, and each longer rerun of one, sends prompts of its own,
    /// drawn from the sweep's seed so that `--seed` repeats them all.
    pub fn of_run(self, k: u64) -> u64 {
        if k == 0 {
            self.value
        } else {
            goodput_core::util::hash::draw(self.value, k)
        }
    }
}

/// What a fresh seed is drawn from: the standard library's OS-seeded hash
/// keys, the clock and the process, folded by SplitMix64. Kept under 10⁹
/// so that it is easy to give back as `--seed`.
fn fresh_seed() -> u64 {
    use std::hash::BuildHasher;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let keyed = std::collections::hash_map::RandomState::new().hash_one((now.as_nanos(), std::process::id()));
    goodput_core::util::hash::mix64(keyed) % 1_000_000_000
}

/// `--seed 42`, or `fresh` (the default): a new seed each run.
pub fn parse_seed(s: &str) -> Result<Seed, String> {
    if s == "fresh" {
        return Ok(Seed { value: fresh_seed(), drawn: true });
    }
    s.trim().parse().map(|value| Seed { value, drawn: false }).map_err(|e: std::num::ParseIntError| {
        if *e.kind() == std::num::IntErrorKind::PosOverflow {
            return format!(
                "'{s}' is too large for a seed: give a whole number from 0 to {} (e.g. --seed 42)",
                u64::MAX
            );
        }
        format!(
            "'{s}' is not a seed: give a whole number (e.g. --seed 42), or leave --seed out for a fresh one each run"
        )
    })
}

/// `--attainment 0.95` or `95%`.
pub fn parse_attainment(s: &str) -> Result<f64, String> {
    goodput_core::analysis::slo::parse_share(s)
        .ok_or_else(|| format!("'{s}' is not a share of requests: give one above 0 and at most 1, e.g. 0.95 or 95%"))
}

/// `--confidence`: `0.95` or `95%`, above one half and below one.
pub fn parse_confidence(s: &str) -> Result<f64, String> {
    goodput_core::analysis::slo::parse_share(s)
        .filter(|&c| goodput_core::analysis::interval::valid_confidence(c))
        .ok_or_else(|| format!("'{s}' is not a confidence level: give one above 0.5 and below 1, e.g. 0.95 or 95%"))
}

pub fn parse_list<T: std::str::FromStr>(s: &str) -> Result<Vec<T>, String> {
    // An empty item ('1,,4', '1,2,') is a number left out, not a spacer.
    if !s.trim().is_empty() && s.split(',').any(|p| p.trim().is_empty()) {
        return Err(format!("'{s}' has an empty item: write a number between each pair of commas, e.g. 1,2,4,8"));
    }
    let v: Result<Vec<T>, _> = s.split(',').map(str::trim).map(str::parse).collect();
    match v {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("'{s}' is not a comma-separated list of numbers, e.g. 1,2,4,8")),
    }
}

/// A list of concurrencies.
#[derive(Debug, Clone, PartialEq)]
pub struct CountList(pub Vec<u64>);

/// `plan --spec-tokens`: draft lengths, 0 for none.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecTokens(pub Vec<u32>);

/// A list of rates.
#[derive(Debug, Clone, PartialEq)]
pub struct RateList(pub Vec<f64>);

/// `--stages`: (load, how long) each, in order; the loads are requests/s,
/// or users with `concurrency`.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages {
    pub stages: Vec<(f64, Duration)>,
    pub concurrency: bool,
}

/// `10/2m,20/2m,40/2m`: a rate held for a time, stage by stage; or
/// `c=8/2m,c=16/2m`: a number of users.
pub fn parse_stages(s: &str) -> Result<Stages, String> {
    let stage = |part: &str| -> Result<(bool, f64, Duration), String> {
        let bad = || {
            format!(
                "invalid stage '{part}': give RATE/DURATION, e.g. 10/2m (10 req/s for two minutes), or c=USERS/DURATION, \
                 e.g. c=8/2m (8 concurrent users for two minutes)"
            )
        };
        let (load, time) = part.trim().split_once('/').ok_or_else(bad)?;
        let (users, load) = match load.trim().strip_prefix("c=") {
            Some(n) => (true, n),
            None => (false, load),
        };
        let n: f64 = load.trim().parse().map_err(|_| bad())?;
        let time = within_horizon(time, humantime::parse_duration(time.trim()).map_err(|_| bad())?)?;
        if !n.is_finite() {
            return Err(format!(
                "invalid stage '{part}': a stage holds a finite load ({} sends everything at once); give requests/s or \
                 c=USERS, e.g. 100/2m or c=8/2m",
                load.trim()
            ));
        }
        if n <= 0.0 || time.is_zero() {
            return Err(format!("invalid stage '{part}': the load and the time must be above zero"));
        }
        if !users && n < goodput_load::schedule::min_rate() {
            return Err(format!("invalid stage '{part}': {}", goodput_load::error::ScheduleError::RateTooLow(n)));
        }
        if users && n.fract() != 0.0 {
            return Err(format!("invalid stage '{part}': a number of users is a whole number"));
        }
        Ok((users, n, time))
    };
    let v = s.split(',').filter(|p| !p.trim().is_empty()).map(stage).collect::<Result<Vec<_>, _>>()?;
    let Some(&(concurrency, _, _)) = v.first() else {
        return Err("--stages needs at least one RATE/DURATION or c=USERS/DURATION".into());
    };
    if v.iter().any(|s| s.0 != concurrency) {
        return Err("--stages are all rates (10/2m) or all users (c=8/2m): one run cannot be both".into());
    }
    Ok(Stages { stages: v.into_iter().map(|(_, n, t)| (n, t)).collect(), concurrency })
}

/// The first item of a list that an earlier one repeats.
pub(crate) fn first_repeat<T: PartialEq>(v: &[T]) -> Option<&T> {
    v.iter().enumerate().find(|(i, x)| v[..*i].contains(x)).map(|(_, x)| x)
}

pub fn parse_counts(s: &str) -> Result<CountList, String> {
    let v: Vec<u64> = parse_list(s)?;
    if v.contains(&0) {
        return Err("each number in the list must be at least 1".into());
    }
    if let Some(d) = first_repeat(&v) {
        return Err(format!("'{s}' names {d} twice: give each once"));
    }
    Ok(CountList(v))
}

/// `plan --spec-tokens`: draft lengths to try, 0 for none (`0,3`), each
/// at most the engine's [`goodput_sim::engine::MAX_SPEC_TOKENS`].
pub fn parse_spec_tokens(s: &str) -> Result<SpecTokens, String> {
    let v: Vec<u64> = parse_list(s)?;
    let most = goodput_sim::engine::MAX_SPEC_TOKENS;
    if let Some(k) = v.iter().find(|&&k| k > u64::from(most)) {
        return Err(format!(
            "{k} draft tokens: at most {most} (vLLM's num_speculative_tokens; 3 to 5 is usual), or 0 for none"
        ));
    }
    if let Some(d) = first_repeat(&v) {
        return Err(format!("'{s}' names {d} twice: give each once"));
    }
    Ok(SpecTokens(v.into_iter().map(|k| k as u32).collect()))
}

pub fn parse_rates(s: &str) -> Result<RateList, String> {
    let v: Vec<f64> = parse_list(s)?;
    if v.iter().any(|r| r.is_infinite() && *r > 0.0) {
        // bench and estimate take `--rate inf` (every request at once); a
        // sweep's point is a rate it can place among the others.
        return Err("a sweep's rates are finite: inf (every request at once) is a bench's or an estimate's --rate, \
                    not a sweep's point; give the highest rate to try"
            .into());
    }
    if v.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err("a rate must be a positive number of requests per second".into());
    }
    if let Some(&r) = v.iter().find(|&&r| r < goodput_load::schedule::min_rate()) {
        return Err(goodput_load::error::ScheduleError::RateTooLow(r).to_string());
    }
    if let Some(d) = first_repeat(&v) {
        return Err(format!("'{s}' names {d} twice: give each once (--runs repeats a point)"));
    }
    Ok(RateList(v))
}

/// The most shards a run splits into: a process each, far past any fleet
/// of load generators. `merge` holds a place for each.
pub const MAX_SHARDS: u32 = 10_000;

/// `--shard I/N`: shard I (counted from 0) of N.
pub fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("--shard '{s}': write INDEX/COUNT, the index counted from 0, e.g. 0/3, 1/3, 2/3");
    let (ti, tn) = s.split_once('/').map(|(i, n)| (i.trim(), n.trim())).ok_or_else(bad)?;
    // A whole number past what u64 holds is still a number: past the most
    // shards, not a mistyped --shard (4294967296 had read as a format error).
    let whole = |t: &str| {
        let t = t.strip_prefix('+').unwrap_or(t);
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse::<u64>().unwrap_or(u64::MAX))
    };
    let (i, n) = (whole(ti).ok_or_else(bad)?, whole(tn).ok_or_else(bad)?);
    if n == 0 {
        return Err(format!("--shard {ti}/0: a run splits into one shard or more; write e.g. 0/3, 1/3, 2/3"));
    }
    if n > u64::from(MAX_SHARDS) {
        return Err(format!("--shard {ti}/{tn}: a run splits into at most {MAX_SHARDS} shards"));
    }
    if i >= n {
        return Err(format!(
            "--shard {ti}/{n}: the index counts from 0 and stays below the number of shards (0/{n} … {}/{n})",
            n - 1
        ));
    }
    Ok((i as u32, n as u32))
}

/// `--start-at`: Unix seconds (1767225600, 1767225600.25) or an RFC 3339
/// time (2026-01-01T00:00:00Z, 2026-01-01T01:00:00+01:00), as Unix seconds.
pub fn parse_start_at(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if let Ok(x) = t.parse::<f64>() {
        return match x {
            x if x.is_finite() && x > 0.0 => start_within_horizon(s, x),
            _ => Err(format!("--start-at '{s}': Unix seconds must be a positive number, e.g. 1767225600")),
        };
    }
    let when = time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).map_err(|e| {
        format!(
            "--start-at '{s}' is neither Unix seconds (e.g. 1767225600) nor an RFC 3339 time (e.g. \
             2026-01-01T00:00:00Z): {e}"
        )
    })?;
    start_within_horizon(s, when.unix_timestamp_nanos() as f64 / 1e9)
}

/// A `--start-at` of `t` Unix seconds, if no further ahead than a run's clock takes.
fn start_within_horizon(s: &str, t: f64) -> Result<f64, String> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    if t - now > goodput_core::HORIZON.as_secs_f64() {
        return Err(format!(
            "--start-at '{s}' is more than 100 years from now: give Unix seconds (e.g. 1767225600) or an RFC 3339 time"
        ));
    }
    Ok(t)
}

#[cfg(test)]
mod percentile_tests {
    use super::parse_percentiles;

    /// The flag takes what a saved result is read back with: (0, 100], at
    /// most four decimals.
    #[test]
    fn percentiles_are_above_zero_with_four_decimals_at_most() {
        assert!(parse_percentiles("0,50").unwrap_err().contains("outside (0, 100]"));
        assert!(parse_percentiles("nan").unwrap_err().contains("outside (0, 100]"));
        assert!(parse_percentiles("1e-300").unwrap_err().contains("four decimals"));
        assert!(parse_percentiles("99.99999").unwrap_err().contains("four decimals"));
        assert_eq!(parse_percentiles("0.0001,99.9999,100").unwrap().0, vec![0.0001, 99.9999, 100.0]);
    }
}

#[cfg(test)]
mod number_tests {
    use super::{number, parse_gpu_hour_usd, Units};

    /// A number with a unit, a `$` or a decimal comma gets an error that
    /// names what the flag takes and how to write it (clap's own had said
    /// only "invalid float literal"); a price's `$` is read as written.
    #[test]
    fn a_number_written_with_a_unit_is_told_how_to_write_it() {
        let rate = number("--rate", "requests per second", "10", Units::PerSecond);
        assert_eq!(rate("12.5"), Ok(12.5));
        assert_eq!(rate(" inf "), Ok(f64::INFINITY));
        assert_eq!(
            rate("10/s").unwrap_err(),
            "--rate takes requests per second as a plain number: write --rate 10 (without '/s')"
        );
        assert_eq!(
            rate("10rps").unwrap_err(),
            "--rate takes requests per second as a plain number: write --rate 10 (without 'rps')"
        );
        assert_eq!(
            rate("2,5").unwrap_err(),
            "--rate takes requests per second as a plain number, its decimals after a point: write --rate 2.5"
        );
        assert_eq!(rate("ten").unwrap_err(), "--rate takes requests per second as a plain number, e.g. --rate 10");
        assert_eq!(parse_gpu_hour_usd("$3"), Ok(3.0));
        assert_eq!(parse_gpu_hour_usd(" $2.5"), Ok(2.5));
        assert!(parse_gpu_hour_usd("$3/h").unwrap_err().contains("write --gpu-hour-usd 3 (without '/h')"));
        assert!(parse_gpu_hour_usd("USD3").unwrap_err().contains("the price of one GPU-hour in US dollars"));
        // A unit that is not the flag's own is not stripped into a number a
        // factor off (600/min had been told "write --rate 600"), a share's
        // percentage is given as the share, and a comma before three
        // digits is read both ways (1,000 had been told "write 1.000").
        let told = rate("600/min").unwrap_err();
        assert!(
            told.contains("e.g. --rate 10") && told.contains("'/min'") && !told.contains("write --rate 600"),
            "{told}"
        );
        assert!(!rate("1k").unwrap_err().contains("write --rate 1"));
        let share = number("--fault-error-rate", "a share of requests", "0.05", Units::Share);
        assert!(share("5%").unwrap_err().ends_with("not a percentage: write --fault-error-rate 0.05"));
        let us = number("--kv-link-latency-us", "a time in microseconds", "10", Units::Microseconds);
        assert!(!us("1ms").unwrap_err().contains("write --kv-link-latency-us 1"), "{}", us("1ms").unwrap_err());
        assert!(us("10us").unwrap_err().contains("write --kv-link-latency-us 10 (without 'us')"));
        let thousand = rate("1,000").unwrap_err();
        assert!(thousand.contains("write --rate 1000 for 1000, or --rate 1.000"), "{thousand}");
        assert!(!rate("2,5/s").unwrap_err().contains("2.5/s"), "{}", rate("2,5/s").unwrap_err());
    }

    /// A flag's unit is the one it is declared with, whatever words say
    /// what it takes: it had been found by matching `what`, and "requests
    /// sent each second" for "requests per second" had cut `/s` from
    /// --rate's hints, and "a fraction of requests" a share's percentage.
    #[test]
    fn a_unit_is_the_flag_s_own_whatever_words_name_it() {
        let rate = number("--rate", "requests sent each second", "10", Units::PerSecond);
        assert_eq!(
            rate("10/s").unwrap_err(),
            "--rate takes requests sent each second as a plain number: write --rate 10 (without '/s')"
        );
        assert!(rate("3 QPS").unwrap_err().ends_with("write --rate 3 (without 'QPS')"));
        let share = number("--fault-error-rate", "a fraction of requests", "0.05", Units::Share);
        assert_eq!(
            share("5%").unwrap_err(),
            "--fault-error-rate takes a fraction of requests from 0 to 1, not a percentage: write --fault-error-rate 0.05"
        );
        assert_eq!(share("0.25"), Ok(0.25));
        // The same words with no unit declared: no unit is the flag's own.
        let plain = number("--rate", "requests per second", "10", Units::Plain);
        assert!(plain("10/s").unwrap_err().contains("('/s' after the number is not a unit it reads)"));
        assert!(plain("5%").unwrap_err().contains("('%' after the number is not a unit it reads)"));
    }

    /// Each flag declared with its unit: through the command line, a unit
    /// of its own is hinted and a share's percentage told as the share.
    #[test]
    fn the_declared_flags_hint_their_own_units() {
        use clap::Parser;
        let err = |args: &[&str]| {
            let argv = ["goodput", "estimate"].iter().chain(args);
            crate::cli::Cli::try_parse_from(argv).err().map(|e| e.to_string()).unwrap_or_default()
        };
        for (args, told) in [
            (&["--rate", "5rps"][..], "write --rate 5 (without 'rps')"),
            (&["--burstiness", "2x"][..], "('x' after the number is not a unit it reads)"),
            (&["--trace-speed", "2x"][..], "write --trace-speed 2 (without 'x')"),
            (&["--spec-acceptance", "70%"][..], "not a percentage: write --spec-acceptance 0.7"),
            (&["--spec-draft-cost", "5%"][..], "not a percentage: write --spec-draft-cost 0.05"),
            (&["--gpu-memory-utilization", "90%"][..], "not a percentage: write --gpu-memory-utilization 0.9"),
            (&["--kv-link-gbps", "400Gbps"][..], "write --kv-link-gbps 400 (without 'Gbps')"),
            (&["--kv-link-latency-us", "10µs"][..], "write --kv-link-latency-us 10 (without 'µs')"),
            (&["--gpu-hour-usd", "3usd"][..], "write --gpu-hour-usd 3 (without 'usd')"),
        ] {
            assert!(err(args).contains(told), "{args:?}: {}", err(args));
        }
    }
}
