use super::*;
use crate::prometheus::scrape::fold::Folder;
use crate::prometheus::scrape::parse::parse;
use crate::prometheus::scrape::signals::GaugeSignal;
use crate::prometheus::scrape::window::{series_coverage, summarize_points, SeriesCoverage, WindowSummary};

fn signals(text: &str) -> Signals {
    let scrape = parse(text);
    assert!(scrape.errors.is_empty(), "{:?}", scrape.errors);
    Signals::mapped(&scrape)
}

fn secs(i: u64) -> Duration {
    Duration::from_secs(i)
}

/// `run` (scrape `i` at `i` s) kept as a run keeps it: folded past
/// `per_scrape` values a scrape, thinned past `budget` in all.
fn kept(run: &[Signals], per_scrape: usize, budget: usize) -> (Vec<(Duration, Signals)>, Thinner) {
    let (mut folder, mut thinner) = (Folder::with_budget(per_scrape), Thinner::with_budget(budget));
    let mut points: Vec<(Duration, Signals)> = Vec::new();
    for (i, s) in run.iter().enumerate() {
        let mut s = s.clone();
        folder.fold(points.last().map(|p| &p.1), &mut s);
        points.push((secs(i as u64), s));
        thinner.pushed(&mut points);
    }
    thinner.finish(&mut points);
    (points, thinner)
}

fn summary(points: &[(Duration, Signals)], from: Duration, to: Duration) -> WindowSummary {
    summarize_points(points.iter().map(|(t, s)| (*t, s)), from, to)
}

