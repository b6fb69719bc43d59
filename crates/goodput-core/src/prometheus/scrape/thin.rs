//! A run's scrapes kept within a bound over time: past [`MAX_RUN_VALUES`]
//! values kept in all, every other scrape is dropped, and again each time
//! the run reaches it, so that a long run keeps every 2nd, 4th, 8th, …
//! scrape of the whole run, evenly ([`Thinner`]). A run had kept every
//! scrape: the embedded engine's 8 data-parallel ranks come to 932 values
//! each, 67 KB held and 126 KB written, and a bench scraping them every
//! 10 ms had held 2.3 GB after 5 minutes and written 3.8 GB.
//!
//! Counters and histogram buckets are cumulative, so a dropped scrape
//! loses time resolution, not totals, but where a series went down (a
//! restart) between the kept scrapes around it: what the dropped scrape
//! read of it is then carried into the next kept one
//! ([`Carried`](super::signals::Carried)), so that every window whose
//! bounds are kept scrapes reads the same totals, rates, resets and
//! quantiles as if every scrape had been kept (a rate over time is then
//! one per kept scrape). A counter's series missing from the kept scrape
//! before a dropped one and seen in it carries its first value there
//! (`first`), which a window reads as it would have read the dropped
//! scrape: from the series' last value before (a reset where lower; a
//! total since boot, a GPU's energy, from its baseline), or as new where
//! the window holds none; one missing from the next kept scrape is held at
//! its last value (`last`) without that scrape showing it, so a window
//! that ends there counts it gone and one that starts there reads it as
//! new when it comes back, as every scrape does; and a GPU first seen in
//! a dropped scrape is told late. Gauges are samples: a dropped scrape's
//! are gone, and a window's distribution of a gauge is that of the kept
//! ones, every 2ⁿth scrape.
//!
//! What reads otherwise than every scrape would, between kept scrapes: a
//! histogram's series missing from the kept scrape before a dropped one,
//! back in it and going down (a restart) before the next kept one, is read
//! by a window that holds an earlier scrape where it was as new at the
//! dropped scrape (as a window that starts at the kept scrape reads it):
//! its observations before the gap count once more where it went down
//! after the dropped scrape, and those before it less where it went down
//! before; one missing from the next kept scrape is kept there at its last
//! value, and a window that starts there reads it from that value when it
//! comes back (every scrape kept: as new, all of it). A kept scrape holds
//! what it carries of series within [`MAX_HELD_VALUES`] values; past it
//! (a server that names new series at every scrape) they read as
//! [`MAX_HELD_VALUES`] says. A histogram whose bucket bounds change at
//! every scrape carries what dropped scrapes observed with at most
//! [`MAX_HISTOGRAM_BOUNDS`] bounds ([`within_bounds`]): its counts are the
//! same, its quantiles coarser.

use super::fold::{group, MAX_SCRAPE_VALUES};
use super::histogram::{Histogram, MAX_HISTOGRAM_BOUNDS};
use super::signals::{series_id, Carried, CounterSignal, HistogramSignal, SeriesHistogram, SeriesValue, Signals};
use super::values::Labels;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// The most values a run keeps of its scrapes in all (a gauge, a counter's
/// series, a histogram's bucket count one each, and what a scrape carried
/// for dropped ones; a series' identity one more for each [`ID_BYTES`] it
/// holds): past it every other scrape is dropped. A value kept
/// costs about 72 bytes held and 135 written (the 8 ranks' 932 values a
/// scrape: 67 KB held, 126 KB of pretty JSON). At 4 million (some 290 MB
/// held at most, half that after each halving, and 540 MB written) one
/// rank of vLLM (100 to 200 values a scrape) keeps every scrape of 5 to
/// 11 hours at the default 1 s interval, and the 8 ranks 71 minutes (7 at
/// 100 ms); a run of 24 hours stays within the same bound, the 8 ranks'
/// scrapes kept 26 to 32 s apart (every 256th at 100 ms, every 32nd at 1 s).
pub const MAX_RUN_VALUES: usize = 4_000_000;

