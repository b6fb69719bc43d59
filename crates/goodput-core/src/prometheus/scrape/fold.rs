//! What a run keeps of each scrape, bounded: a scrape's counters and
//! histograms are kept series by series, so that increases are taken per
//! series (each resets on its own) when a window is summarised again; past
//! [`MAX_SCRAPE_VALUES`] values in one scrape, the largest signals are kept
//! summed instead, one series each, their increases taken series by series
//! as the scrapes come ([`Folder`]). A run keeps every scrape: a server
//! that exposed 99,000 series of one counter had had each of them kept at
//! every scrape (a 10 s bench scraping every 100 ms grew to 790 MB and
//! wrote a 650 MB result).

use super::histogram::{Bucket, Histogram};
use super::signals::{series_id, series_label, CounterSignal, HistogramSignal, SeriesHistogram, SeriesValue, Signals};
use super::values::Labels;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The most values a run keeps of one scrape's counters and histograms,
/// over every endpoint: a counter's series count one each, a histogram's
/// series their buckets and one more. vLLM's endpoint holds a few hundred,
/// one of 64 data-parallel ranks about 8,000. Past it the largest signals
/// are [folded](Folder) until the rest fit.
pub const MAX_SCRAPE_VALUES: usize = 10_000;

/// The label a folded series' identity carries, beside the `position` of a
/// per-position counter: what [`is_folded_series`] looks for.
const FOLDED_LABEL: &str = "goodput_summed";

/// The most series of one folded signal whose last value is kept while
/// they are missing from a scrape (a series back after a gap is then
/// taken as new, counted from zero): bounds what a server that names new
/// series at every scrape leaves behind.
const MAX_REMEMBERED: usize = super::parse::MAX_METRIC_LINES;

/// A counter or a histogram signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SignalKey {
    Counter(CounterSignal),
    Histogram(HistogramSignal),
}

impl SignalKey {
    /// The name used in exported documents.
    pub fn name(self) -> &'static str {
        match self {
            SignalKey::Counter(c) => c.name(),
            SignalKey::Histogram(h) => h.name(),
        }
    }
}

/// A signal kept summed: what the result's warning says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folded {
    pub signal: SignalKey,
    /// The metrics its series were read from (`vllm:request_success_total`).
    pub metrics: String,
    /// The most series one scrape held of it, and the values they came to.
    pub series: usize,
    pub values: usize,
}

/// Whether `series` (an identity as [`SeriesValue::series`] holds it) is a
/// signal's series summed by a [`Folder`]: no one series of the server's.
pub fn is_folded_series(series: &str) -> bool {
    series.contains(&format!("{FOLDED_LABEL:?}: "))
}

/// How a result's warning of folded signals begins.
pub const SERIES_CAP_WARNING: &str = "server metrics: too many series to keep one by one";

/// Whether `w` is a [`Folder::warning`]: a saved run's, which its samples
/// do not say, carried when it is analysed again.
pub fn is_series_cap_warning(w: &str) -> bool {
    w.starts_with(SERIES_CAP_WARNING)
}

/// Keeps a run's scrapes within [`MAX_SCRAPE_VALUES`] each. Past it, the
/// signals with the most values are folded, the largest first, until the
/// rest fit: each is kept as one series (per draft position, for the
/// accepted tokens by position) whose value at a scrape is its total at the
/// first scrape folded plus every increase since, taken series by series
/// against the scrape before with the rules a window's summary applies (a
/// series that went down restarted and counts whole; one first seen after
/// the run's first scrape counts from zero, or from its first sample for a
/// total since boot; a missing one keeps its last value). A window's
/// increase of the folded series is then the sum of its series' increases:
/// counters, rates, histogram counts, sums and quantiles read as before.
/// What is lost is the series apart: their resets are not counted, nor the
/// GPUs by their energy series; and a series missing from a window's first
/// scrape counts from its last value when it comes back, where read apart
/// it counts whole, as new. A histogram's series are summed into the
/// bounds they held when it was first folded; a bound that comes later is
/// read as its next lower one (where every series shares its bounds, the
/// usual case, nothing moves).
///
/// A signal once folded stays folded for the run: its scrapes before are
/// kept series by series, and a window that spans the change reads the
/// folded series as new at its first scrape (counted from zero, so nothing
/// is lost, except for a total since boot, whose first interval then
/// counts nothing). The state kept to fold is that of the last scrape, so
/// the last scrape can be taken again ([`Folder::undo`]).
#[derive(Debug, Clone)]
pub struct Folder {
    budget: usize,
    now: State,
    /// The state before the last scrape was folded.
    before: Option<State>,
}

