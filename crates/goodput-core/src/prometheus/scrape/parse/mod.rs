//! The Prometheus text exposition format (0.0.4, and the OpenMetrics text some
//! servers send instead) parsed into metric families. Our own parser, because
//! engine metric names carry colons (`vllm:num_requests_running`) and a bad
//! line must cost that line only, never the scrape.

use super::histogram::{Bucket, Histogram};
mod lexer;

pub use super::values::Labels;
pub(crate) use super::values::{parse_float, prom_float};
use lexer::{check_sample, name_end, parse_sample, split_word, unescape_help};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;

/// The `# TYPE` of a family; `untyped` when none was declared (OpenMetrics'
/// `unknown` reads as untyped too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

impl MetricType {
    fn from_word(word: &str) -> Option<MetricType> {
        Some(match word {
            "counter" => MetricType::Counter,
            "gauge" => MetricType::Gauge,
            "histogram" => MetricType::Histogram,
            "summary" => MetricType::Summary,
            "untyped" | "unknown" => MetricType::Untyped,
            _ => return None,
        })
    }

    /// Whether a sample called `sample` belongs to a family called `family`
    /// of this type (`_total` for counters, `_bucket`/`_sum`/`_count` for
    /// histograms, `_created` for OpenMetrics).
    fn owns(self, family: &str, sample: &str) -> bool {
        let Some(suffix) = sample.strip_prefix(family) else {
            return false;
        };
        match self {
            MetricType::Counter => matches!(suffix, "" | "_total" | "_created"),
            MetricType::Histogram => matches!(suffix, "_bucket" | "_sum" | "_count" | "_created"),
            MetricType::Summary => matches!(suffix, "" | "_sum" | "_count" | "_created"),
            MetricType::Gauge | MetricType::Untyped => suffix.is_empty(),
        }
    }
}

/// One sample line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The name as exposed, suffix included (`vllm:e2e_request_latency_seconds_bucket`).
    pub name: String,
    pub labels: Labels,
    #[serde(with = "prom_float")]
    pub value: f64,
    /// As written: milliseconds in 0.0.4, seconds in OpenMetrics. Kept, not
    /// used: scrapes are stamped on the run's clock instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
}

/// A metric family: a name, a type, and the samples that belong to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Family {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MetricType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    pub samples: Vec<Sample>,
}

/// What went wrong, where. Line numbers count from 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    pub line: usize,
    pub kind: ParseErrorKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum ParseErrorKind {
    /// The line was skipped.
    #[error("malformed line: {0}")]
    Malformed(String),
    /// A family's lines came as a second group after other families. The
    /// first group is kept and the later one dropped: merging could put two
    /// values on one series, and Prometheus itself rejects such a scrape.
    #[error("family {0} appears again after other families; its first group is kept")]
    DuplicateFamily(String),
    /// A second `# HELP` or `# TYPE` for a family, or a `# TYPE` after its
    /// samples; the first one stands.
    #[error("repeated or late metadata for {0}; the first is kept")]
    DuplicateMetadata(String),
    /// The same series twice in one family; the first value is kept.
    #[error("series {0} repeated; the first value is kept")]
    DuplicateSeries(String),
    /// A family whose samples do not fit its type (a histogram with no
    /// `+Inf` bucket, say). The family is kept as parsed.
    #[error("family {family}: {reason}")]
    InvalidFamily { family: String, reason: String },
    #[error("text after # EOF ignored")]
    AfterEof,
    /// More metric lines than one parse reads ([`MAX_METRIC_LINES`]): the
    /// first `limit` were read, and those after them counted, not read.
    #[error("{lines} metric lines, more than the {limit} read of one exposition; the rest were counted, not read")]
    TooManyLines { lines: usize, limit: usize },
}

/// A parsed scrape: families in the order they appeared, and every problem
/// met on the way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scrape {
    pub families: Vec<Family>,
    pub errors: Vec<ParseError>,
}

impl Scrape {
    /// The family declared (or implied) under exactly this name.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// Every sample exposed under exactly this sample name, whatever family
    /// holds it: a counter reads the same as `# TYPE x_total counter` (0.0.4)
    /// and as `# TYPE x counter` with `x_total` samples (OpenMetrics).
    pub fn samples<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.families
            .iter()
            .filter(move |f| name.starts_with(f.name.as_str()))
            .flat_map(|f| f.samples.iter())
            .filter(move |s| s.name == name)
    }

    /// The histogram series exposed under `name` (from its `_bucket`, `_sum`
    /// and `_count` samples, with or without a `# TYPE` line). Buckets whose
    /// `le` does not parse are dropped; a series with neither `_count` nor a
    /// `+Inf` bucket is left out.
    pub fn histograms(&self, name: &str) -> Vec<Histogram> {
        #[derive(Default)]
        struct Parts {
            buckets: Vec<Bucket>,
            sum: Option<f64>,
            count: Option<f64>,
        }
        let mut series: BTreeMap<Labels, Parts> = BTreeMap::new();
        for family in self.families.iter().filter(|f| f.name.starts_with(name)) {
            for s in &family.samples {
                let Some(suffix) = s.name.strip_prefix(name) else {
                    continue;
                };
                match suffix {
                    "_bucket" => {
                        let Some(le) = s.labels.get("le").and_then(|v| parse_float(v)) else {
                            continue;
                        };
                        let mut labels = s.labels.clone();
                        labels.remove("le");
                        series.entry(labels).or_default().buckets.push(Bucket { le, count: s.value });
                    }
                    "_sum" => series.entry(s.labels.clone()).or_default().sum = Some(s.value),
                    "_count" => series.entry(s.labels.clone()).or_default().count = Some(s.value),
                    _ => {}
                }
            }
        }
        series
            .into_iter()
            .filter_map(|(labels, mut p)| {
                p.buckets.sort_by(|a, b| a.le.total_cmp(&b.le));
                p.buckets.dedup_by(|later, first| later.le == first.le);
                let inf = p.buckets.last().filter(|b| b.le == f64::INFINITY).map(|b| b.count);
                let count = p.count.or(inf)?;
                Some(Histogram { labels, buckets: p.buckets, count, sum: p.sum })
            })
            .collect()
    }
}