/// The most counter and histogram values a kept scrape holds with the
/// series it keeps or carries for scrapes dropped beside it: twice what a
/// scrape keeps of its own ([`MAX_SCRAPE_VALUES`]), or a quarter of a
/// smaller budget ([`Thinner::with_budget`]), so that the first and last
/// scrapes alone never pass it. Past it (a server that names new series
/// at every scrape), a dropped scrape's series missing from the next kept
/// one leave their increase in it, and one that comes back later counts
/// from its value before the dropped scrape; a counter's series missing
/// from the kept scrape before is read as new at the dropped scrape, also
/// by a window that holds its value before the gap.
const MAX_HELD_VALUES: usize = 2 * MAX_SCRAPE_VALUES;

/// The label a carried increase's identity carries, beside a draft
/// position's `position`.
const CARRIED_LABEL: &str = "goodput_carried";

/// How a result's warning of a run's thinned scrapes begins.
pub const THINNED_WARNING: &str = "server metrics: a long run keeps fewer of its scrapes";

/// Whether `w` is a [`Thinner::warning`]: a saved run's, carried when it
/// is analysed again, as its samples say it only in `thinned`.
pub fn is_thinned_warning(w: &str) -> bool {
    w.starts_with(THINNED_WARNING)
}

/// How a run kept its scrapes, where it kept fewer than it took.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Thinned {
    /// Every `every`th scrape taken is kept (the first, and the last two,
    /// too): they lie about `every × interval_s` apart.
    pub every: u64,
    /// When, on the run's clock, its scrapes first passed the values
    /// goodput keeps of a run's (4,000,000).
    pub since_s: f64,
}

/// The scrapes a halving goes through at each scrape taken, so that none
/// stalls the scraping (or the client beside it): a halving of 4,300
/// scrapes of an 8-rank engine at once had taken 0.2 s. A halving of
/// MAX_RUN_VALUES is then done within some 70 scrapes, the values kept
/// past the bound meanwhile a few scrapes' worth.
const HALVING_STEP: usize = 64;

/// Keeps a run's scrapes within [`MAX_RUN_VALUES`] values: each scrape
/// taken has its place (its ordinal); past the bound, only those whose
/// place is a multiple of 2ⁿ are kept, n one more each time the run
/// reaches it again, and the first and the last two whatever their place
/// (the last can be taken again, [`Thinner::popped`], and the one before
/// it is where a dropped one's increases go). A dropped scrape's
/// increases that the kept ones around it do not show are carried into
/// the next one ([module](self)). A halving goes [`HALVING_STEP`] scrapes
/// at a time, oldest first, at each scrape taken; the values kept pass the
/// bound by an eighth at most (past it the halving is done at once), and
/// [`Thinner::finish`] ends one still under way when the run ends.
#[derive(Debug, Clone)]
pub struct Thinner {
    budget: usize,
    /// [`MAX_HELD_VALUES`], or less for a small budget.
    held: usize,
    level: u32,
    /// Each kept point's place and values, beside the points.
    kept: Vec<Kept>,
    total: usize,
    taken: u64,
    since: Option<Duration>,
    /// A halving under way: the points before it are in step with the level.
    halving: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    ordinal: u64,
    values: usize,
}

impl Default for Thinner {
    fn default() -> Self {
        Thinner::with_budget(MAX_RUN_VALUES)
    }
}

impl Thinner {
    /// A thinner that keeps `budget` values (tests thin short runs).
    pub fn with_budget(budget: usize) -> Thinner {
        let held = MAX_HELD_VALUES.min(budget / 4);
        Thinner { budget, held, level: 0, kept: Vec::new(), total: 0, taken: 0, since: None, halving: None }
    }