fn whole(run: &[Signals]) -> Vec<(Duration, Signals)> {
    run.iter().enumerate().map(|(i, s)| (secs(i as u64), s.clone())).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The figures a window of kept scrapes reads of its counters and
/// histograms: those of every scrape between its bounds.
#[track_caller]
fn same_figures(all: &WindowSummary, kept: &WindowSummary) {
    let what = format!("{:.0}..{:.0} s", all.window.start_s, all.window.end_s);
    assert_eq!(all.counters.keys().collect::<Vec<_>>(), kept.counters.keys().collect::<Vec<_>>(), "{what}");
    for (c, a) in &all.counters {
        let k = &kept.counters[c];
        assert!(close(a.delta, k.delta), "{what} {}: {} vs {}", c.name(), a.delta, k.delta);
        assert_eq!(a.resets, k.resets, "{what} {}", c.name());
        assert!(a.rate_per_s.zip(k.rate_per_s).is_none_or(|(a, b)| close(a, b)), "{what} {}", c.name());
    }
    assert_eq!(all.histograms.keys().collect::<Vec<_>>(), kept.histograms.keys().collect::<Vec<_>>(), "{what}");
    for (h, a) in &all.histograms {
        let k = &kept.histograms[h];
        assert_eq!((a.count, a.p50, a.p90, a.p99), (k.count, k.p50, k.p90, k.p99), "{what} {}", h.name());
        assert!(a.sum.zip(k.sum).is_none_or(|(a, b)| close(a, b)) && a.sum.is_some() == k.sum.is_some(), "{what}");
    }
    let ratio =
        |a: Option<f64>, b: Option<f64>| a.zip(b).is_none_or(|(a, b)| close(a, b)) && a.is_some() == b.is_some();
    assert!(ratio(all.prefix_cache_hit_rate, kept.prefix_cache_hit_rate), "{what}");
    assert!(ratio(all.energy_per_output_token_joules, kept.energy_per_output_token_joules), "{what}");
    let by_position = |w: &WindowSummary| w.spec_decode.as_ref().map(|s| s.acceptance_by_position.clone());
    let (a, k) = (by_position(all).unwrap_or_default(), by_position(kept).unwrap_or_default());
    assert!(a.len() == k.len() && a.iter().zip(&k).all(|(a, b)| close(*a, *b)), "{what}: {a:?} vs {k:?}");
}

/// Scrape `i` of a run of several series of each kind: series that
/// restart (pod 1 at 21, pod 2 at 38 and again at 39, the succeeded
/// requests at 45), one missing from scrapes 30 and 31, one first seen at
/// 13, a GPU first seen at 11 (a total since boot), a histogram series
/// that restarts with the pod, one first seen at 5 and missing at 30.
fn scrape(i: u64) -> String {
    let mut t = format!("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running {}\n", i % 5);
    t += "# TYPE vllm:generation_tokens_total counter\n";
    for pod in 0..5u64 {
        let v = match pod {
            1 if i >= 21 => (i - 21) * 2 + 1,
            2 if i == 38 => 4,
            2 if i >= 39 => i - 39,
            3 if i == 30 || i == 31 => continue,
            4 if i < 13 => continue,
            _ => i * (pod + 1) * 10 + pod,
        };
        t += &format!("vllm:generation_tokens_total{{pod=\"{pod}\"}} {v}\n");
    }
    let succeeded = if i >= 45 { i - 45 } else { 1000 + i * 3 };
    t += &format!("# TYPE vllm:request_success_total counter\nvllm:request_success_total {succeeded}\n");
    t += &format!(
        "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total {}\n\
         # TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total {}\n",
        i * 100,
        i * i
    );
    let drafts = |pod: u64| if pod == 1 && i >= 21 { i - 21 } else { i + 7 };
    t += "# TYPE vllm:spec_decode_num_drafts_total counter\n";
    for pod in 0..2u64 {
        t += &format!("vllm:spec_decode_num_drafts_total{{pod=\"{pod}\"}} {}\n", drafts(pod) * 10);
    }
    t += "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n";
    for pod in 0..2u64 {
        let n = drafts(pod);
        for pos in 0..3u64 {
            t += &format!(
                "vllm:spec_decode_num_accepted_tokens_per_pos_total{{pod=\"{pod}\",position=\"{pos}\"}} {}\n",
                n * (3 - pos) * 2
            );
        }
    }
    t += "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n";
    for gpu in 0..2u64 {
        if gpu == 1 && i < 11 {
            continue;
        }
        t += &format!(
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\"}} {}\n",
            5e9 as u64 + i * 300_000 * (gpu + 1)
        );
    }
    t += "# TYPE vllm:time_to_first_token_seconds histogram\n";
    for pod in 0..3u64 {
        if pod == 2 && (i < 5 || i == 30) {
            continue;
        }
        let n = if pod == 1 && i >= 21 { i - 21 } else { i * (pod + 1) };
        for (j, le) in ["0.1", "0.5", "1", "+Inf"].iter().enumerate() {
            let c = n * (j as u64 + 1) + if j > 0 { n % 3 } else { 0 };
            t += &format!("vllm:time_to_first_token_seconds_bucket{{pod=\"{pod}\",le=\"{le}\"}} {c}\n");
        }
        t += &format!("vllm:time_to_first_token_seconds_sum{{pod=\"{pod}\"}} {}\n", n as f64 * 0.37);
        t += &format!("vllm:time_to_first_token_seconds_count{{pod=\"{pod}\"}} {}\n", n * 4 + n % 3);
    }
    t
}

/// Thinned to every 8th scrape, every window between kept scrapes reads
/// the totals, resets, rates and quantiles of every scrape between them,
/// the restarts between kept scrapes included; a rate over time is one per
/// kept scrape, the rate over the scrapes since the one before.
#[test]
fn thinning_changes_no_window_s_figures() {
    let run: Vec<Signals> = (0..64).map(|i| signals(&scrape(i))).collect();
    let all = whole(&run);
    let total: usize = run.iter().map(values).sum();
    let (points, thinner) = kept(&run, MAX_SCRAPE_VALUES, total / 6);
    assert_eq!(thinner.every(), 8, "{} values of {total}", thinner.values());
    let at: Vec<u64> = points.iter().map(|(t, _)| t.as_secs()).collect();
    assert_eq!(at, [0, 8, 16, 24, 32, 40, 48, 56, 62, 63]);
    assert!(points.iter().any(|(_, s)| !s.carried.is_empty()), "the restarts were carried");
    assert!(thinner.values() <= total / 6);
    for (a, (from, _)) in points.iter().enumerate() {
        for (to, _) in &points[a..] {
            let (all, kept) = (summary(&all, *from, *to), summary(&points, *from, *to));
            same_figures(&all, &kept);
            assert_eq!(kept.scrapes, points.iter().filter(|(t, _)| (from..=to).contains(&t)).count());
        }
    }
    // A rate over time: one per kept scrape, over the scrapes since the one before.
    let w = summary(&points, secs(0), secs(63));
    assert_eq!(w.series.t_s.len(), points.len());
    for (c, rates) in &w.series.rates_per_s {
        for (j, rate) in rates.iter().enumerate().skip(1) {
            let (from, to) = (points[j - 1].0, points[j].0);
            let step = summary(&all, from, to).counters.get(c).and_then(|s| s.rate_per_s);
            assert!(step.zip(*rate).is_none_or(|(a, b)| close(a, b)), "{} at {to:?}: {step:?} vs {rate:?}", c.name());
        }
    }
    // A gauge's samples are the kept scrapes' own.
    for (t, s) in &points {
        assert_eq!(s.gauges, run[t.as_secs() as usize].gauges);
        assert_eq!(s.gauges.get(&GaugeSignal::RunningRequests), Some(&((t.as_secs() % 5) as f64)));
    }
}

/// A series that restarts between two kept scrapes: the kept values alone
/// (100, then 150) read 50 and no reset; the dropped scrape's 5 (the
/// restart) is carried, so the window reads 5 + 145 and one reset.
#[test]
fn a_restart_between_kept_scrapes_counts_whole() {
    let text = |v: u64| format!("# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total {v}\n");
    let run: Vec<Signals> = [100, 5, 150, 160, 170].map(|v| signals(&text(v))).to_vec();
    let mut points = whole(&run[..4]);
    let mut thinner = Thinner::with_budget(usize::MAX);
    thinner.kept = (0..4).map(|i| Kept { ordinal: i, values: 1 }).collect();
    (thinner.taken, thinner.total) = (4, 4);
    thinner.drop_at(&mut points, 1);
    let w = summary(&points, secs(0), secs(3));
    let tokens = &w.counters[&CounterSignal::GenerationTokens];
    assert_eq!((tokens.delta, tokens.resets), (160.0, 1));
    assert_eq!(points[1].1.carried.counters[&CounterSignal::GenerationTokens][0].value, 100.0);
    // A window that starts at the kept scrape after the restart reads none of it.
    assert_eq!(summary(&points, secs(2), secs(3)).counters[&CounterSignal::GenerationTokens].delta, 10.0);
    assert_eq!(thinner.values(), 4, "three scrapes and one carried value");
}

/// A series missing from the kept scrape after a dropped one is held
/// there at its last value (`carried.last`), as a window reads a missing
/// series, without the scrape showing it: a window that starts there reads
/// it as new when it comes back, all of it (41), as every scrape does; it
/// had been kept among the scrape's own values, and such a window had
/// read it from that value (21).
#[test]
fn a_series_missing_from_the_next_kept_scrape_is_held_at_its_last_value() {
    let text = |pods: &[(u64, u64)]| {
        let mut t = String::from("# TYPE vllm:generation_tokens_total counter\n");
        for (pod, v) in pods {
            t += &format!("vllm:generation_tokens_total{{pod=\"{pod}\"}} {v}\n");
        }
        t
    };
    let run: Vec<Signals> =
        [text(&[(0, 1), (1, 10)]), text(&[(0, 2), (1, 20)]), text(&[(0, 3)]), text(&[(0, 4), (1, 40)])]
            .map(|t| signals(&t))
            .to_vec();
    let mut points = whole(&run);
    let mut thinner = Thinner::with_budget(usize::MAX);
    thinner.kept = (0..4).map(|i| Kept { ordinal: i, values: 2 }).collect();
    (thinner.taken, thinner.total) = (4, 8);
    thinner.drop_at(&mut points, 1);
    let ids = |v: &[SeriesValue]| v.iter().map(|v| (v.series.clone(), v.value)).collect::<Vec<_>>();
    let pod = |p: u64| format!("vllm:generation_tokens_total{{\"pod\": \"{p}\"}}");
    assert_eq!(ids(&points[1].1.counters[&CounterSignal::GenerationTokens]), [(pod(0), 3.0)]);
    assert_eq!(ids(&points[1].1.carried.last[&CounterSignal::GenerationTokens]), [(pod(1), 20.0)]);
    let delta = |p: &[(Duration, Signals)], from| {
        summary(p, secs(from), secs(3)).counters[&CounterSignal::GenerationTokens].delta
    };
    assert_eq!(delta(&points, 0), delta(&whole(&run), 0));
    assert_eq!((delta(&whole(&run), 2), delta(&points, 2)), (41.0, 41.0));
    assert_eq!(thinner.values(), points.iter().map(|(_, s)| values(s)).sum::<usize>());
}

/// However long the run, and whatever its server does (a series that goes
/// down at every other scrape, as behind a balancer of two replicas; new
/// series at every scrape), the kept values stay within the bound, and the
/// whole run's totals and resets read as every scrape's.
#[test]
fn a_run_of_any_length_stays_within_the_bound() {
    let text = |i: u64| {
        let up = 1_000 + i * 7;
        let replica = if i.is_multiple_of(2) { up } else { up / 3 };
        format!(
            "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{pod=\"a\"}} {replica}\n\
             vllm:generation_tokens_total{{pod=\"b\"}} {up}\nvllm:generation_tokens_total{{id=\"{i}\"}} {}\n\
             # TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n",
            i % 13
        )
    };
    let run: Vec<Signals> = (0..8_000).map(|i| signals(&text(i))).collect();
    let budget = 1_000;
    let (mut folder, mut thinner) = (Folder::default(), Thinner::with_budget(budget));
    let mut points: Vec<(Duration, Signals)> = Vec::new();
    let mut most = 0;
    for (i, s) in run.iter().enumerate() {
        let mut s = s.clone();
        folder.fold(points.last().map(|p| &p.1), &mut s);
        points.push((secs(i as u64), s));
        thinner.pushed(&mut points);
        // Past the bound by an eighth at most while a halving is under way.
        assert!(thinner.values() <= budget + budget / 8, "{} values at scrape {i}", thinner.values());
        if i % 97 == 0 {
            assert_eq!(thinner.values(), points.iter().map(|(_, s)| values(s)).sum::<usize>());
        }
        most = most.max(points.len());
    }
    // Four values a scrape: as many as the bound holds.
    assert!(most <= (budget + budget / 8) / 4 + 1, "{most} scrapes kept at most");
    thinner.finish(&mut points);
    assert!(thinner.every() >= 64, "every {}th kept", thinner.every());
    let every = whole(&run);
    let (all, kept) = (summary(&every, secs(0), secs(7_999)), summary(&points, secs(0), secs(7_999)));
    let (a, k) = (&all.counters[&CounterSignal::GenerationTokens], &kept.counters[&CounterSignal::GenerationTokens]);
    assert!(close(a.delta, k.delta) && a.resets == k.resets && a.resets > 3_900, "{a:?} vs {k:?}");
    for (from, _) in points.iter().step_by(7) {
        same_figures(&summary(&every, *from, secs(7_999)), &summary(&points, *from, secs(7_999)));
    }
}

/// The last scrape taken again (a run's settling final scrape): kept as
/// if the first had not been.
#[test]
fn the_last_scrape_can_be_taken_again() {
    let run: Vec<Signals> = (0..40).map(|i| signals(&scrape(i))).collect();
    let total: usize = run.iter().map(values).sum();
    let (straight, _) = kept(&run, MAX_SCRAPE_VALUES, total / 4);
    let (mut points, mut thinner) = kept(&run[..39], MAX_SCRAPE_VALUES, total / 4);
    for wrong in [5, 39] {
        points.push((secs(39), run[wrong].clone()));
        thinner.pushed(&mut points);
        points.pop();
        thinner.popped();
    }
    points.push((secs(39), run[39].clone()));
    thinner.pushed(&mut points);
    thinner.finish(&mut points);
    assert_eq!(thinner.taken(), 40);
    // The same scrapes kept, reading the same figures (a halving went
    // further at each scrape taken again).
    let at = |p: &[(Duration, Signals)]| p.iter().map(|(t, _)| *t).collect::<Vec<_>>();
    assert_eq!(at(&points), at(&straight));
    for (a, (from, _)) in points.iter().enumerate() {
        for (to, _) in &points[a..] {
            same_figures(&summary(&straight, *from, *to), &summary(&points, *from, *to));
        }
    }
    assert_eq!(points.last(), straight.last());
}

/// Within the bound every scrape is kept as it was, and nothing is said.
#[test]
fn a_run_within_the_bound_is_kept_whole() {
    let run: Vec<Signals> = (0..64).map(|i| signals(&scrape(i))).collect();
    let (points, thinner) = kept(&run, MAX_SCRAPE_VALUES, MAX_RUN_VALUES);
    assert_eq!(points, whole(&run));
    assert_eq!((thinner.every(), thinner.thinned(), thinner.warning(secs(1))), (1, None, None));
}

/// A thinned run says so once, with the spacing its scrapes were kept at
/// and since when; what its scrapes carried is written and read back.
#[test]
fn a_thinned_run_says_its_resolution_and_keeps_what_was_carried() {
    let run: Vec<Signals> = (0..64).map(|i| signals(&scrape(i))).collect();
    let total: usize = run.iter().map(values).sum();
    let (points, thinner) = kept(&run, MAX_SCRAPE_VALUES, total / 6);
    let thinned = thinner.thinned().unwrap();
    assert_eq!(thinned.every, 8);
    assert!(thinned.since_s > 10.0 && thinned.since_s < 20.0, "{thinned:?}");
    let said = thinner.warning(Duration::from_millis(200)).unwrap();
    assert!(is_thinned_warning(&said), "{said}");
    assert!(
        said.contains("every 8th scrape of the run is kept, about 1.6 s apart (--metrics-interval 200 ms)"),
        "{said}"
    );
    let orders: Vec<String> = [2, 4, 32, 512, 8192].map(ordinal).to_vec();
    assert_eq!(orders, ["2nd", "4th", "32nd", "512th", "8192nd"]);
    for (_, s) in &points {
        let written = serde_json::to_string(s).unwrap();
        let back: Signals = serde_json::from_str(&written).unwrap();
        assert_eq!(back.carried, s.carried);
    }
    // A scrape of before the thinning, without `carried`, reads as one that carried nothing.
    let old: Signals = serde_json::from_str(r#"{"sources":[],"gauges":{},"counters":{},"histograms":{}}"#).unwrap();
    assert!(old.carried.is_empty());
}

/// Points `run` at 0, 1, … s, all kept, for a test to drop some by hand.
fn by_hand(run: &[Signals]) -> (Vec<(Duration, Signals)>, Thinner) {
    let mut points = Vec::new();
    let mut thinner = Thinner::with_budget(usize::MAX);
    for (i, s) in run.iter().enumerate() {
        points.push((secs(i as u64), s.clone()));
        thinner.pushed(&mut points);
    }
    (points, thinner)
}

/// DCGM's energy counter of `(gpu, mJ)` series, as its exporter writes it.
fn energy_text(gpus: &[(u64, u64)]) -> String {
    let mut t = String::from("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n");
    for (gpu, mj) in gpus {
        t += &format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\"}} {mj}\n");
    }
    t
}

/// A GPU's energy series missing from one kept scrape (its exporter failed
/// that scrape) and back in the dropped one after it: a window that ends at
/// the kept scrape reads no energy of the GPU after it (it had read the
/// dropped scrape's, 500 J counted after the window), and the whole run
/// reads the same energy as every scrape.
#[test]
fn an_energy_series_missing_from_a_kept_scrape_is_not_read_past_it() {
    let run: Vec<Signals> = [
        energy_text(&[(0, 100_000), (1, 1_000_000)]),
        energy_text(&[(0, 110_000)]),
        energy_text(&[(0, 120_000), (1, 1_500_000)]),
        energy_text(&[(0, 130_000), (1, 1_600_000)]),
    ]
    .map(|t| signals(&t))
    .to_vec();
    let (mut points, mut thinner) = by_hand(&run);
    thinner.drop_at(&mut points, 2);
    assert_eq!(energy_delta(&points, 0, 1), energy_delta(&whole(&run), 0, 1), "a window that ends at the gap");
    assert_eq!(energy_delta(&points, 0, 3), energy_delta(&whole(&run), 0, 3), "the whole run");
    assert!(!points[1].1.counters[&CounterSignal::GpuEnergy].iter().any(|v| v.series.contains("\"1\"")));
}

/// A GPU first seen at a dropped scrape: its first value, its baseline,
/// is carried into the next kept scrape (`carried.first`), read by a window
/// that starts before as every scrape reads it, and told late; it had been
/// kept in the kept scrape before at that value, not told late.
#[test]
fn an_energy_series_first_seen_in_a_dropped_scrape_counts_from_its_first_value() {
    let run: Vec<Signals> = [
        energy_text(&[(0, 100_000)]),
        energy_text(&[(0, 110_000)]),
        energy_text(&[(0, 120_000), (1, 1_500_000)]),
        energy_text(&[(0, 130_000), (1, 1_600_000)]),
    ]
    .map(|t| signals(&t))
    .to_vec();
    let (mut points, mut thinner) = by_hand(&run);
    thinner.drop_at(&mut points, 2);
    for from in [0, 1] {
        assert_eq!(energy_delta(&points, from, 3), energy_delta(&whole(&run), from, 3));
        assert_eq!(energy_coverage(&points, from, 3), energy_coverage(&whole(&run), from, 3));
    }
    assert_eq!(energy_coverage(&points, 1, 3), SeriesCoverage { series: 2, late: 1, gone: 0 });
    assert_eq!(points[1].1.counters[&CounterSignal::GpuEnergy].len(), 1, "nothing kept before");
    assert_eq!(points[2].1.carried.first[&CounterSignal::GpuEnergy][0].value, 1_500.0);
}

/// A histogram whose bucket bounds change at every scrape (a hostile
/// server): each dropped scrape's observations are carried with its own
/// bounds, and their union had grown with the run, past the bound (32,000
/// values of a bound of 2,000, the run's scrapes halved down to three);
/// carried with at most MAX_HISTOGRAM_BOUNDS bounds, the run stays within
/// it and keeps its counts.
#[test]
fn new_bucket_bounds_at_every_scrape_stay_within_the_bound() {
    use crate::prometheus::scrape::histogram::Bucket;
    let budget = 40_000;
    let mut thinner = Thinner::with_budget(budget);
    let (mut points, mut run) = (Vec::new(), Vec::new());
    let mut most = 0;
    for i in 0..6_000u64 {
        let mut buckets: Vec<Bucket> =
            (0..8).map(|b| Bucket { le: (i * 8 + b) as f64 * 1e-3 + 1e-4, count: (i * 10 + b) as f64 }).collect();
        buckets.push(Bucket { le: f64::INFINITY, count: (i * 10 + 8) as f64 });
        let count = buckets[8].count;
        let h = Histogram { labels: Labels::new(), buckets, count, sum: Some(count) };
        let mut s = Signals::default();
        s.histograms.insert(HistogramSignal::Ttft, vec![SeriesHistogram { series: "ttft".into(), histogram: h }]);
        run.push(s.clone());
        points.push((secs(i), s));
        thinner.pushed(&mut points);
        most = most.max(thinner.values());
    }
    thinner.finish(&mut points);
    assert!(most <= budget + budget / 8, "{most} values kept at most, of a bound of {budget}");
    assert!(points.len() > 30, "{} scrapes kept", points.len());
    for h in points.iter().filter_map(|(_, s)| s.carried.histograms.get(&HistogramSignal::Ttft)) {
        assert!(h.buckets.len() <= MAX_HISTOGRAM_BOUNDS && h.buckets.last().unwrap().le == f64::INFINITY);
    }
    let count = |p: &[(Duration, Signals)]| summary(p, secs(0), secs(5_999)).histograms[&HistogramSignal::Ttft].count;
    assert_eq!(count(&points), count(&whole(&run)));
}

/// A saved result's samples are read as written: resets carried past a
/// u32 together (a hostile or edited document) are counted up to its
/// most, where `report` had panicked (debug) or wrapped them to a few.
#[test]
fn carried_resets_past_a_u32_are_counted_to_its_most() {
    let sample = |v: u64| -> Signals {
        serde_json::from_str(&format!(
            r#"{{"counters":{{"generation_tokens":[{{"series":"g","value":{v}}}]}},
                "carried":{{"counters":{{"generation_tokens":[{{"series":"c","value":1}}]}},
                "resets":{{"generation_tokens":4294967295}}}}}}"#
        ))
        .unwrap()
    };
    let points =
        [sample(1), sample(2), sample(3)].into_iter().enumerate().map(|(i, s)| (secs(i as u64), s)).collect::<Vec<_>>();
    let w = summary(&points, secs(0), secs(2));
    assert_eq!(w.counters[&CounterSignal::GenerationTokens].resets, u32::MAX);
}