/// The label [`merge_endpoints`] puts on each endpoint's series.
pub const ENDPOINT_LABEL: &str = "instance";

/// The scrapes of several endpoints, each parsed as its own exposition, read
/// as one: every sample of an endpoint labelled [`ENDPOINT_LABEL`] with its
/// name (its URL, credentials masked), so that two exporters' series of one
/// name (two nodes' `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"}`, two
/// engine instances' token counters) stay apart and are summed where a
/// signal sums its series; families of one name are joined. A label of that
/// name the endpoint set already is kept behind the endpoint's
/// (`URL VALUE`). Each part's errors are kept, their lines counted in its
/// own text. (Joined as one text, a second exporter's families had been
/// dropped as a parse error.) Every part is labelled, one alone too: a run
/// of several endpoints labels each of its scrapes alike, whichever answered.
pub fn merge_endpoints(parts: Vec<(String, Scrape)>) -> Scrape {
    let mut merged = Scrape::default();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (endpoint, scrape) in parts {
        merged.errors.extend(scrape.errors);
        for mut family in scrape.families {
            for s in &mut family.samples {
                let value = match s.labels.get(ENDPOINT_LABEL) {
                    Some(own) => format!("{endpoint} {own}"),
                    None => endpoint.clone(),
                };
                s.labels.insert(ENDPOINT_LABEL.to_string(), value);
            }
            match at.get(&family.name) {
                Some(&i) => merged.families[i].samples.extend(family.samples),
                None => {
                    at.insert(family.name.clone(), merged.families.len());
                    merged.families.push(family);
                }
            }
        }
    }
    merged
}

/// The most metric lines (samples, `# HELP` and `# TYPE`) [`parse`] reads
/// of one text. What the parser keeps of a line (a sample and its labels,
/// a family, an error) is then bounded by this, not by how many lines a
/// server sends: a vLLM server exposes a few thousand, and an exposition of
/// four million short lines, under the 64 MiB a body may hold, had taken
/// 5 GB to parse. Past it the rest is counted, not read
/// ([`ParseErrorKind::TooManyLines`]).
pub const MAX_METRIC_LINES: usize = 100_000;

/// Parses one scrape. Never fails and never panics: what cannot be read
/// lands in [`Scrape::errors`] and the rest is kept. Reads at most
/// [`MAX_METRIC_LINES`] metric lines.
///
/// ```
/// use goodput_core::prometheus::scrape::parse::parse;
/// let s = parse("# TYPE vllm:num_requests_running gauge\n\
///                vllm:num_requests_running{model_name=\"m\"} 3\n");
/// assert!(s.errors.is_empty());
/// assert_eq!(s.samples("vllm:num_requests_running").next().unwrap().value, 3.0);
/// ```
pub fn parse(text: &str) -> Scrape {
    parse_at_most(text, MAX_METRIC_LINES)
}

/// [`parse`], reading at most `limit` metric lines (samples, `# HELP` and
/// `# TYPE`): past them, the rest are counted and the scrape ends with a
/// [`ParseErrorKind::TooManyLines`] error, at the first line not read.
pub fn parse_at_most(text: &str, limit: usize) -> Scrape {
    parse_with(text, limit, None)
}

/// [`parse_at_most`], keeping the samples of only the families whose name
/// `keeps` accepts, and of every histogram and summary (checked whole): the
/// other families' sample lines are read and checked as [`parse`] reads
/// them, but not kept. The families, and the errors (the same lines, the
/// same words), are [`parse`]'s; the families not kept hold no samples.
/// A repeated series of those is told by a 64-bit hash of it, keyed afresh
/// for each parse: two series of one that share one (a chance in 10^9 for
/// a text of 100,000 lines) would be said to repeat, and no sample kept
/// changes. A scraper that maps
/// a server's text to signals reads a few dozen of its families: 99,000
/// lines of other gauges had been parsed into samples and labels, every
/// 100 ms, to be dropped (a client core, and 230 MB held).
pub fn parse_keeping(text: &str, limit: usize, keeps: fn(&str) -> bool) -> Scrape {
    parse_with(text, limit, Some(keeps))
}

fn parse_with(text: &str, limit: usize, keeps: Option<fn(&str) -> bool>) -> Scrape {
    let mut p = Parser { limit, keeps, ..Parser::default() };
    let mut lines = text.split('\n').enumerate();
    let mut flow = Flow::Go;
    let mut stopped_at = 0;
    for (i, raw) in lines.by_ref() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        flow = p.line(i + 1, line);
        if flow != Flow::Go {
            stopped_at = i + 1;
            break;
        }
    }
    if flow == Flow::Full {
        let rest = count_metric_lines(lines.by_ref().map(|(_, l)| l));
        p.error(stopped_at, ParseErrorKind::TooManyLines { lines: limit.saturating_add(1 + rest), limit });
    }
    if flow == Flow::Eof {
        if let Some((i, _)) = lines.find(|(_, l)| !l.trim().is_empty()) {
            p.error(i + 1, ParseErrorKind::AfterEof);
        }
    }
    p.finish()
}