impl Default for Folder {
    fn default() -> Self {
        Folder::with_budget(MAX_SCRAPE_VALUES)
    }
}

#[derive(Debug, Clone, Default)]
struct State {
    counters: BTreeMap<CounterSignal, CounterFold>,
    histograms: BTreeMap<HistogramSignal, HistogramFold>,
    /// Every signal folded so far, with the most series one scrape held.
    notes: BTreeMap<SignalKey, Folded>,
}

#[derive(Debug, Clone, Default)]
struct CounterFold {
    /// Each series' last value.
    last: HashMap<String, f64>,
    /// The folded series' values, by group (the draft position, or "").
    totals: BTreeMap<String, f64>,
}

#[derive(Debug, Clone)]
struct HistogramFold {
    last: HashMap<String, Histogram>,
    total: Histogram,
}

impl Folder {
    /// A folder that keeps `budget` values of a scrape (tests fold small runs).
    pub fn with_budget(budget: usize) -> Folder {
        Folder { budget, now: State::default(), before: None }
    }

    /// Folds `cur`, the scrape taken after `prev` (the run's last kept
    /// scrape, as kept; `None` for the run's first), in place.
    pub fn fold(&mut self, prev: Option<&Signals>, cur: &mut Signals) {
        let before = std::mem::take(&mut self.now);
        let mut now = State { notes: before.notes.clone(), ..State::default() };
        for key in self.chosen(&before, cur) {
            match key {
                SignalKey::Counter(signal) => {
                    let prior = before.counters.get(&signal);
                    let Some(series) = cur.counters.remove(&signal) else {
                        // Absent from this scrape: its series keep their values.
                        if let Some(p) = prior {
                            now.counters.insert(signal, p.clone());
                        }
                        continue;
                    };
                    note(&mut now.notes, key, series.iter().map(|s| (s.series.as_str(), 1)));
                    let prev = prev.and_then(|p| p.counters.get(&signal));
                    let (fold, kept) = fold_counter(signal, prior, prev, series);
                    cur.counters.insert(signal, kept);
                    now.counters.insert(signal, fold);
                }
                SignalKey::Histogram(signal) => {
                    let prior = before.histograms.get(&signal);
                    let Some(series) = cur.histograms.remove(&signal) else {
                        if let Some(p) = prior {
                            now.histograms.insert(signal, p.clone());
                        }
                        continue;
                    };
                    note(&mut now.notes, key, series.iter().map(|s| (s.series.as_str(), values(s))));
                    let baseline = prev.is_none();
                    let prev = prev.and_then(|p| p.histograms.get(&signal));
                    let (fold, kept) = fold_histogram(signal, prior, prev, baseline, series);
                    cur.histograms.insert(signal, vec![kept]);
                    now.histograms.insert(signal, fold);
                }
            }
        }
        self.before = Some(before);
        self.now = now;
    }

    /// Forgets the last scrape folded, so that another can take its place.
    pub fn undo(&mut self) {
        if let Some(before) = self.before.take() {
            self.now = before;
        }
    }

    /// The signals folded so far, in [`SignalKey`] order.
    pub fn folded(&self) -> impl Iterator<Item = &Folded> {
        self.now.notes.values()
    }

    /// The result's one warning of the signals folded, if any.
    pub fn warning(&self) -> Option<String> {
        warning(self.folded())
    }