/// A server whose series carry long labels (64 KiB here; a scrape may be
/// 64 MiB): the bound counts what their identities hold, so that a run
/// keeps its scrapes within it in bytes too. Each had counted one value,
/// so that a run held 4,000,000 of them (256 GB) before dropping one.
#[test]
fn long_series_identities_count_within_the_bound() {
    let label = "x".repeat(64 * 1024);
    let text = |i: u64| {
        format!(
            "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{pod=\"{label}\"}} {i}\n\
             # TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{{pod=\"{label}\",le=\"+Inf\"}} {i}\n\
             vllm:time_to_first_token_seconds_count{{pod=\"{label}\"}} {i}\n"
        )
    };
    let mut thinner = Thinner::with_budget(MAX_RUN_VALUES / 100);
    let mut points = Vec::new();
    let mut held = 0;
    for i in 0..400 {
        points.push((secs(i), signals(&text(i))));
        thinner.pushed(&mut points);
        held = points
            .iter()
            .map(|(_, s)| {
                s.counters.values().flatten().map(|v| v.series.len()).sum::<usize>()
                    + s.histograms
                        .values()
                        .flatten()
                        .map(|h| h.series.len() + h.histogram.labels.values().map(String::len).sum::<usize>())
                        .sum::<usize>()
            })
            .sum::<usize>()
            .max(held);
    }
    // 290 MB for MAX_RUN_VALUES; a hundredth of it, with room for the identities' own bytes.
    assert!(held <= 4 * 2_900_000 * 256 / 72, "{held} bytes of identities held, {} values counted", thinner.values());
    assert!(thinner.every() > 1);
}