/// The metric lines (samples, `# HELP` and `# TYPE`, well formed or not) of
/// `text` up to its `# EOF`: what [`parse`] would read of it, counted
/// without reading them, so that an exposition too large to parse is told
/// by its size before it costs any memory.
pub fn metric_lines(text: &str) -> usize {
    count_metric_lines(text.split('\n'))
}

fn count_metric_lines<'a>(lines: impl Iterator<Item = &'a str>) -> usize {
    let mut n = 0;
    for line in lines {
        match line_kind(line.strip_suffix('\r').unwrap_or(line)) {
            LineKind::Metric => n += 1,
            LineKind::Eof => break,
            LineKind::Other => {}
        }
    }
    n
}

/// What a line is to the parser.
#[derive(PartialEq)]
enum LineKind {
    /// A sample (or what was meant as one), `# HELP` or `# TYPE`.
    Metric,
    /// `# EOF`.
    Eof,
    /// Blank, or a plain comment (OpenMetrics' `# UNIT` too).
    Other,
}

fn line_kind(line: &str) -> LineKind {
    let trimmed = line.trim_start_matches([' ', '\t']);
    if trimmed.trim_end().is_empty() {
        return LineKind::Other;
    }
    let Some(comment) = trimmed.strip_prefix('#') else {
        return LineKind::Metric;
    };
    match split_word(comment.trim_start_matches([' ', '\t'])) {
        ("HELP" | "TYPE", _) => LineKind::Metric,
        ("EOF", rest) if rest.trim().is_empty() => LineKind::Eof,
        _ => LineKind::Other,
    }
}

#[derive(PartialEq)]
enum Flow {
    Go,
    Eof,
    /// A metric line past the limit: nothing more is read.
    Full,
}

/// The family whose lines are being read.
struct Open {
    index: usize,
    first_line: usize,
    typed: bool,
    /// Its series kept, by hash: each the index of the first sample of its
    /// hash (cloning every sample's name and labels to tell a repeated one
    /// had doubled what a parse held).
    series: HashMap<u64, usize>,
    /// The series of a family whose samples are not kept, by hash.
    hashes: HashSet<u64>,
    /// Its samples read (kept or not).
    samples: usize,
    /// Whether [`Parser::keeps`] takes its name (asked once, not a line).
    named: bool,
}

#[derive(Default)]
struct Parser {
    families: Vec<Family>,
    errors: Vec<ParseError>,
    by_name: HashMap<String, usize>,
    open: Option<Open>,
    /// A repeated family's later group, being dropped: its name and type.
    skipping: Option<(String, MetricType)>,
    /// Metric lines read, and the most that may be.
    read: usize,
    limit: usize,
    /// The families whose samples are kept, by name ([`parse_keeping`]);
    /// `None`, all.
    keeps: Option<fn(&str) -> bool>,
    /// Keys the series' hashes afresh for each parse: no text can be made
    /// to collide them.
    hasher: std::hash::RandomState,
}

impl Parser {
    fn error(&mut self, line: usize, kind: ParseErrorKind) {
        self.errors.push(ParseError { line, kind });
    }

    fn line(&mut self, n: usize, line: &str) -> Flow {
        if line_kind(line) == LineKind::Metric {
            if self.read >= self.limit {
                return Flow::Full;
            }
            self.read += 1;
        }
        let trimmed = line.trim_start_matches([' ', '\t']);
        if trimmed.trim_end().is_empty() {
            return Flow::Go;
        }
        match trimmed.strip_prefix('#') {
            Some(comment) => self.comment(n, comment),
            None => {
                let name = &trimmed[..name_end(trimmed.as_bytes(), 0)];
                if self.keeps_sample(name) {
                    match parse_sample(trimmed) {
                        Ok(sample) => self.sample(n, sample),
                        Err(why) => self.error(n, ParseErrorKind::Malformed(why.to_string())),
                    }
                } else {
                    match check_sample(trimmed, &self.hasher) {
                        Ok((name, series)) => self.unkept_sample(n, trimmed, name, series),
                        Err(why) => self.error(n, ParseErrorKind::Malformed(why.to_string())),
                    }
                }
                Flow::Go
            }
        }
    }

    fn comment(&mut self, n: usize, comment: &str) -> Flow {
        let comment = comment.trim_start_matches([' ', '\t']);
        let (word, rest) = split_word(comment);
        let is_help = match word {
            "HELP" => true,
            "TYPE" => false,
            "EOF" if rest.trim().is_empty() => return Flow::Eof,
            _ => return Flow::Go, // a plain comment, or OpenMetrics `# UNIT`
        };
        let (name, rest) = split_word(rest);
        if name.is_empty() || name_end(name.as_bytes(), 0) != name.len() {
            let what = if is_help { "HELP" } else { "TYPE" };
            self.error(n, ParseErrorKind::Malformed(format!("{what} without a valid metric name")));
            return Flow::Go;
        }
        if is_help {
            self.help(n, name, unescape_help(rest));
        } else {
            let word = rest.trim();
            match MetricType::from_word(word) {
                Some(kind) => self.declare_type(n, name, kind),
                None => {
                    self.error(n, ParseErrorKind::Malformed(format!("unknown metric type {word:?}")));
                    // The family still opens, untyped, so its samples are kept.
                    self.declare_type(n, name, MetricType::Untyped);
                }
            }
        }
        Flow::Go
    }