    /// The signals to fold in `cur`: those folded before, and the largest
    /// of the others until the rest fit in the budget.
    fn chosen(&self, before: &State, cur: &Signals) -> BTreeSet<SignalKey> {
        let mut keys: BTreeSet<SignalKey> = before.counters.keys().map(|&c| SignalKey::Counter(c)).collect();
        keys.extend(before.histograms.keys().map(|&h| SignalKey::Histogram(h)));
        let counters = cur.counters.iter().map(|(&c, s)| (s.len(), SignalKey::Counter(c)));
        let histograms =
            cur.histograms.iter().map(|(&h, s)| (s.iter().map(values).sum::<usize>(), SignalKey::Histogram(h)));
        let mut sizes: Vec<(usize, SignalKey)> =
            counters.chain(histograms).filter(|(_, k)| !keys.contains(k)).collect();
        let mut total: usize = sizes.iter().map(|s| s.0).sum();
        sizes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (n, key) in sizes {
            if total <= self.budget {
                break;
            }
            keys.insert(key);
            total -= n;
        }
        keys
    }
}

/// The values one histogram series counts for: its buckets, and its count.
fn values(s: &SeriesHistogram) -> usize {
    s.histogram.buckets.len() + 1
}

/// Notes a scrape of a folded signal: its series and what they came to,
/// and the metrics they were read from (their identities' names).
fn note<'a>(notes: &mut BTreeMap<SignalKey, Folded>, key: SignalKey, series: impl Iterator<Item = (&'a str, usize)>) {
    let (mut n, mut total) = (0, 0);
    let mut metrics: BTreeSet<&str> = BTreeSet::new();
    for (id, v) in series {
        n += 1;
        total += v;
        if !is_folded_series(id) {
            metrics.insert(id.split('{').next().unwrap_or(id));
        }
    }
    let note = notes.entry(key).or_insert_with(|| Folded { signal: key, metrics: String::new(), series: 0, values: 0 });
    if n >= note.series {
        note.series = n;
        note.values = total;
        if !metrics.is_empty() {
            note.metrics = metrics.into_iter().collect::<Vec<_>>().join(", ");
        }
    }
}

/// The identity of a folded signal's series (of one draft position).
fn folded_id(signal: SignalKey, group: &str) -> String {
    let mut labels = Labels::new();
    labels.insert(FOLDED_LABEL.to_string(), "all series".to_string());
    if !group.is_empty() {
        labels.insert("position".to_string(), group.to_string());
    }
    series_id(signal.name(), &labels)
}

/// The group a counter's series is summed in: its draft position for the
/// accepted tokens by position (the positions a window reads: 0 to 255),
/// else one for all.
pub(super) fn group(signal: CounterSignal, series: &str) -> String {
    if signal != CounterSignal::SpecAcceptedByPosition {
        return String::new();
    }
    match series_label(series, "position").and_then(|p| p.parse::<u8>().ok().filter(|k| k.to_string() == p)) {
        Some(k) => k.to_string(),
        None => String::new(),
    }
}

/// One scrape of a folded counter: the fold's state after it, and the
/// series kept of it.
fn fold_counter(
    signal: CounterSignal,
    prior: Option<&CounterFold>,
    prev: Option<&Vec<SeriesValue>>,
    series: Vec<SeriesValue>,
) -> (CounterFold, Vec<SeriesValue>) {
    // The run's first scrape is its baseline: the totals then are the series' own.
    let baseline = prior.is_none() && prev.is_none();
    // Folded from this scrape on: the last values are the scrape before's.
    let prev: HashMap<&str, f64> = match prior {
        Some(_) => HashMap::new(),
        None => prev.into_iter().flatten().map(|v| (v.series.as_str(), v.value)).collect(),
    };
    let last_of = |id: &str| match prior {
        Some(p) => p.last.get(id).copied(),
        None => prev.get(id).copied(),
    };
    let mut totals = prior.map(|p| p.totals.clone()).unwrap_or_default();
    let mut last = HashMap::with_capacity(series.len());
    for v in series {
        let increase = match last_of(&v.series) {
            _ if baseline => v.value,
            Some(p) if v.value >= p => v.value - p,
            Some(_) => v.value,
            None if signal.since_boot() => 0.0,
            None => v.value,
        };
        *totals.entry(group(signal, &v.series)).or_default() += increase;
        last.insert(v.series, v.value);
    }
    if let Some(p) = prior.filter(|p| p.last.len() + last.len() <= MAX_REMEMBERED) {
        for (id, v) in &p.last {
            if !last.contains_key(id) {
                last.insert(id.clone(), *v);
            }
        }
    }
    let kept = totals
        .iter()
        .map(|(g, &value)| SeriesValue { series: folded_id(SignalKey::Counter(signal), g), value })
        .collect();
    (CounterFold { last, totals }, kept)
}