/// A sweep's stage keeps only the scrapes its window reads
/// ([`ServerSignals::cut_to`]): from the last at or before its start to the
/// first at or after its end. Of the thinned run above (kept at 0, 8, …,
/// 56, 62, 63, here 5 s later, the restarts carried into 24, 40 and 48),
/// each window's summary, diagnosis, cross-check and energy coverage read
/// of the cut as of the whole run's scrapes: windows whose edges are kept
/// scrapes, between them, starting at a kept scrape that carries a restart
/// (read only with the scrape before, which the cut leaves out, as the
/// whole run's window does), holding restarts, before the first scrape
/// and after the last.
#[test]
fn a_stage_s_cut_of_the_scrapes_reads_as_the_whole_run_s() {
    use crate::prometheus::scrape::{ClientLoad, ScrapeSample, ServerSignals};
    use crate::{analyze, AnalysisOptions};
    let run: Vec<Signals> = (0..64).map(|i| signals(&scrape(i))).collect();
    let total: usize = run.iter().map(values).sum();
    let (points, thinner) = kept(&run, MAX_SCRAPE_VALUES, total / 6);
    let shift = secs(5);
    let samples: Vec<ScrapeSample> =
        points.into_iter().map(|(t, signals)| ScrapeSample { t: t + shift, signals }).collect();
    let at: Vec<u64> = samples.iter().map(|s| s.t.as_secs()).collect();
    assert_eq!(at, [5, 13, 21, 29, 37, 45, 53, 61, 67, 68]);
    let carries = |t: u64| !samples.iter().find(|s| s.t == secs(t)).unwrap().signals.carried.is_empty();
    assert!(carries(29) && carries(45) && carries(53), "the restarts at 21, 38-39 and 45 are carried");
    let whole = ServerSignals { samples, scrapes: 64, thinned: thinner.thinned(), ..ServerSignals::default() };
    let client = analyze(&[], &AnalysisOptions::default()).summary;
    let load = ClientLoad::closed(2);
    let window = |from: f64, to: f64| crate::Window { start_s: from, end_s: to, duration_s: to - from };
    for (from, to, want) in [
        // Edges at kept scrapes, a restart carried into 29 and 45 inside.
        (21.0, 45.0, &[21, 29, 37, 45][..]),
        // Edges between kept scrapes: widened to those around them.
        (25.0, 50.0, &[21, 29, 37, 45, 53]),
        // From the kept scrape that carries pod 1's restart: not read.
        (29.0, 33.0, &[29, 37]),
        // Within one interval between kept scrapes.
        (30.0, 31.0, &[29, 37]),
        // Before the first scrape, and from before it.
        (1.0, 3.0, &[5]),
        (1.0, 22.0, &[5, 13, 21, 29]),
        // After the last, and to past it.
        (70.0, 80.0, &[68]),
        (58.0, 80.0, &[53, 61, 67, 68]),
        // The whole run.
        (0.0, 68.0, &[5, 13, 21, 29, 37, 45, 53, 61, 67, 68]),
    ] {
        let w = window(from, to);
        let cut = whole.cut_to(&w);
        let kept: Vec<u64> = cut.samples.iter().map(|s| s.t.as_secs()).collect();
        assert_eq!(kept, want, "{from}..{to}");
        assert_eq!((cut.scrapes, cut.thinned, cut.cut), (64, whole.thinned, Some(w)), "the whole run's, and the cut");
        // The whole run's scrapes analysed as a stretch of it (a cut holds
        // no whole run to count against), and the cut analysed again from
        // its own document.
        let (mut of_whole, mut of_cut) = (whole.clone(), cut.clone());
        let d_whole = of_whole.analyse(&[], &client, &w, load, true);
        let d_cut = of_cut.analyse(&[], &client, &w, load, false);
        assert_eq!(of_whole.window, of_cut.window, "{from}..{to}");
        assert_eq!(of_whole.cross_check, of_cut.cross_check, "{from}..{to}");
        assert_eq!((d_whole, of_whole.engine), (d_cut, of_cut.engine), "{from}..{to}");
        assert_eq!(of_whole.coverage(CounterSignal::GpuEnergy), of_cut.coverage(CounterSignal::GpuEnergy));
        let doc: ServerSignals = serde_json::from_str(&serde_json::to_string(&of_cut).unwrap()).unwrap();
        assert_eq!((doc.cut, doc.samples.len()), (Some(w), want.len()), "a stage's document says its cut");
        // Any window within the stage's (report --window) reads alike.
        for (a, b) in [(from, (from + to) / 2.0), ((from + to) / 2.0, to)] {
            let (mut x, mut y) = (whole.clone(), cut.clone());
            x.analyse(&[], &client, &window(a, b), load, true);
            y.analyse(&[], &client, &window(a, b), load, true);
            assert_eq!(x.window, y.window, "{a}..{b} within {from}..{to}");
        }
    }
    // The restarts inside a stage: counted as of every scrape.
    let stage = whole.cut_to(&window(21.0, 45.0));
    let w = summary_of(&stage, 21, 45);
    let all = summary(&self::whole(&run), secs(16), secs(40));
    same_figures(&all, &w);
    assert!(w.counters[&CounterSignal::GenerationTokens].resets >= 3, "{:?}", w.counters);
    // Nothing scraped, nothing cut.
    let none = ServerSignals::default().cut_to(&window(0.0, 1.0));
    assert_eq!((none.samples.len(), none.cut), (0, None));
}