    /// Takes `points`' last, just pushed, and drops what the bound asks
    /// of the others.
    pub fn pushed(&mut self, points: &mut Vec<(Duration, Signals)>) {
        debug_assert_eq!(self.kept.len() + 1, points.len(), "one point pushed");
        let Some((t, last)) = points.last() else { return };
        let (t, values) = (*t, values(last));
        self.kept.push(Kept { ordinal: self.taken, values });
        self.taken += 1;
        self.total += values;
        // The one before the last two is in step with the level, or
        // dropped (where a halving has not reached it yet too).
        let n = points.len();
        if n >= 4 && !self.on_stride(self.kept[n - 3].ordinal) {
            self.drop_at(points, n - 3);
        }
        loop {
            if self.halving.is_none() {
                if self.total <= self.budget || points.len() <= 3 || self.level >= 63 {
                    return;
                }
                self.level += 1;
                self.since.get_or_insert(t);
                self.halving = Some(1);
            }
            let at_once = self.total > self.budget + self.budget / 8;
            self.halve(points, if at_once { usize::MAX } else { HALVING_STEP });
            if !at_once {
                return;
            }
        }
    }

    /// Ends a halving under way: a run's scrapes all in step with the
    /// level, as its warning says.
    pub fn finish(&mut self, points: &mut Vec<(Duration, Signals)>) {
        while self.halving.is_some() {
            self.halve(points, usize::MAX);
        }
    }

    /// The last point was taken off (to be taken again).
    pub fn popped(&mut self) {
        if let Some(k) = self.kept.pop() {
            self.total -= k.values;
            self.taken -= 1;
        }
    }

    /// Every how many scrapes one is kept: 1 until the run first passed
    /// the bound.
    pub fn every(&self) -> u64 {
        1 << self.level
    }

    /// The scrapes taken (those popped not counted).
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// The values the kept scrapes hold.
    pub fn values(&self) -> usize {
        self.total
    }

    /// How the run kept its scrapes, where it kept fewer than it took.
    pub fn thinned(&self) -> Option<Thinned> {
        let since = self.since?;
        Some(Thinned { every: self.every(), since_s: since.as_secs_f64() })
    }

    /// The result's one warning of a run whose scrapes were thinned,
    /// taken `interval` apart.
    pub fn warning(&self, interval: Duration) -> Option<String> {
        let since = self.since?;
        let text = crate::util::duration_text;
        Some(format!(
            "{THINNED_WARNING}: its scrapes passed the {MAX_RUN_VALUES} values goodput keeps of a run's scrapes \
             {} into it, and so every {} scrape of the run is kept, about {} apart (--metrics-interval {}). \
             Counters and histograms lose no increase (a dropped scrape's restarts, and the values of series \
             missing from a kept scrape, are carried into the next kept one): every window's totals, rates, \
             resets and GPUs missing or late are read as before, its bounds widened to the kept scrapes around \
             them, and a rate over time is one per kept scrape, but for a histogram's series missing from a kept \
             scrape: back in a dropped one after it and restarting before the next kept one, it is read as new \
             there (its count before the gap counted once more, or less), and missing from the next kept one, a \
             window that starts there reads it from its last value when it comes back; a gauge's distribution \
             is that of the kept scrapes alone",
            text(since),
            ordinal(self.every()),
            text(interval.saturating_mul(u32::try_from(self.every()).unwrap_or(u32::MAX))),
            text(interval),
        ))
    }

    fn on_stride(&self, ordinal: u64) -> bool {
        ordinal.is_multiple_of(self.every())
    }

    /// Drops `points[i]` (neither the first nor one of the last two), carrying
    /// what it read into the next.
    fn drop_at(&mut self, points: &mut Vec<(Duration, Signals)>, i: usize) {
        let (_, dropped) = points.remove(i);
        let gone = self.kept.remove(i);
        let (before, after) = points.split_at_mut(i);
        merge(&before[i - 1].1, dropped, &mut after[0].1, self.held);
        self.total -= gone.values;
        self.retally(points, i - 1..=i);
        if let Some(at) = self.halving.as_mut().filter(|at| **at > i) {
            *at -= 1;
        }
    }