/// One scrape of a folded histogram: the fold's state after it, and the
/// series kept of it.
fn fold_histogram(
    signal: HistogramSignal,
    prior: Option<&HistogramFold>,
    prev: Option<&Vec<SeriesHistogram>>,
    first_scrape: bool,
    series: Vec<SeriesHistogram>,
) -> (HistogramFold, SeriesHistogram) {
    let prev: HashMap<&str, &Histogram> = match prior {
        Some(_) => HashMap::new(),
        None => prev.into_iter().flatten().map(|s| (s.series.as_str(), &s.histogram)).collect(),
    };
    let last_of = |id: &str| match prior {
        Some(p) => p.last.get(id),
        None => prev.get(id).copied(),
    };
    // The run's first scrape is its baseline: the total then is the series' own.
    let baseline = prior.is_none() && first_scrape;
    let increases: Vec<Histogram> = series
        .iter()
        .map(|s| match last_of(&s.series) {
            Some(p) if !baseline => s.histogram.increase_since(p),
            _ => s.histogram.clone(),
        })
        .collect();
    let mut total = match prior {
        Some(p) => p.total.clone(),
        None => {
            let mut bounds: Vec<f64> = series.iter().flat_map(|s| s.histogram.buckets.iter().map(|b| b.le)).collect();
            bounds.sort_unstable_by(f64::total_cmp);
            bounds.dedup_by(|a, b| a.total_cmp(b).is_eq());
            let mut labels = Labels::new();
            labels.insert(FOLDED_LABEL.to_string(), "all series".to_string());
            Histogram {
                labels,
                buckets: bounds.into_iter().map(|le| Bucket { le, count: 0.0 }).collect(),
                count: 0.0,
                sum: Some(0.0),
            }
        }
    };
    if let Some(increase) = Histogram::sum_owned(increases) {
        add_into(&mut total, &increase);
    }
    let mut last: HashMap<String, Histogram> = HashMap::with_capacity(series.len());
    for s in series {
        last.insert(s.series, s.histogram);
    }
    if let Some(p) = prior.filter(|p| p.last.len() + last.len() <= MAX_REMEMBERED) {
        for (id, h) in &p.last {
            if !last.contains_key(id) {
                last.insert(id.clone(), h.clone());
            }
        }
    }
    let kept = SeriesHistogram { series: folded_id(SignalKey::Histogram(signal), ""), histogram: total.clone() };
    (HistogramFold { last, total }, kept)
}

/// Adds `h` into `total`, bound by bound of `total`'s: each takes `h`'s
/// count at its greatest bound at or below it, as
/// [`Histogram::merged`] reads a bound one series lacks. Both sorted by
/// bound.
fn add_into(total: &mut Histogram, h: &Histogram) {
    let (mut j, mut below) = (0, 0.0);
    for b in &mut total.buckets {
        while let Some(x) = h.buckets.get(j).filter(|x| x.le.total_cmp(&b.le).is_le()) {
            below = x.count;
            j += 1;
        }
        b.count += below;
    }
    total.count += h.count;
    total.sum = total.sum.zip(h.sum).map(|(a, b)| a + b);
}