fn summary_of(s: &crate::prometheus::scrape::ServerSignals, from: u64, to: u64) -> WindowSummary {
    summarize_points(s.samples.iter().map(|x| (x.t, &x.signals)), secs(from), secs(to))
}

/// A counter's text of series `(labels, value)`, those `None` missing.
fn counter_text(metric: &str, series: &[(&str, Option<u64>)]) -> String {
    let mut t = format!("# TYPE {metric} counter\n");
    for (labels, v) in series {
        if let Some(v) = v {
            t += &format!("{metric}{{{labels}}} {v}\n");
        }
    }
    t
}

/// The GPUs' energy counted over a window.
fn energy_delta(points: &[(Duration, Signals)], from: u64, to: u64) -> f64 {
    summary(points, secs(from), secs(to)).counters[&CounterSignal::GpuEnergy].delta
}

/// The energy series' coverage of a window.
fn energy_coverage(points: &[(Duration, Signals)], from: u64, to: u64) -> SeriesCoverage {
    series_coverage(points.iter().map(|(t, s)| (*t, s)), secs(from), secs(to), CounterSignal::GpuEnergy)
}

/// A series missing from kept scrape A (1), back in the dropped scrape B
/// (2) after it, which goes down before the next kept scrape C (3): every
/// scrape reads 50 → 60 → 5 over P..C as 15 tokens and 1 reset; the kept
/// scrapes had read 65 and 2 (B's 60 carried for a window that starts at
/// A, where it is new, and C's 5 read again as a reset from P's 50). In
/// the other variant (50 → 5 → 60, the restart before B) 60 and 1, where
/// they had read 10 and 0. A window that starts at A reads as every
/// scrape does too: B's value as new.
#[test]
fn a_series_missing_before_a_dropped_scrape_that_restarts_reads_every_scrape_s_figures() {
    let tokens = |p| counter_text("vllm:generation_tokens_total", &[("pod=\"0\"", Some(1_000)), ("pod=\"1\"", p)]);
    for (b, c, every) in [(60, 5, (15.0, 1)), (5, 60, (60.0, 1))] {
        let run: Vec<Signals> = [Some(50), None, Some(b), Some(c)].map(|p| signals(&tokens(p))).to_vec();
        let (mut points, mut thinner) = by_hand(&run);
        thinner.drop_at(&mut points, 2);
        let read = |p: &[(Duration, Signals)], from| {
            let c = &summary(p, secs(from), secs(3)).counters[&CounterSignal::GenerationTokens];
            (c.delta, c.resets)
        };
        assert_eq!(read(&whole(&run), 0), every, "every scrape, {b} then {c}");
        assert_eq!(read(&points, 0), every, "the kept scrapes, {b} then {c}");
        assert_eq!(read(&points, 1), read(&whole(&run), 1), "from A, {b} then {c}");
    }
}