    /// Takes the halving under way through `most` more points (never the
    /// last two), each out of step with the level dropped into the next.
    fn halve(&mut self, points: &mut Vec<(Duration, Signals)>, most: usize) {
        let Some(at) = self.halving else { return };
        let end = at.saturating_add(most).min(points.len().saturating_sub(2));
        if end <= at {
            self.halving = None;
            return;
        }
        let segment: Vec<(Duration, Signals)> = points.drain(at..end).collect();
        let places: Vec<Kept> = self.kept.drain(at..end).collect();
        self.total -= places.iter().map(|k| k.values).sum::<usize>();
        let (mut kept, mut kept_places): (Vec<(Duration, Signals)>, Vec<Kept>) = (Vec::new(), Vec::new());
        let mut pending: Option<Signals> = None;
        for ((t, mut s), k) in segment.into_iter().zip(places) {
            if let Some(dropped) = pending.take() {
                let before = match kept.last() {
                    Some((_, before)) => before,
                    None => &points[at - 1].1,
                };
                merge(before, dropped, &mut s, self.held);
            }
            if self.on_stride(k.ordinal) {
                kept.push((t, s));
                kept_places.push(Kept { values: 0, ..k });
            } else {
                pending = Some(s);
            }
        }
        // The last one dropped goes into the first point past the segment.
        if let Some(dropped) = pending {
            let (head, tail) = points.split_at_mut(at);
            let before = match kept.last() {
                Some((_, before)) => before,
                None => &head[at - 1].1,
            };
            merge(before, dropped, &mut tail[0].1, self.held);
        }
        let n = kept.len();
        points.splice(at..at, kept);
        self.kept.splice(at..at, kept_places);
        self.retally(points, at - 1..=at + n);
        self.halving = (at + n + 2 < points.len()).then_some(at + n);
    }

    /// Counts the values of `points[range]` again after they changed.
    fn retally(&mut self, points: &[(Duration, Signals)], range: std::ops::RangeInclusive<usize>) {
        for j in range {
            let now = values(&points[j].1);
            let k = &mut self.kept[j];
            self.total = self.total - k.values + now;
            k.values = now;
        }
    }
}