/// The warning of `folded` signals: which, how many series, why, and what
/// to do.
pub fn warning<'a>(folded: impl IntoIterator<Item = &'a Folded>) -> Option<String> {
    let said: Vec<String> = folded
        .into_iter()
        .map(|f| {
            let from = if f.metrics.is_empty() { String::new() } else { format!(" ({})", f.metrics) };
            match f.signal {
                SignalKey::Counter(_) => format!("{}{from} had {} series", f.signal.name(), f.series),
                SignalKey::Histogram(_) => {
                    format!("{}{from} had {} series of {} values", f.signal.name(), f.series, f.values)
                }
            }
        })
        .collect();
    if said.is_empty() {
        return None;
    }
    Some(format!(
        "{SERIES_CAP_WARNING}: {} in one scrape. goodput keeps {MAX_SCRAPE_VALUES} values of a scrape's counters \
         and histograms (a counter's series, a histogram's buckets; an engine's come to a few hundred), and keeps \
         the largest past them summed into one series each, their increases taken series by series as they were \
         scraped: their totals, rates and quantiles are read as before, but not their series apart (their resets \
         are not counted, nor GPUs by their energy series). If the endpoint gathers many servers' metrics, give \
         each server's own (--metrics-url)",
        said.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::scrape::parse::parse;
    use crate::prometheus::scrape::window::{summarize_points, WindowSummary};
    use std::time::Duration;

    fn signals(text: &str) -> Signals {
        let scrape = parse(text);
        assert!(scrape.errors.is_empty(), "{:?}", scrape.errors);
        Signals::mapped(&scrape)
    }

    /// `run` kept as a run keeps it, through a folder of `budget` values.
    fn folded(run: &[Signals], budget: usize) -> (Vec<Signals>, Folder) {
        let mut folder = Folder::with_budget(budget);
        let mut kept: Vec<Signals> = Vec::new();
        for s in run {
            let mut s = s.clone();
            folder.fold(kept.last(), &mut s);
            kept.push(s);
        }
        (kept, folder)
    }

    fn summary(run: &[Signals], from: usize, to: usize) -> WindowSummary {
        let points = run.iter().enumerate().map(|(i, s)| (Duration::from_secs(i as u64), s));
        summarize_points(points, Duration::from_secs(from as u64), Duration::from_secs(to as u64))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// The figures a window reads of its counters and histograms, folded
    /// or not: the same, but for resets.
    #[track_caller]
    fn same_figures(whole: &WindowSummary, kept: &WindowSummary) {
        assert_eq!(whole.counters.keys().collect::<Vec<_>>(), kept.counters.keys().collect::<Vec<_>>());
        for (c, w) in &whole.counters {
            let k = &kept.counters[c];
            assert!(close(w.delta, k.delta), "{}: {} vs {}", c.name(), w.delta, k.delta);
        }
        for (c, rates) in &whole.series.rates_per_s {
            let kept = &kept.series.rates_per_s[c];
            let same = rates.iter().zip(kept).all(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => close(*a, *b),
                (a, b) => a == b,
            });
            assert!(same && rates.len() == kept.len(), "{}: {rates:?} vs {kept:?}", c.name());
        }
        assert_eq!(whole.histograms.keys().collect::<Vec<_>>(), kept.histograms.keys().collect::<Vec<_>>());
        for (h, w) in &whole.histograms {
            let k = &kept.histograms[h];
            assert_eq!((w.count, w.p50, w.p90, w.p99), (k.count, k.p50, k.p90, k.p99), "{}", h.name());
            assert!(w.sum.zip(k.sum).is_none_or(|(a, b)| close(a, b)) && w.sum.is_some() == k.sum.is_some());
        }
        assert_eq!(whole.prefix_cache_hit_rate, kept.prefix_cache_hit_rate);
        assert_eq!(
            whole.spec_decode.as_ref().map(|s| &s.acceptance_by_position),
            kept.spec_decode.as_ref().map(|s| &s.acceptance_by_position)
        );
    }

    /// Scrape `i` of a run whose counters and histograms have `pods`
    /// series each, some restarting, appearing late or missing a scrape.
    fn scrape(i: u64, pods: u64) -> String {
        let mut t = String::from("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n");
        t += "# TYPE vllm:generation_tokens_total counter\n";
        for pod in 0..pods {
            // pod 1 restarts at scrape 3; pod 2 appears at scrape 2; pod 3 misses scrape 4
            let v = match pod {
                1 if i >= 3 => (i - 3) * 7 + 2,
                2 if i < 2 => continue,
                3 if i == 4 => continue,
                _ => i * (pod + 1) * 10 + pod,
            };
            t += &format!("vllm:generation_tokens_total{{pod=\"{pod}\"}} {v}\n");
        }
        t += "# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total 0\n";
        t += &format!("vllm:spec_decode_num_drafts_total{{pod=\"x\"}} {}\n", i * 100);
        t += "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n";
        for pod in 0..pods {
            for pos in 0..3 {
                let v = i * (3 - pos) * 10 + pod;
                t += &format!(
                    "vllm:spec_decode_num_accepted_tokens_per_pos_total{{pod=\"{pod}\",position=\"{pos}\"}} {v}\n"
                );
            }
        }
        t += "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n";
        for gpu in 0..pods {
            if gpu == 2 && i < 3 {
                continue;
            }
            t += &format!(
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\"}} {}\n",
                5e9 as u64 + i * 300_000 * (gpu + 1)
            );
        }
        t += "# TYPE vllm:time_to_first_token_seconds histogram\n";
        for pod in 0..pods {
            if pod == 2 && i < 2 {
                continue;
            }
            // pod 1 restarts at scrape 3
            let n = if pod == 1 && i >= 3 { i - 3 } else { i * (pod + 1) };
            for (j, le) in ["0.1", "0.5", "1", "+Inf"].iter().enumerate() {
                let c = n * (j as u64 + 1);
                t += &format!("vllm:time_to_first_token_seconds_bucket{{pod=\"{pod}\",le=\"{le}\"}} {c}\n");
            }
            t += &format!("vllm:time_to_first_token_seconds_sum{{pod=\"{pod}\"}} {}\n", n as f64 * 0.37);
            t += &format!("vllm:time_to_first_token_seconds_count{{pod=\"{pod}\"}} {}\n", n * 4);
        }
        t
    }

    /// Folded from the first scrape, every window of the run reads the
    /// same counters, rates and quantiles as the series kept apart, but
    /// for a series missing from the window's first scrape.
    #[test]
    fn folding_changes_no_window_s_figures() {
        let run: Vec<Signals> = (0..8).map(|i| signals(&scrape(i, 6))).collect();
        let (kept, folder) = folded(&run, 5);
        // Every counter and histogram folded: one series each, and one a position.
        let last = kept.last().unwrap();
        assert_eq!(last.counters[&CounterSignal::GenerationTokens].len(), 1);
        assert_eq!(last.counters[&CounterSignal::SpecAcceptedByPosition].len(), 3);
        assert_eq!(last.histograms[&HistogramSignal::Ttft].len(), 1);
        assert_eq!(last.gauges, run.last().unwrap().gauges);
        let names: Vec<&str> = folder.folded().map(|f| f.signal.name()).collect();
        assert_eq!(
            names,
            ["generation_tokens", "gpu_energy_joules", "spec_accepted_tokens_by_position", "ttft_seconds"],
            "the drafts' 2 series fit beside them"
        );
        let tokens = |w: &WindowSummary| w.counters.get(&CounterSignal::GenerationTokens).map_or(0.0, |c| c.delta);
        let without_tokens = |mut w: WindowSummary| {
            w.counters.remove(&CounterSignal::GenerationTokens);
            w.series.rates_per_s.remove(&CounterSignal::GenerationTokens);
            w
        };
        for from in 0..8 {
            for to in from..8 {
                let (whole, kept) = (summary(&run, from, to), summary(&kept, from, to));
                if from == 4 && to > 4 {
                    // Pod 3 is missing from the window's first scrape: read
                    // apart, it is new when it comes back and counts whole;
                    // folded, it counts from its value before (123).
                    assert_eq!(tokens(&whole) - tokens(&kept), 123.0, "{from}..{to}");
                    same_figures(&without_tokens(whole), &without_tokens(kept));
                } else {
                    same_figures(&whole, &kept);
                }
            }
        }
        let w = summary(&kept, 0, 7);
        assert_eq!(w.spec_decode.unwrap().acceptance_by_position.len(), 3);
    }

    /// Folded from a scrape in the middle of the run (the series grew past
    /// the budget), the windows that span the change read the same too.
    #[test]
    fn folding_from_the_middle_of_a_run_changes_no_figure() {
        let run: Vec<Signals> = (0..8).map(|i| signals(&scrape(i, if i < 4 { 1 } else { 6 }))).collect();
        let (kept, _) = folded(&run, 12);
        let folded_in = |s: &Signals| {
            let counters = s.counters.iter().filter(|(_, v)| v.iter().any(|v| is_folded_series(&v.series)));
            let histograms = s.histograms.iter().filter(|(_, v)| v.iter().any(|v| is_folded_series(&v.series)));
            counters.map(|(c, _)| c.name()).chain(histograms.map(|(h, _)| h.name())).collect::<Vec<_>>()
        };
        assert!(folded_in(&kept[3]).is_empty(), "{:?}", folded_in(&kept[3]));
        // 61 values: the TTFT's 30, the positions' 18 and the GPUs' 6 folded, 7 left.
        let want = ["gpu_energy_joules", "spec_accepted_tokens_by_position", "ttft_seconds"];
        assert_eq!(folded_in(&kept[4]), want);
        assert_eq!(folded_in(&kept[7]), want);
        let energy = |w: &WindowSummary| w.counters.get(&CounterSignal::GpuEnergy).map(|c| c.delta);
        let without_energy = |mut w: WindowSummary| {
            w.counters.remove(&CounterSignal::GpuEnergy);
            w.series.rates_per_s.remove(&CounterSignal::GpuEnergy);
            w
        };
        for from in 0..8 {
            for to in from..8 {
                let (whole, folded) = (summary(&run, from, to), summary(&kept, from, to));
                if from < 4 && to >= 4 {
                    // A total since boot loses the interval it was folded in.
                    assert!(energy(&folded) < energy(&whole), "{from}..{to}");
                    same_figures(&without_energy(whole), &without_energy(folded));
                } else {
                    same_figures(&whole, &folded);
                }
            }
        }
    }

    /// The last scrape taken again (a run's settling final scrape): folded
    /// from the state before it, as if the first had not been.
    #[test]
    fn the_last_scrape_can_be_taken_again() {
        let run: Vec<Signals> = (0..6).map(|i| signals(&scrape(i, 6))).collect();
        let (straight, _) = folded(&run, 10);
        let (mut kept, mut folder) = folded(&run[..5], 10);
        let mut wrong = signals(&scrape(9, 6));
        folder.fold(kept.last(), &mut wrong);
        kept.push(wrong);
        for _ in 0..2 {
            kept.pop();
            folder.undo();
            let mut again = run[5].clone();
            folder.fold(kept.last(), &mut again);
            kept.push(again);
        }
        assert_eq!(kept, straight);
    }

    /// Within the budget nothing is folded and nothing said.
    #[test]
    fn a_run_within_the_budget_is_kept_as_scraped() {
        let run: Vec<Signals> = (0..4).map(|i| signals(&scrape(i, 6))).collect();
        let (kept, folder) = folded(&run, MAX_SCRAPE_VALUES);
        assert_eq!(kept, run);
        assert_eq!(folder.warning(), None);
    }

    #[test]
    fn the_warning_names_each_signal_its_series_and_what_to_do() {
        let run: Vec<Signals> = (0..3).map(|i| signals(&scrape(i, 6))).collect();
        let (kept, folder) = folded(&run, 10);
        let said = folder.warning().unwrap();
        assert!(is_series_cap_warning(&said), "{said}");
        for part in [
            "generation_tokens (vllm:generation_tokens_total) had 6 series",
            "ttft_seconds (vllm:time_to_first_token_seconds) had 6 series of 30 values",
            "--metrics-url",
        ] {
            assert!(said.contains(part), "{part:?} in {said}");
        }
        assert!(kept[2].counters[&CounterSignal::GenerationTokens].iter().all(|s| is_folded_series(&s.series)));
        assert!(!is_folded_series("vllm:generation_tokens_total{\"pod\": \"1\"}"));
    }
}