/// A GPU's energy series that stops being reported in a dropped scrape
/// (gone from the window's last kept one) is told gone, 1 of 2, as every
/// scrape tells it: it had been kept in the next kept scrape at its last
/// value, and read 0 of 2 gone, the result's warning that the energy is
/// low lost. One first seen in a dropped scrape is told late, as every
/// scrape tells it (it had been kept in the kept scrape before as its
/// baseline, not late); both count the same energy.
#[test]
fn an_energy_series_gone_or_late_in_a_dropped_scrape_is_told_so() {
    let energy = |g0: u64, g1: Option<u64>| {
        counter_text("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", &[("gpu=\"0\"", Some(g0)), ("gpu=\"1\"", g1)])
    };
    let gone: Vec<Signals> = [
        energy(100_000, Some(1_000_000)),
        energy(110_000, Some(1_100_000)),
        energy(120_000, None),
        energy(130_000, None),
    ]
    .map(|t| signals(&t))
    .to_vec();
    let late: Vec<Signals> = [
        energy(100_000, None),
        energy(110_000, Some(1_100_000)),
        energy(120_000, Some(1_200_000)),
        energy(130_000, None),
    ]
    .map(|t| signals(&t))
    .to_vec();
    for (run, told) in
        [(gone, SeriesCoverage { series: 2, late: 0, gone: 1 }), (late, SeriesCoverage { series: 2, late: 1, gone: 0 })]
    {
        let (mut points, mut thinner) = by_hand(&run);
        thinner.drop_at(&mut points, 1);
        assert_eq!(energy_coverage(&whole(&run), 0, 2), told);
        assert_eq!(energy_coverage(&points, 0, 2), told);
        for (from, to) in [(0, 2), (0, 3), (2, 3)] {
            assert_eq!(energy_coverage(&points, from, to), energy_coverage(&whole(&run), from, to), "{from}..{to}");
            assert_eq!(energy_delta(&points, from, to), energy_delta(&whole(&run), from, to), "{from}..{to}");
        }
    }
}