/// `n` in words of order: 2nd, 4th, 32nd, 512th.
fn ordinal(n: u64) -> String {
    let suffix = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The values `s` holds, as [`MAX_RUN_VALUES`] counts them.
fn values(s: &Signals) -> usize {
    let carried = &s.carried;
    s.gauges.len()
        + held_values(s)
        + carried.counters.values().flatten().map(|v| counter_values(&v.series)).sum::<usize>()
        + carried.histograms.values().map(|h| h.buckets.len() + 1).sum::<usize>()
}

/// The series values a scrape carries for dropped ones (first and last).
fn carried_values(s: &Signals) -> usize {
    let carried = &s.carried;
    carried.first.values().chain(carried.last.values()).flatten().map(|v| counter_values(&v.series)).sum()
}

/// The counter and histogram values `s` holds of its own series.
fn held_values(s: &Signals) -> usize {
    s.counters.values().flatten().map(|v| counter_values(&v.series)).sum::<usize>()
        + s.histograms.values().flatten().map(histogram_values).sum::<usize>()
        + carried_values(s)
}

/// The bytes of a series' identity (its labels) counted as one value more:
/// an engine's are shorter, and count one value a series; a server's of
/// longer labels (a scrape may hold 64 MiB) count what they hold, where
/// each had counted one, so that a run of 64 KiB labels had held 256 GB
/// of them within the bound.
const ID_BYTES: usize = 256;

/// What a counter's series of identity `id` counts.
fn counter_values(id: &str) -> usize {
    1 + id.len() / ID_BYTES
}

/// What a histogram's series counts: its buckets, its count, and its
/// identity and labels.
fn histogram_values(h: &SeriesHistogram) -> usize {
    let labels: usize = h.histogram.labels.iter().map(|(k, v)| k.len() + v.len()).sum();
    h.histogram.buckets.len() + 1 + (h.series.len() + labels) / ID_BYTES
}

/// Whether a window reads `v` after `prev` as a reset: it went down (or
/// is no number).
fn went_down(prev: f64, v: f64) -> bool {
    v.partial_cmp(&prev).is_none_or(|o| o.is_lt())
}

/// A window's increase of a series from `prev` to `v`.
fn increase(prev: f64, v: f64) -> f64 {
    if went_down(prev, v) {
        v
    } else {
        v - prev
    }
}

/// What a window that held `before` and `after` read of a histogram's series
/// through the dropped scrape between them (`h1`), beyond what it reads
/// from `h0` to `h2` (`None` where the series is missing; a changed
/// bucket layout is read as a reset too): `None` for nothing. Where it is
/// missing from `before`, as a window that starts there reads it: new at
/// the dropped scrape.
fn lost_histogram(h0: Option<&Histogram>, h1: &Histogram, h2: Option<&Histogram>) -> Option<Histogram> {
    match (h0, h2) {
        (Some(h0), Some(h2)) => {
            let (r01, r12, r02) = (h1.went_down_since(h0), h2.went_down_since(h1), h2.went_down_since(h0));
            match (r02, r01, r12) {
                (true, _, true) => Some(h1.increase_since(h0)),
                (true, _, false) | (false, false, false) => None,
                (false, true, false) => Some(h0.clone()),
                (false, false, true) => Some(h1.clone()),
                (false, true, true) => Some(h0.merged(h1)),
            }
        }
        (None, Some(h2)) => h2.went_down_since(h1).then(|| h1.clone()),
        (Some(h0), None) => Some(h1.increase_since(h0)),
        (None, None) => Some(h1.clone()),
    }
}

/// A kept scrape's series of one signal, found by identity: where a
/// dropped scrape's `k`th series is the kept one's `k`th (the usual case:
/// an exposition lists its series in one order), at once; else by an
/// index built the first time one is not (a halving of a few thousand
/// scrapes of an 8-rank engine's 900 values had taken 0.4 s hashing them
/// all).
struct Lookup<'a, T> {
    series: &'a [T],
    id: fn(&T) -> &str,
    index: Option<HashMap<&'a str, usize>>,
}

impl<'a, T> Lookup<'a, T> {
    fn new(series: Option<&'a Vec<T>>, id: fn(&T) -> &str) -> Self {
        Lookup { series: series.map_or(&[][..], Vec::as_slice), id, index: None }
    }

    fn get(&mut self, k: usize, id: &str) -> Option<&'a T> {
        let (series, of) = (self.series, self.id);
        if let Some(s) = series.get(k).filter(|s| of(s) == id) {
            return Some(s);
        }
        let index = self.index.get_or_insert_with(|| series.iter().enumerate().map(|(i, s)| (of(s), i)).collect());
        index.get(id).map(|&i| &series[i])
    }
}

fn value_id(v: &SeriesValue) -> &str {
    &v.series
}

fn histogram_id(h: &SeriesHistogram) -> &str {
    &h.series
}

/// The identity of a counter's carried increase (of one draft position).
fn carried_id(signal: CounterSignal, group: &str) -> String {
    let mut labels = Labels::new();
    labels.insert(CARRIED_LABEL.to_string(), "dropped scrapes".to_string());
    if !group.is_empty() {
        labels.insert("position".to_string(), group.to_string());
    }
    series_id(signal.name(), &labels)
}