    /// Makes `name` the open family for a metadata line. False when the line
    /// belongs to a dropped duplicate group.
    fn open_for_metadata(&mut self, n: usize, name: &str) -> bool {
        if self.open.as_ref().is_some_and(|o| self.families[o.index].name == name) {
            return true;
        }
        if self.skipping.as_ref().is_some_and(|(s, _)| s == name) {
            return false;
        }
        self.close();
        if self.by_name.contains_key(name) {
            self.error(n, ParseErrorKind::DuplicateFamily(name.to_string()));
            self.skipping = Some((name.to_string(), MetricType::Untyped));
            return false;
        }
        self.start(n, name);
        true
    }

    fn help(&mut self, n: usize, name: &str, text: String) {
        if !self.open_for_metadata(n, name) {
            return;
        }
        let Some(index) = self.open.as_ref().map(|o| o.index) else {
            return;
        };
        if self.families[index].help.is_some() {
            self.error(n, ParseErrorKind::DuplicateMetadata(name.to_string()));
        } else {
            self.families[index].help = Some(text);
        }
    }

    fn declare_type(&mut self, n: usize, name: &str, kind: MetricType) {
        if !self.open_for_metadata(n, name) {
            if let Some((_, k)) = self.skipping.as_mut() {
                *k = kind;
            }
            return;
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        let family = &mut self.families[open.index];
        if open.typed || open.samples > 0 {
            self.errors.push(ParseError { line: n, kind: ParseErrorKind::DuplicateMetadata(name.to_string()) });
        } else {
            open.typed = true;
            family.kind = kind;
        }
    }

    /// The open family, if a sample called `name` belongs to it.
    fn open_owner(&self, name: &str) -> Option<(&Open, &Family)> {
        let open = self.open.as_ref()?;
        let f = &self.families[open.index];
        f.kind.owns(&f.name, name).then_some((open, f))
    }

    /// Whether a sample called `name` would be kept, before it is read:
    /// where it would land, what [`Parser::land`] does, decides. A
    /// family's samples are kept when [`Parser::keeps`] takes its name, and
    /// a histogram's and a summary's always (they are checked whole when
    /// the family closes).
    fn keeps_sample(&self, name: &str) -> bool {
        let Some(keeps) = self.keeps else { return true };
        match self.open_owner(name) {
            Some((open, family)) => open.named || matches!(family.kind, MetricType::Histogram | MetricType::Summary),
            // A family of its own name, untyped (or a repeated family's
            // later group, dropped, whichever way it is read).
            None => name.is_empty() || keeps(name),
        }
    }

    /// Opens the family a sample called `name` belongs to, unless it is
    /// already open; false when the sample is dropped (it is of a repeated
    /// family's later group).
    fn land(&mut self, n: usize, name: &str) -> bool {
        if self.open_owner(name).is_none() {
            let skipped =
                self.skipping.as_ref().is_some_and(|(family, kind)| *family == name || kind.owns(family, name));
            if skipped {
                return false;
            }
            self.close();
            if let Some((family, kind)) = self.earlier_owner(name) {
                self.error(n, ParseErrorKind::DuplicateFamily(family.clone()));
                self.skipping = Some((family, kind));
                return false;
            }
            self.start(n, name);
        }
        self.open.is_some()
    }

    fn sample(&mut self, n: usize, sample: Sample) {
        if !self.land(n, &sample.name) {
            return;
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        let samples = &mut self.families[open.index].samples;
        let hash = self.hasher.hash_one((&sample.name, &sample.labels));
        let same = |s: &Sample| s.name == sample.name && s.labels == sample.labels;
        // Two series of one hash (a chance in 2^64 a pair): all looked through.
        let repeated = open.series.get(&hash).is_some_and(|&i| same(&samples[i]) || samples.iter().any(same));
        if repeated {
            let id = format!("{}{:?}", sample.name, sample.labels);
            self.errors.push(ParseError { line: n, kind: ParseErrorKind::DuplicateSeries(id) });
            return;
        }
        open.series.entry(hash).or_insert(samples.len());
        open.samples += 1;
        samples.push(sample);
    }

    /// A sample of a family whose samples are not kept, `line` checked
    /// already: its name and its series' hash.
    fn unkept_sample(&mut self, n: usize, line: &str, name: &str, series: u64) {
        if !self.land(n, name) {
            return;
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        if !open.hashes.insert(series) {
            // Said in the words of a kept sample's.
            let id = match parse_sample(line) {
                Ok(s) => format!("{}{:?}", s.name, s.labels),
                Err(_) => name.to_string(),
            };
            self.errors.push(ParseError { line: n, kind: ParseErrorKind::DuplicateSeries(id) });
            return;
        }
        open.samples += 1;
    }

    /// The already closed family this sample name would have belonged to, or
    /// that already holds its name.
    fn earlier_owner(&self, sample: &str) -> Option<(String, MetricType)> {
        if let Some(&i) = self.by_name.get(sample) {
            let f = &self.families[i];
            return Some((f.name.clone(), f.kind));
        }
        let stems =
            ["_total", "_created", "_bucket", "_sum", "_count"].iter().filter_map(|suffix| sample.strip_suffix(suffix));
        for stem in stems {
            if let Some(&i) = self.by_name.get(stem) {
                let f = &self.families[i];
                if f.kind.owns(&f.name, sample) {
                    return Some((f.name.clone(), f.kind));
                }
            }
        }
        None
    }

    /// Opens a new family, untyped until a `# TYPE` says otherwise.
    fn start(&mut self, n: usize, name: &str) {
        let index = self.families.len();
        self.families.push(Family {
            name: name.to_string(),
            kind: MetricType::Untyped,
            help: None,
            samples: Vec::new(),
        });
        self.by_name.insert(name.to_string(), index);
        self.open = Some(Open {
            index,
            first_line: n,
            typed: false,
            series: HashMap::new(),
            hashes: HashSet::new(),
            samples: 0,
            named: self.keeps.is_none_or(|keeps| keeps(name)),
        });
        self.skipping = None;
    }

    fn close(&mut self) {
        self.skipping = None;
        let Some(open) = self.open.take() else {
            return;
        };
        let family = &self.families[open.index];
        for reason in validate(family) {
            let kind = ParseErrorKind::InvalidFamily { family: family.name.clone(), reason };
            self.errors.push(ParseError { line: open.first_line, kind });
        }
    }

    fn finish(mut self) -> Scrape {
        self.close();
        Scrape { families: self.families, errors: self.errors }
    }
}

/// What is wrong with a family as a whole, beyond its single lines.
fn validate(family: &Family) -> Vec<String> {
    let mut problems = Vec::new();
    match family.kind {
        MetricType::Histogram => {
            let bucket = format!("{}_bucket", family.name);
            let mut series: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
            for s in family.samples.iter().filter(|s| s.name == bucket) {
                let le = match s.labels.get("le") {
                    None => {
                        problems.push("a bucket without an le label".to_string());
                        continue;
                    }
                    Some(v) => match parse_float(v) {
                        Some(le) if !le.is_nan() => le,
                        _ => {
                            problems.push(format!("a bucket with le={v:?}"));
                            continue;
                        }
                    },
                };
                let mut labels = s.labels.clone();
                labels.remove("le");
                series.entry(labels).or_default().push((le, s.value));
            }
            for (labels, mut buckets) in series {
                buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                if !matches!(buckets.last(), Some(&(le, _)) if le == f64::INFINITY) {
                    problems.push(format!("series {labels:?} has no +Inf bucket"));
                }
                if buckets.windows(2).any(|w| w[1].1 < w[0].1) {
                    problems.push(format!("series {labels:?} has bucket counts that decrease"));
                }
            }
        }
        MetricType::Summary => {
            let bad = family
                .samples
                .iter()
                .filter(|s| s.name == family.name)
                .any(|s| s.labels.get("quantile").and_then(|q| parse_float(q)).is_none());
            if bad {
                problems.push("a quantile sample without a valid quantile label".to_string());
            }
        }
        _ => {}
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_parsed_apart_and_their_series_labelled() {
        let a = "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n\
                 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 10\n\
                 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\"} 20\n\
                 # TYPE DCGM_FI_DEV_POWER_MGMT_LIMIT gauge\n\
                 DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu=\"0\"} 700\n";
        let b = "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n\
                 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",instance=\"n\"} 30\n";
        // One text: the second family is a parse error, and its GPU is lost.
        assert_eq!(parse(&format!("{a}{b}")).samples("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").count(), 2);
        let merged = merge_endpoints(vec![("http://a".into(), parse(a)), ("http://b".into(), parse(b))]);
        assert!(merged.errors.is_empty(), "{:?}", merged.errors);
        assert_eq!(merged.families.len(), 2);
        let seen: Vec<(String, f64)> = merged
            .samples("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
            .map(|s| (s.labels[ENDPOINT_LABEL].clone(), s.value))
            .collect();
        assert_eq!(seen, [("http://a".into(), 10.0), ("http://a".into(), 20.0), ("http://b n".into(), 30.0)]);
        // One endpoint alone is labelled alike.
        let one = merge_endpoints(vec![("http://b".into(), parse(b))]);
        assert_eq!(
            one.samples("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").next().unwrap().labels[ENDPOINT_LABEL],
            "http://b n"
        );
    }
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn kinds(s: &Scrape) -> Vec<&ParseErrorKind> {
        s.errors.iter().map(|e| &e.kind).collect()
    }

    #[test]
    fn metric_names_keep_their_colons() {
        let s = parse("vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 4\n");
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        let f = &s.families[0];
        assert_eq!((f.name.as_str(), f.kind), ("vllm:num_requests_running", MetricType::Untyped));
        assert_eq!(f.samples[0].labels, labels(&[("engine", "0"), ("model_name", "m")]));
    }

    #[test]
    fn label_values_are_unescaped() {
        let s = parse(r#"m{a="say \"hi\"",b="back\\slash",c="two\nlines",d="{,} = # x",e="ünï",f="\t"} 1"#);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        let want = labels(&[
            ("a", "say \"hi\""),
            ("b", "back\\slash"),
            ("c", "two\nlines"),
            ("d", "{,} = # x"),
            ("e", "ünï"),
            ("f", "\\t"),
        ]);
        assert_eq!(s.families[0].samples[0].labels, want);
    }

    #[test]
    fn values_timestamps_and_blanks() {
        let cases: &[(&str, f64, Option<f64>)] = &[
            ("m 1", 1.0, None),
            ("m 1.5e+06", 1.5e6, None),
            ("m -2.5E-3", -2.5e-3, None),
            ("m +Inf", f64::INFINITY, None),
            ("m -Inf", f64::NEG_INFINITY, None),
            ("m 17 1712345678901", 17.0, Some(1712345678901.0)),
            ("m\t3\t", 3.0, None),
            ("  m{} 4", 4.0, None),
            ("m{a=\"1\",} 5", 5.0, None),
            ("m { a = \"1\" } 6", 6.0, None),
            ("m 7 1712345678.5 # {trace_id=\"x\"} 0.5", 7.0, Some(1712345678.5)),
        ];
        for &(line, value, timestamp) in cases {
            let s = parse(line);
            assert!(s.errors.is_empty(), "{line}: {:?}", s.errors);
            let sample = &s.families[0].samples[0];
            assert_eq!((sample.value, sample.timestamp), (value, timestamp), "{line}");
        }
        let nan = parse("m NaN");
        assert!(nan.families[0].samples[0].value.is_nan());
    }

    #[test]
    fn a_histogram_owns_its_buckets_sum_and_count() {
        let s = parse(
            "# HELP h Latency.\n# TYPE h histogram\n\
             h_bucket{le=\"0.5\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 1.25\nh_count 3\n\
             # TYPE g gauge\ng 1\n",
        );
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.families.len(), 2);
        let h = &s.families[0];
        assert_eq!((h.kind, h.samples.len(), h.help.as_deref()), (MetricType::Histogram, 4, Some("Latency.")));
        let hs = s.histograms("h");
        assert_eq!(hs.len(), 1);
        assert_eq!((hs[0].count, hs[0].sum), (3.0, Some(1.25)));
        assert_eq!(hs[0].buckets, vec![Bucket { le: 0.5, count: 2.0 }, Bucket { le: f64::INFINITY, count: 3.0 }]);
    }

    #[test]
    fn a_summary_owns_its_quantiles_sum_and_count() {
        let s = parse(
            "# TYPE rpc summary\nrpc{quantile=\"0.5\"} 0.2\nrpc{quantile=\"0.99\"} 0.9\n\
             rpc_sum 12\nrpc_count 40\nnext 1\n",
        );
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.families[0].kind, MetricType::Summary);
        assert_eq!(s.families[0].samples.len(), 4);
        assert_eq!(s.families[1].name, "next");
    }

    #[test]
    fn counters_read_the_same_in_both_formats() {
        let text_004 = "# TYPE req_total counter\nreq_total{a=\"x\"} 5\n";
        let open_metrics = "# TYPE req counter\n# UNIT req requests\n\
                            req_total{a=\"x\"} 5 # {trace_id=\"abc\"} 1.0 1712345678.5\n\
                            req_created{a=\"x\"} 1712345600.5\n# EOF\n";
        for text in [text_004, open_metrics] {
            let s = parse(text);
            assert!(s.errors.is_empty(), "{:?}", s.errors);
            assert_eq!(s.families.len(), 1);
            assert_eq!(s.families[0].kind, MetricType::Counter);
            let values: Vec<f64> = s.samples("req_total").map(|x| x.value).collect();
            assert_eq!(values, vec![5.0]);
        }
    }

    #[test]
    fn openmetrics_histogram_with_exemplars_and_created() {
        let s = parse(
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1 # {trace_id=\"x\"} 0.4\n\
             h_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\nh_created 1.7e9\n# EOF\n",
        );
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.families[0].samples.len(), 5);
        assert_eq!(s.histograms("h")[0].count, 2.0);
    }

    #[test]
    fn text_after_eof_is_reported_and_ignored() {
        let s = parse("a 1\n# EOF\nb 2\n");
        assert_eq!(s.families.len(), 1);
        assert_eq!(s.errors, vec![ParseError { line: 3, kind: ParseErrorKind::AfterEof }]);
    }

    #[test]
    fn a_malformed_line_costs_only_that_line() {
        let s = parse(
            "# TYPE a gauge\na 1\n\
             # TYPE b gauge\nb{x=\"1\" 2\nb{x=\"2\"} 3\nb 1 2 3\n9bad 1\nc{x=1} 1\n\
             # TYPE c gauge\nc 4\nd\n# TYPE e nonsense\ne 5\n",
        );
        let lines: Vec<usize> = s.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![4, 6, 7, 8, 11, 12], "{:?}", s.errors);
        assert!(s.errors.iter().all(|e| matches!(e.kind, ParseErrorKind::Malformed(_))));
        let names: Vec<&str> = s.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["a", "b", "c", "e"]);
        assert_eq!(s.families[1].samples.len(), 1);
        assert_eq!(s.families[3].samples[0].value, 5.0);
    }

    #[test]
    fn a_repeated_family_is_reported_and_its_first_group_kept() {
        let s = parse(
            "# TYPE a gauge\na 1\n# TYPE b gauge\nb 2\n# HELP a again\n# TYPE a gauge\na 3\n# TYPE c gauge\nc 4\n",
        );
        assert_eq!(kinds(&s), vec![&ParseErrorKind::DuplicateFamily("a".into())]);
        assert_eq!(s.errors[0].line, 5);
        let values: Vec<(&str, f64)> = s.families.iter().map(|f| (f.name.as_str(), f.samples[0].value)).collect();
        assert_eq!(values, vec![("a", 1.0), ("b", 2.0), ("c", 4.0)]);
        assert_eq!(s.families[0].help, None);

        // Untyped and histogram families interleaved with others.
        let s = parse("x 1\ny 2\nx{k=\"v\"} 3\nx 4\ny 5\n");
        let dup = |n: &str| ParseErrorKind::DuplicateFamily(n.into());
        assert_eq!(kinds(&s), vec![&dup("x"), &dup("y")]);
        assert_eq!(s.families.iter().map(|f| f.samples.len()).collect::<Vec<_>>(), vec![1, 1]);
        let s = parse(
            "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nother 1\nh_sum 2\nh_bucket{le=\"+Inf\"} 2\n",
        );
        assert_eq!(kinds(&s), vec![&dup("h")]);
        assert_eq!(s.histograms("h")[0].sum, None);
    }

    #[test]
    fn repeated_series_and_metadata_are_reported() {
        let s = parse("# TYPE a gauge\n# TYPE a counter\n# HELP a one\n# HELP a two\na{k=\"1\"} 1\na{k=\"1\"} 2\n# TYPE a counter\n");
        let lines: Vec<usize> = s.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![2, 4, 6, 7]);
        let f = &s.families[0];
        assert_eq!((f.kind, f.help.as_deref(), f.samples.len()), (MetricType::Gauge, Some("one"), 1));
        assert_eq!(f.samples[0].value, 1.0);
    }

    #[test]
    fn an_invalid_histogram_is_reported_and_kept() {
        let s = parse(
            "# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 4\nh_bucket{le=\"x\"} 1\nh_bucket 1\nh_count 5\n\
             # TYPE q summary\nq{quantile=\"half\"} 1\nok 1\n",
        );
        let invalid: Vec<&str> = s
            .errors
            .iter()
            .filter_map(|e| match &e.kind {
                ParseErrorKind::InvalidFamily { family, .. } => Some(family.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(invalid, vec!["h", "h", "h", "h", "q"], "{:?}", s.errors);
        assert_eq!(s.errors[0].line, 1);
        assert_eq!(s.families.len(), 3);
        assert_eq!(s.families[0].samples.len(), 5);
        // Without a +Inf bucket the count still comes from _count.
        assert_eq!(s.histograms("h")[0].count, 5.0);
    }

    #[test]
    fn crlf_blank_lines_and_help_escapes() {
        let s = parse("\r\n# HELP a Line one\\nline two \\\\ done\r\n# TYPE a gauge\r\n\r\na 1\r\n");
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.families[0].help.as_deref(), Some("Line one\nline two \\ done"));
        assert_eq!(s.families[0].samples[0].value, 1.0);
    }

    #[test]
    fn a_scrape_survives_json_with_infinities() {
        let s = parse("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nn NaN\nm -Inf\nbad line\n");
        let json = serde_json::to_string(&s).unwrap();
        let back: Scrape = serde_json::from_str(&json).unwrap();
        assert_eq!(back.families[0], s.families[0]);
        assert_eq!(back.families[2], s.families[2]);
        assert!(back.families[1].samples[0].value.is_nan());
        assert_eq!(back.errors, s.errors);
    }

    #[test]
    fn past_its_limit_the_parser_counts_lines_and_reads_none() {
        // Blank lines, plain comments and # UNIT are not metric lines; # HELP,
        // # TYPE and samples are, malformed ones too.
        let text = "# HELP a A.\n# TYPE a gauge\n\n# a comment\n# UNIT a seconds\na{k=\"1\"} 1\nbad line\n\
                    a{k=\"2\"} 2\na{k=\"3\"} 3\r\n# EOF\na{k=\"4\"} 4\n";
        assert_eq!(metric_lines(text), 6, "up to # EOF");
        let whole = parse_at_most(text, 6);
        assert_eq!(whole.families[0].samples.len(), 3);
        assert!(!kinds(&whole).iter().any(|k| matches!(k, ParseErrorKind::TooManyLines { .. })));
        assert_eq!(whole.errors.last().unwrap().kind, ParseErrorKind::AfterEof);
        let cut = parse_at_most(text, 4);
        assert_eq!(cut.families[0].samples.len(), 1, "a{{k=2}} is the fifth metric line: {:?}", cut.families);
        assert_eq!(
            cut.errors.last().unwrap(),
            &ParseError { line: 8, kind: ParseErrorKind::TooManyLines { lines: 6, limit: 4 } },
            "the line where reading stopped, and every metric line counted; nothing after # EOF"
        );
        // parse itself reads MAX_METRIC_LINES: four million one-label lines
        // had taken 5 GB.
        let many: String = (0..MAX_METRIC_LINES + 10).map(|i| format!("a{{b=\"{i}\"}} 1\n")).collect();
        assert_eq!(metric_lines(&many), MAX_METRIC_LINES + 10);
        let s = parse(&many);
        assert_eq!(s.families[0].samples.len(), MAX_METRIC_LINES);
        let limit = MAX_METRIC_LINES;
        assert_eq!(
            s.errors,
            vec![ParseError {
                line: MAX_METRIC_LINES + 1,
                kind: ParseErrorKind::TooManyLines { lines: MAX_METRIC_LINES + 10, limit }
            }]
        );
    }

    /// The samples of the families `keeps` takes (and of histograms and
    /// summaries): else what [`parse`] reads.
    #[track_caller]
    fn kept_as_parsed(text: &str, keeps: fn(&str) -> bool) {
        let (all, kept) = (parse(text), parse_keeping(text, MAX_METRIC_LINES, keeps));
        assert_eq!(kept.errors, all.errors, "{text}");
        assert_eq!(kept.families.len(), all.families.len(), "{text}");
        for (k, a) in kept.families.iter().zip(&all.families) {
            assert_eq!((&k.name, k.kind, &k.help), (&a.name, a.kind, &a.help), "{text}");
            let whole = keeps(&a.name) || matches!(a.kind, MetricType::Histogram | MetricType::Summary);
            // Compared by their values' bits: a `NaN` sample ("a naN") is
            // the same sample read twice, which `==` on f64 denies.
            let bits = |s: &[Sample]| {
                s.iter()
                    .map(|x| (x.name.clone(), x.labels.clone(), x.value.to_bits(), x.timestamp.map(f64::to_bits)))
                    .collect::<Vec<_>>()
            };
            let want = if whole { bits(&a.samples) } else { Vec::new() };
            assert_eq!(bits(&k.samples), want, "{}: {text}", a.name);
        }
    }

    /// A family kept whose sample is `NaN` reads as parsed: the proptest
    /// below once drew "a naN" and compared the two reads with `==`, which
    /// no `NaN` equals.
    #[test]
    fn a_nan_sample_kept_reads_as_parsed() {
        kept_as_parsed("a naN", |name| name.contains('a'));
        kept_as_parsed("# TYPE g gauge\ng{x=\"1\"} NaN 5", |_| true);
    }

    /// The families not kept are read as `parse` reads them: the same
    /// errors, in the same words (a repeated series, whatever the order of
    /// its labels or how its values were escaped; a label given twice; a
    /// type after the samples; a repeated family), and no sample kept.
    #[test]
    fn families_not_kept_are_checked_as_parsed() {
        let keeps: fn(&str) -> bool = |name| name.starts_with("vllm:");
        let text = "# TYPE vllm:num_requests_running gauge\n\
                    vllm:num_requests_running{a=\"1\"} 3\n\
                    # TYPE other gauge\n\
                    other{a=\"1\",b=\"x\\\"y\"} 1\n\
                    other{b=\"x\\\"y\",a=\"1\"} 2\n\
                    other{a=\"1\",a=\"2\"} 2\n\
                    other{a=\"1\", b=\"x\\\\\"} 3\n\
                    other{a=\"é\\é\"} 4\n\
                    other{a=\"é\\é\"} 5\n\
                    other{a=\"unterminated\\\"} 6\n\
                    other 1e400 12 junk\n\
                    # TYPE other counter\n\
                    untyped_one 1\n\
                    untyped_one 2\n\
                    # TYPE h histogram\n\
                    h_bucket{le=\"1\"} 2\n\
                    h_count 2\n\
                    other 7\n\
                    vllm:num_requests_running{a=\"2\"} 4\n";
        kept_as_parsed(text, keeps);
        let kept = parse_keeping(text, MAX_METRIC_LINES, keeps);
        let kinds = kinds(&kept);
        let repeated = kinds.iter().filter(|k| matches!(k, ParseErrorKind::DuplicateSeries(_))).count();
        assert_eq!(repeated, 3, "{kinds:?}");
        assert!(kinds.contains(&&ParseErrorKind::DuplicateSeries("other{\"a\": \"1\", \"b\": \"x\\\"y\"}".into())));
        assert!(kinds.iter().any(|k| matches!(k, ParseErrorKind::InvalidFamily { family, .. } if family == "h")));
        assert_eq!(kept.families.iter().map(|f| f.samples.len()).collect::<Vec<_>>(), [1, 0, 0, 2]);
        let unkept = parse_keeping(text, MAX_METRIC_LINES, |_| false);
        assert_eq!(unkept.families.iter().map(|f| f.samples.len()).collect::<Vec<_>>(), [0, 0, 0, 2]);
    }

    /// Lines made of the format's own pieces, valid or nearly so.
    fn exposition_line() -> impl Strategy<Value = String> {
        prop_oneof![
            "# (HELP|TYPE) [a-z_:]{1,4}( (counter|gauge|histogram|summary|untyped|unknown|x))?",
            "[a-z_:]{1,4}(_bucket|_sum|_count|_total|_created)?(\\{([a-z]{1,2}=\"[a-z0-9+.\\\\\"]{0,4}\",?){0,3}\\})? [-+0-9.eEInfNa]{1,6}( [0-9]{1,4})?( # .{0,6})?",
            "[a-z{}=\",:#\\\\ +.0-9\t-]{0,30}",
            Just("# EOF".to_string()),
        ]
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panicking(text in any::<String>()) {
            let _ = parse(&text);
        }

        #[test]
        fn families_are_unique_and_own_their_samples(lines in prop::collection::vec(exposition_line(), 0..40)) {
            let s = parse(&lines.join("\n"));
            let mut names = HashSet::new();
            for f in &s.families {
                prop_assert!(names.insert(f.name.clone()), "family {} twice", f.name);
                for sample in &f.samples {
                    prop_assert!(sample.name == f.name || f.kind.owns(&f.name, &sample.name));
                }
            }
        }

        #[test]
        fn families_not_kept_read_as_parsed(lines in prop::collection::vec(exposition_line(), 0..40)) {
            let text = lines.join("\n");
            kept_as_parsed(&text, |name| name.contains('a'));
            kept_as_parsed(&text, |_| false);
        }

        #[test]
        fn a_well_formed_sample_reads_back(
            name in "[a-zA-Z_:][a-zA-Z0-9_:]{0,20}",
            labels in prop::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,8}", any::<String>(), 0..4),
            value in -1e12f64..1e12,
        ) {
            let escaped = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
            let body: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escaped(v))).collect();
            let s = parse(&format!("{name}{{{}}} {value}\n", body.join(",")));
            prop_assert!(s.errors.is_empty(), "{:?}", s.errors);
            let sample = &s.families[0].samples[0];
            prop_assert_eq!(&sample.name, &name);
            prop_assert_eq!(&sample.labels, &labels);
            prop_assert_eq!(sample.value, value);
        }
    }
}