/// A small random number generator (xorshift), for runs of random series.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs of random series (each scrape: missing, gone down, or up; tokens
/// and GPU energy, a total since boot), thinned by the run's own halvings
/// to every 2nd to 16th scrape: every window between kept scrapes reads
/// the increases, resets, rates and the energy series' coverage (series,
/// late, gone) of every scrape between them.
#[test]
fn random_series_read_every_scrape_s_figures_in_every_window() {
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (pods, gpus) = (1 + rng.below(4) as usize, 1 + rng.below(3) as usize);
        let (missing, down) = (1 + rng.below(5), rng.below(4));
        let mut value: Vec<u64> = vec![0; pods + gpus];
        let n = 100 + rng.below(200);
        let run: Vec<Signals> = (0..n)
            .map(|_| {
                let mut shown: Vec<Option<u64>> = Vec::new();
                for v in value.iter_mut() {
                    match rng.below(10) {
                        r if r < missing => shown.push(None),
                        r if r < missing + down => {
                            *v = rng.below(30);
                            shown.push(Some(*v));
                        }
                        _ => {
                            *v += rng.below(40);
                            shown.push(Some(*v));
                        }
                    }
                }
                let labels: Vec<String> = (0..pods)
                    .map(|p| format!("pod=\"{p}\""))
                    .chain((0..gpus).map(|g| format!("gpu=\"{g}\"")))
                    .collect();
                let series: Vec<(&str, Option<u64>)> = labels.iter().map(String::as_str).zip(shown).collect();
                let text = counter_text("vllm:generation_tokens_total", &series[..pods])
                    + &counter_text("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", &series[pods..]);
                signals(&text)
            })
            .collect();
        let all = whole(&run);
        let total: usize = run.iter().map(values).sum();
        // Room for what a kept scrape carries of its series (a run's is 20,000 values).
        let budget = (total / (2 + rng.below(30) as usize)).max(160);
        let (points, thinner) = kept(&run, MAX_SCRAPE_VALUES, budget);
        assert!(
            thinner.every() > 1 && points.len() > 4,
            "seed {seed}: {n} scrapes, {total} values, {:?}",
            points.len()
        );
        for (a, (from, _)) in points.iter().enumerate() {
            for (to, _) in &points[a..] {
                let what = format!("seed {seed}, every {}, {from:?}..{to:?}", thinner.every());
                let (w_all, w_kept) = (summary(&all, *from, *to), summary(&points, *from, *to));
                let (a, k) = (&w_all.counters, &w_kept.counters);
                if a.keys().collect::<Vec<_>>() != k.keys().collect::<Vec<_>>() {
                    for (t, s) in &all[from.as_secs() as usize..=to.as_secs() as usize] {
                        eprintln!(
                            "{t:?} {:?}",
                            s.counters
                                .get(&CounterSignal::GenerationTokens)
                                .map(|v| v.iter().map(|v| (v.series.clone(), v.value)).collect::<Vec<_>>())
                        );
                    }
                    for (t, s) in points.iter().filter(|(t, _)| (from..=to).contains(&t)) {
                        eprintln!("KEPT {t:?} {:?} {:?}", s.counters.get(&CounterSignal::GenerationTokens), s.carried);
                    }
                }
                assert_eq!(a.keys().collect::<Vec<_>>(), k.keys().collect::<Vec<_>>(), "{what}");
                for (c, a) in a {
                    let k = &k[c];
                    assert!(close(a.delta, k.delta) && a.resets == k.resets, "{what} {}: {a:?} vs {k:?}", c.name());
                }
                let (f, t) = (from.as_secs(), to.as_secs());
                assert_eq!(energy_coverage(&points, f, t), energy_coverage(&all, f, t), "{what}");
            }
        }
        // A rate over time: one per kept scrape, what every scrape read
        // of the whole run since the kept one before (each 1 s apart).
        let (w_all, w) = (summary(&all, secs(0), secs(n - 1)), summary(&points, secs(0), secs(n - 1)));
        for (c, rates) in &w.series.rates_per_s {
            let every = &w_all.series.rates_per_s[c];
            for (j, rate) in rates.iter().enumerate().skip(1) {
                let (from, to) = (points[j - 1].0.as_secs() as usize, points[j].0.as_secs() as usize);
                let steps: Vec<f64> = every[from + 1..=to].iter().flatten().copied().collect();
                let dt = (to - from) as f64;
                let read = (!steps.is_empty()).then(|| steps.iter().sum::<f64>() / dt);
                assert!(read.zip(*rate).is_none_or(|(a, b)| close(a, b)), "seed {seed} {} at {to}", c.name());
            }
        }
    }
}