/// Adds `increase` to `after`'s carried increase of `signal` in `group`.
fn carry_counter(after: &mut Signals, signal: CounterSignal, group: &str, increase: f64) {
    let id = carried_id(signal, group);
    let carried = after.carried.counters.entry(signal).or_default();
    match carried.iter_mut().find(|v| v.series == id) {
        Some(v) => v.value += increase,
        None => carried.push(SeriesValue { series: id, value: increase }),
    }
}

fn carry_histogram(after: &mut Signals, signal: HistogramSignal, h: Histogram) {
    let carried = &mut after.carried.histograms;
    let sum = match carried.remove(&signal) {
        Some(c) => c.merged(&h),
        None => Histogram { labels: Labels::new(), ..h },
    };
    carried.insert(signal, within_bounds(sum));
}

/// `h` with at most [`MAX_HISTOGRAM_BOUNDS`] bounds: past them (dropped
/// scrapes of a server whose bucket bounds change at every scrape, each
/// carried with its own, their union grown with the run and past the
/// bound of what a run keeps), every other bound is dropped, the `+Inf`
/// one kept, until they fit. A cumulative histogram's other buckets are
/// the same without them: only the quantiles inside the merged buckets
/// are coarser.
fn within_bounds(mut h: Histogram) -> Histogram {
    while h.buckets.len() > MAX_HISTOGRAM_BOUNDS {
        let last = h.buckets.len() - 1;
        let mut k = 0;
        h.buckets.retain(|_| {
            k += 1;
            (last + 1 - k).is_multiple_of(2)
        });
    }
    h
}

/// What a window reads of a counter's series at a scrape, in order
/// ([`read_through`]).
#[derive(Debug, Clone, Copy)]
enum Op {
    /// A value read from the series' last one: an increase, a reset where
    /// lower, or new.
    Step(f64),
    /// A value the series is held at, its increase up to it carried.
    Hold(f64),
}

/// What a merge keeps of one series ([`read_through`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Read {
    /// Its first value, to be read as a sample (`Carried::first`).
    first: Option<f64>,
    /// The value it is held at (`Carried::last`).
    last: Option<f64>,
    increase: f64,
    resets: u32,
    /// Read a step from a value before: a step the window has, where its
    /// increase is none too.
    stepped: bool,
}

/// What the kept scrape after a dropped one keeps of a counter's series
/// that a window read through them (`ops`, the dropped scrape's and then
/// what the kept one carried) after its value `u0` in the kept scrape
/// before (`None`: missing there), up to its own value `v2` there (`None`:
/// missing): where it was missing before, the first value it took, read by
/// the window from its last value (a window that starts before reads a
/// step, one that starts at the kept scrape reads it as new), and, where
/// the window's last value of it before `v2` is none it would hold, the
/// value to hold it at; the increase and resets beyond those, the same for
/// every window. `room(had)` says whether one value more fits (`had`: it
/// replaces one); where none does, a series missing before is read as new
/// (a window that starts before reads it once more from its value there),
/// and one missing after is held at its value before.
fn read_through(
    u0: Option<f64>,
    ops: impl IntoIterator<Item = Op>,
    v2: Option<f64>,
    since_boot: bool,
    room: &mut dyn FnMut(bool) -> bool,
    had: (bool, bool),
) -> Read {
    // `state`: the series' value as every scrape reads it; `anchor`: as
    // the window will read it from what is kept.
    let (mut state, mut anchor) = (u0, u0);
    let mut read = Read::default();
    let mut resets: i64 = 0;
    for op in ops {
        match op {
            Op::Step(x) => {
                match state {
                    Some(prev) => {
                        read.increase += increase(prev, x);
                        resets += i64::from(went_down(prev, x));
                        read.stepped = true;
                    }
                    None if room(had.0) => {
                        read.first = Some(x);
                        anchor = Some(x);
                    }
                    None if since_boot => {}
                    None => read.increase += x,
                }
                state = Some(x);
            }
            Op::Hold(x) => {
                if room(had.1 || read.last.is_some()) {
                    read.last = Some(x);
                    anchor = Some(x);
                }
                state = Some(x);
            }
        }
    }
    match (state, v2) {
        (Some(st), Some(v2)) => {
            read.increase += increase(st, v2);
            resets += i64::from(went_down(st, v2));
            match anchor {
                Some(a) => {
                    read.increase -= increase(a, v2);
                    resets -= i64::from(went_down(a, v2));
                }
                None if since_boot => {}
                None => read.increase -= v2,
            }
        }
        (Some(_), None) if state != anchor && room(had.1 || read.last.is_some()) => read.last = state,
        _ => {}
    }
    // Never below nothing: only a series held short of room reads less.
    read.increase = read.increase.max(0.0);
    read.resets = u32::try_from(resets.max(0)).unwrap_or(u32::MAX);
    read
}

/// A signal's carried first or last values of its series, by identity.
#[derive(Debug, Default)]
struct Values {
    list: Vec<(String, Option<f64>)>,
    index: HashMap<String, usize>,
}

impl Values {
    fn of(values: Option<Vec<SeriesValue>>) -> Values {
        let mut out = Values::default();
        for v in values.into_iter().flatten() {
            out.set(&v.series, Some(v.value));
        }
        out
    }

    fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    fn ids(&self) -> impl Iterator<Item = &str> {
        self.list.iter().filter(|(_, v)| v.is_some()).map(|(id, _)| id.as_str())
    }

    fn get(&self, id: &str) -> Option<f64> {
        self.index.get(id).and_then(|&i| self.list[i].1)
    }

    fn has(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    fn set(&mut self, id: &str, value: Option<f64>) {
        match (self.index.get(id), value) {
            (Some(&i), _) => self.list[i].1 = value,
            (None, Some(_)) => {
                self.index.insert(id.to_string(), self.list.len());
                self.list.push((id.to_string(), value));
            }
            (None, None) => {}
        }
    }

    fn put(self, map: &mut BTreeMap<CounterSignal, Vec<SeriesValue>>, signal: CounterSignal) {
        let values: Vec<SeriesValue> =
            self.list.into_iter().filter_map(|(series, v)| Some(SeriesValue { series, value: v? })).collect();
        if !values.is_empty() {
            map.insert(signal, values);
        }
    }
}

/// Takes `dropped`, the scrape between `before` and `after`, out of the
/// run: what a window that holds both read of it and no longer reads is
/// carried into `after` (with what it carried itself): a counter's series
/// by [`read_through`], its first value where `before` lacks it and its
/// last where `after` does; a histogram's series missing from `after`
/// kept there at its value (while `after` holds at most `held` values,
/// [`MAX_HELD_VALUES`]); its sources are kept; its gauges are gone.
fn merge(before: &Signals, dropped: Signals, after: &mut Signals, held: usize) {
    let Signals { sources, counters, histograms, carried, .. } = dropped;
    let Carried {
        counters: carried_counters,
        resets: carried_resets,
        histograms: carried_histograms,
        mut first,
        mut last,
    } = carried;
    for s in sources {
        if !after.sources.contains(&s) {
            after.sources.push(s);
        }
    }
    for (signal, series) in carried_counters {
        for v in series {
            let group = super::signals::series_label(&v.series, "position").unwrap_or_default().to_string();
            carry_counter(after, signal, &group, v.value);
        }
    }
    for (signal, n) in carried_resets {
        let r = after.carried.resets.entry(signal).or_default();
        *r = r.saturating_add(n);
    }
    for (signal, h) in carried_histograms {
        carry_histogram(after, signal, h);
    }
    let mut room_after = held.saturating_sub(held_values(after));
    let mut signals: Vec<CounterSignal> = counters.keys().chain(first.keys()).chain(last.keys()).copied().collect();
    signals.sort();
    signals.dedup();
    for signal in signals {
        let since_boot = signal.since_boot();
        // The dropped scrape's series: its own values, then those it carried.
        let own = counters.get(&signal).map_or(&[][..], Vec::as_slice);
        let (d_first, d_last) = (Values::of(first.remove(&signal)), Values::of(last.remove(&signal)));
        let mut ids: Vec<&str> = own.iter().map(|v| v.series.as_str()).collect();
        if !d_first.is_empty() || !d_last.is_empty() {
            let mut seen: std::collections::HashSet<&str> = ids.iter().copied().collect();
            ids.extend(d_first.ids().chain(d_last.ids()).filter(|id| seen.insert(id)));
        }
        let (mut a_first, mut a_last) =
            (Values::of(after.carried.first.remove(&signal)), Values::of(after.carried.last.remove(&signal)));
        let mut lost: BTreeMap<String, f64> = BTreeMap::new();
        let mut resets: u64 = 0;
        {
            let mut at_before = Lookup::new(before.counters.get(&signal), value_id);
            let mut at_after = Lookup::new(after.counters.get(&signal), value_id);
            for (k, id) in ids.into_iter().enumerate() {
                let v1 = own.get(k).filter(|v| v.series == id).map(|v| v.value);
                let u0 = at_before.get(k, id).map(|v| v.value);
                let v2 = at_after.get(k, id).map(|v| v.value);
                // What a window reads of it between `before` and `after`, in order.
                let steps = [
                    d_first.get(id).map(Op::Step),
                    d_last.get(id).map(Op::Hold),
                    v1.map(Op::Step),
                    a_first.get(id).map(Op::Step),
                    a_last.get(id).map(Op::Hold),
                ];
                let cost = counter_values(id);
                let mut room = |had: bool| {
                    let fits = had || room_after >= cost;
                    if fits && !had {
                        room_after -= cost;
                    }
                    fits
                };
                let ops = steps.into_iter().flatten();
                let read = read_through(u0, ops, v2, since_boot, &mut room, (a_first.has(id), a_last.has(id)));
                a_first.set(id, read.first);
                a_last.set(id, read.last);
                resets = resets.saturating_add(u64::from(read.resets));
                // A step of none carried too where `after` has none of
                // the series: the window reads a step there.
                if read.increase != 0.0 || (read.stepped && v2.is_none()) {
                    *lost.entry(group(signal, id)).or_default() += read.increase;
                }
            }
        }
        a_first.put(&mut after.carried.first, signal);
        a_last.put(&mut after.carried.last, signal);
        for (g, increase) in lost {
            carry_counter(after, signal, &g, increase);
        }
        if resets > 0 {
            let r = after.carried.resets.entry(signal).or_default();
            *r = r.saturating_add(u32::try_from(resets).unwrap_or(u32::MAX));
        }
    }
    for (signal, series) in histograms {
        let mut to_after: Vec<SeriesHistogram> = Vec::new();
        let mut lost: Vec<Histogram> = Vec::new();
        {
            let mut at_before = Lookup::new(before.histograms.get(&signal), histogram_id);
            let mut at_after = Lookup::new(after.histograms.get(&signal), histogram_id);
            for (k, h) in series.into_iter().enumerate() {
                let h0 = at_before.get(k, &h.series).map(|h| &h.histogram);
                let values = histogram_values(&h);
                let kept = match at_after.get(k, &h.series) {
                    Some(h2) => lost_histogram(h0, &h.histogram, Some(&h2.histogram)),
                    None if room_after >= values => {
                        room_after -= values;
                        let lost = lost_histogram(h0, &h.histogram, Some(&h.histogram));
                        to_after.push(h);
                        lost
                    }
                    None => lost_histogram(h0, &h.histogram, None),
                };
                lost.extend(kept);
            }
        }
        if !to_after.is_empty() {
            after.histograms.entry(signal).or_default().extend(to_after);
        }
        if let Some(sum) = Histogram::sum_owned(lost) {
            carry_histogram(after, signal, sum);
        }
    }
}

#[cfg(test)]
mod tests;
