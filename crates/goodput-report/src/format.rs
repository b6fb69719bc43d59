//! How numbers read in human-facing formats (terminal, Markdown, HTML): one
//! place, so a value prints the same wherever it appears. CSV and JSON keep
//! full precision and never go through here.

use crate::metric::Unit;
use goodput_core::analysis::summary::PromptExtra;
use goodput_core::ClientCost;

/// A latency in milliseconds: two decimals, whole numbers once large.
pub fn ms(v: Option<f64>) -> String {
    match v {
        Some(x) if !x.is_finite() => "∞".into(),
        Some(x) if x.abs() >= 1e5 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    }
}

/// A duration given in milliseconds, read in seconds (`4.83 s`): what a
/// whole session takes.
pub fn seconds_of_ms(v: Option<f64>) -> String {
    v.map(|v| format!("{:.2} s", v / 1000.0)).unwrap_or("-".into())
}

/// A value in its unit, with the unit when it is not obvious from a header.
pub fn value(v: Option<f64>, unit: Unit) -> String {
    let Some(x) = v else { return "-".into() };
    if !x.is_finite() {
        return "∞".into();
    }
    match unit {
        Unit::Ms => ms(Some(x)),
        Unit::TokensPerS => format!("{x:.1}"),
        Unit::RequestsPerS => format!("{x:.3}"),
        Unit::Ratio => format!("{:.2}%", x * 100.0),
        Unit::Usd => usd(x),
        Unit::Count => format!("{x:.0}"),
        Unit::Plain => format!("{x:.2}"),
        Unit::Joules => joules(x),
    }
}

/// Joules with three significant digits (0.0734, 0.473, 12.5), as a small
/// J per token needs: two decimals had shown 0.07 and 0.08 a step of 14%.
pub fn joules(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x:.3}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).clamp(0, 12);
    format!("{x:.*}", digits as usize)
}

/// What the user view's ratings are over, where some requests failed:
/// "rated over the 48 requests that succeeded; 12 of 60 failed (the
/// error-adjusted figures count them)". `None` when none failed.
pub fn rated_over(s: &goodput_core::Summary) -> Option<String> {
    let q = &s.requests;
    (q.failed > 0).then(|| {
        format!(
            "rated over the {} requests that succeeded; {} of {} failed (the error-adjusted figures count them)",
            q.completed, q.failed, q.sent
        )
    })
}

/// Percentile `p` of an error-adjusted distribution: `∞` where it falls
/// among the failures (the document holds no value for it), `-` where the
/// run was not analysed with `p`.
pub fn adjusted(d: &goodput_core::Distribution, p: f64) -> String {
    match d.percentiles.iter().find(|(q, _)| *q == p) {
        Some((_, Some(v))) => ms(Some(*v)),
        Some((_, None)) if d.count > 0 => "∞".into(),
        _ => "-".into(),
    }
}

/// Dollars with enough digits to tell small prices apart: three decimals,
/// or three significant digits below a cent (a price of $0.004 a GPU-hour
/// costs $0.000417 per M tokens, not "$0.000"), in exponent form below a
/// billionth. Zero, negative zero too, is `$0.000`.
pub fn usd(x: f64) -> String {
    format!("${}", amount(x, 3))
}

/// A price per GPU-hour without its `$`: two decimals, or three
/// significant digits below a cent ($0.004, not "$0.00"); zero, negative
/// zero too, is `0.00`.
pub fn gpu_hour(x: f64) -> String {
    amount(x, 2)
}

/// `x` with `decimals`, or three significant digits where those show less
/// than a cent of it.
fn amount(x: f64, decimals: usize) -> String {
    if x == 0.0 {
        // -0.0 too: no "$-0.00".
        return format!("{:.decimals$}", 0.0);
    }
    if !x.is_finite() || x.abs() >= 0.01 {
        return format!("{x:.decimals$}");
    }
    let digits = 2 - x.abs().log10().floor() as i32;
    if digits > 11 {
        return format!("{x:.2e}");
    }
    // Three significant digits at most: no trailing zeros past them (0.000026, not 0.0000260).
    let text = format!("{x:.*}", digits.max(decimals as i32) as usize);
    text.trim_end_matches('0').to_owned()
}

/// The server's prompt count beside the workload's, as a sentence, for a
/// run of `client`'s settings; `None` when they agree on every request. A
/// pooling run that the server runs as an engine request for each input or
/// document says so as the cause (a rerank run's +204 tokens a request had been put down to a
/// chat template, where the server counts the query once for each of its 8
/// documents).
pub fn prompt_extra(e: &PromptExtra, client: Option<&goodput_core::doc::config::ClientSettings>) -> Option<String> {
    use goodput_core::prometheus::scrape::FanOut;
    if let Some(f) = client.and_then(FanOut::of).filter(|_| e.mean > 0.0 && !e.is_zero()) {
        let amount = if e.min == e.max {
            format!("{:+} prompt tokens a request", e.min)
        } else {
            format!("{:+.1} prompt tokens a request (min {:+}, max {:+})", e.mean, e.min, e.max)
        };
        let why = match f {
            FanOut::Inputs(n) => {
                format!("each of its {n} inputs is an engine request of its own, with its own special tokens")
            }
            FanOut::Documents(n) => format!(
                "each of its {n} documents is an engine request of its own, paired with the query, so the server \
                 counts the query {n} times, and each pair's special tokens"
            ),
        };
        return Some(format!("{amount} beyond the workload's count ({why}); input figures are the server's counts"));
    }
    if e.is_zero() {
        return None;
    }
    let amount = if e.min == e.max {
        format!("{:+} prompt tokens a request", e.min)
    } else {
        format!("{:+.1} prompt tokens a request (min {:+}, max {:+})", e.mean, e.min, e.max)
    };
    let why = if e.mean >= 0.0 {
        "beyond the workload's count (the server's chat template and special tokens, \
         or a tokenizer that splits the prompt otherwise)"
    } else {
        "below the workload's count (a tokenizer that splits the prompt otherwise)"
    };
    Some(format!("{amount} {why}; input figures are the server's counts"))
}

/// A histogram bucket's bound in seconds as milliseconds, with no more
/// digits than it has: 0.3 → 300, 0.0025 → 2.5.
pub fn bound_ms(s: f64) -> String {
    let t = format!("{:.3}", s * 1e3);
    t.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The client's own CPU over the run, in one line: the cores it kept busy
/// of those it had, and its CPU per output token and per chunk read.
pub fn client_cost(c: &ClientCost) -> String {
    let per = |v: Option<f64>, what: &str| v.map(|x| format!(" · {x:.1} µs per {what}")).unwrap_or_default();
    format!(
        "{:.2} of {} cores{}{}",
        c.cores,
        c.cpus,
        per(c.cpu_us_per_output_token, "output token"),
        per(c.cpu_us_per_chunk, "chunk")
    )
}

/// The energy figures in one line: joules per output token, output tokens/s
/// per provisioned megawatt, and the mean power against what is
/// provisioned, with where the joules come from.
pub fn energy(e: &goodput_core::analysis::energy::EnergyReport) -> String {
    use goodput_core::analysis::energy::EnergySource;
    let j = e
        .joules_per_output_token
        .map(|j| format!("{j:.3} J per output token"))
        .unwrap_or("- J per output token".into());
    let mw = e
        .output_tokens_per_s_per_provisioned_mw
        .map(|v| format!("{:.0} output tok/s per provisioned MW", v))
        .unwrap_or("- output tok/s per provisioned MW (no power limit scraped for every GPU)".into());
    // No output (embeddings, rerank, every request failed): no figure per
    // output token, said so rather than a dash that reads as unmeasured.
    let (j, mw) = match e.output_tokens {
        0 => ("no output tokens, so no J per output token or tok/s per MW".to_owned(), None),
        _ => (j, Some(mw)),
    };
    let mw = mw.map(|m| format!(" · {m}")).unwrap_or_default();
    let power = match (e.mean_power_w, e.provisioned_w) {
        (Some(p), Some(t)) => format!(" · mean {p:.0} W of {t:.0} W provisioned"),
        (Some(p), None) => format!(" · mean {p:.0} W"),
        _ => String::new(),
    };
    let gpus = e.gpus.map(|g| format!(" on {g} GPU(s)")).unwrap_or_default();
    let source = match e.source {
        EnergySource::Model => "the simulated engine's power model",
        EnergySource::Scraped => "the GPUs' energy counters",
    };
    format!("{j}{mw}{power}{gpus} ({source})")
}

/// The client's own stalls in one line: how many, how long, and the
/// requests due or in flight over them.
pub fn client_stalls(s: &goodput_core::ClientStalls) -> String {
    let touched = match s.requests {
        0 => "no request in flight".to_owned(),
        n => format!("{n} request(s) due or in flight over them: sent late, or their times upper bounds"),
    };
    format!(
        "{} over {:.0} ms, {:.0} ms in all (longest {:.0} ms); {touched}",
        s.count, s.threshold_ms, s.total_ms, s.longest_ms
    )
}

/// The output chunks and TTFTs that are only upper bounds (read with a
/// later chunk more than 2 ms after the client last looked, or sent late),
/// in one line; `None` when none.
pub fn bound_chunks(s: &goodput_core::Summary) -> Option<String> {
    bound_text(s.bound_chunks, s.ttft_bound_requests)
}

/// [`bound_chunks`] of `chunks` bound chunks and `requests` bound TTFTs.
fn bound_text(chunks: u64, requests: u64) -> Option<String> {
    let ttft = |n: u64| format!("the TTFT of {n} request(s)");
    match (chunks, requests) {
        (0, 0) => None,
        // It had said "so is the TTFT of 0 request(s)".
        (chunks, 0) => Some(format!(
            "{chunks} output chunk(s) read with a later one, over more than 2 ms: their times are upper bounds"
        )),
        (0, requests) => Some(format!("{} is only an upper bound", ttft(requests))),
        (chunks, requests) => Some(format!(
            "{chunks} output chunk(s) read with a later one, over more than 2 ms: their times are upper bounds; so is \
             {}",
            ttft(requests)
        )),
    }
}

/// A relative change (0.1 = +10%).
pub fn change(c: Option<f64>) -> String {
    match c {
        None => "-".into(),
        Some(x) if x.is_infinite() => if x > 0.0 { "+∞%" } else { "-∞%" }.into(),
        // Past a billion per cent, with an exponent (+1e308% had been printed
        // as 309 digits).
        Some(x) if (x * 100.0).abs() >= 1e9 => format!("{:+.1e}%", x * 100.0),
        Some(x) => format!("{:+.1}%", x * 100.0),
    }
}

/// When a run started, in words: `started 2026-01-31 12:00:00 UTC`, or
/// `start unknown` for a start of 0, which an imported file that gives no
/// wall-clock time says (it had been shown as started in 1970).
///
/// ```
/// assert_eq!(goodput_report::format::started(0.0), "start unknown");
/// assert_eq!(goodput_report::format::started(951_782_400.0), "started 2000-02-29 00:00:00 UTC");
/// ```
pub fn started(unix_s: f64) -> String {
    if unix_s <= 0.0 {
        "start unknown".into()
    } else {
        format!("started {}", utc(unix_s))
    }
}

/// Seconds since the Unix epoch as a UTC date and time, `2026-01-31 12:00:00 UTC`.
///
/// ```
/// assert_eq!(goodput_report::format::utc(0.0), "1970-01-01 00:00:00 UTC");
/// assert_eq!(goodput_report::format::utc(951_782_400.5), "2000-02-29 00:00:00 UTC");
/// ```
pub fn utc(unix_s: f64) -> String {
    // Not a time, or past the years `time` holds (±9999): no date to print.
    let Some(t) = Some(unix_s)
        .filter(|s| s.is_finite())
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s.floor() as i64).ok())
    else {
        return "-".into();
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `summary.quality` as a table: the run's row (`all`), then a row per
/// model; each mean with its 95% interval, the corpus scores beside them.
pub fn quality_table(q: &goodput_core::quality::QualitySummary) -> (Vec<String>, Vec<Vec<String>>) {
    use goodput_core::quality::{QualityScores, ScoreMean};
    let header = ["", "scored", "exact", "number", "ROUGE-L", "chrF", "BLEU", "chrF corpus"].map(String::from).to_vec();
    let mean = |m: &Option<ScoreMean>, d: usize| {
        m.as_ref().map(|m| format!("{:.d$} [{:.d$}–{:.d$}]", m.mean, m.ci95_low, m.ci95_high)).unwrap_or("-".into())
    };
    let corpus = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or("-".into());
    let row = |name: &str, s: &QualityScores| {
        vec![
            name.to_string(),
            s.requests_scored.to_string(),
            mean(&s.exact, 3),
            mean(&s.number, 3),
            mean(&s.rouge_l, 3),
            mean(&s.chrf, 1),
            corpus(s.bleu),
            corpus(s.chrf_corpus),
        ]
    };
    let mut rows = vec![row("all", &q.scores)];
    rows.extend(q.by_model.iter().map(|m| row(&m.model, &m.scores)));
    (header, rows)
}

/// `summary.quality.consistency` in one line.
pub fn consistency_line(c: &goodput_core::quality::Consistency) -> String {
    format!(
        "{} prompts × up to {} copies · {:.1}% identical · mean similarity {:.3}{}",
        c.prompts,
        c.repeats,
        c.identical_share * 100.0,
        c.similarity_mean,
        c.first_difference_p50.map(|p| format!(" · first difference at word {p:.0} (p50)")).unwrap_or_default()
    )
}

/// Why a run stopped, in words, where a stopping rule had a say
/// (`--until`, `--stop-on-slo`): `until_met after 683 requests (5 looks):
/// …`. `None` for a run that ended by its count, its duration or Ctrl-C
/// alone, which the window line already says.
pub fn stop_text(r: &goodput_core::RunResult) -> Option<String> {
    use goodput_core::analysis::until::StopReason;
    let s = r.stop.as_ref()?;
    if !matches!(s.reason, StopReason::UntilMet | StopReason::SloDecided | StopReason::Cap) {
        return None;
    }
    let mut t = s.reason.as_str().to_string();
    if let Some(n) = s.at_requests {
        t.push_str(&format!(" after {n} requests"));
    }
    if let Some(k) = s.looks {
        t.push_str(&format!(" ({k} look{})", if k == 1 { "" } else { "s" }));
    }
    if !s.detail.is_empty() {
        t.push_str(": ");
        t.push_str(&s.detail);
    }
    // Decided early on intervals a lockstep run does not bear out.
    if crate::intervals::in_lockstep(r) && matches!(s.reason, StopReason::UntilMet | StopReason::SloDecided) {
        t.push_str(
            " (decided on intervals of requests sent in waves, which batch means widen only where they see it: it \
             may have stopped too soon; start the users apart, or repeat it with --runs N)",
        );
    }
    Some(t)
}

/// The requests with images set beside the text-only ones (`--images`):
/// how many of each, the images sent, and each side's TTFT at p50 and at
/// the highest percentile the run was analysed with. `None` for a run
/// without images.
pub fn multimodal(s: &goodput_core::analysis::summary::Summary) -> Option<String> {
    let m = s.multimodal.as_ref()?;
    let tail = |d: &goodput_core::analysis::stats::Distribution| {
        d.percentiles.iter().map(|(q, _)| *q).filter(|&q| q > 50.0).max_by(f64::total_cmp)
    };
    let side = |d: &goodput_core::analysis::stats::Distribution| match tail(d) {
        Some(q) => format!("TTFT p50 {} · p{q} {} ms", ms(d.p(50.0)), ms(d.p(q))),
        None => format!("TTFT p50 {} ms", ms(d.p(50.0))),
    };
    let mb = m.image_bytes as f64 / 1e6;
    let mut text = format!(
        "{} request{} with images ({} image{}, {mb:.1} MB sent): {}",
        m.requests_with_images,
        if m.requests_with_images == 1 { "" } else { "s" },
        m.images,
        if m.images == 1 { "" } else { "s" },
        side(&m.ttft_ms_with_images)
    );
    if m.requests_text_only > 0 {
        text.push_str(&format!(" · {} text only: {}", m.requests_text_only, side(&m.ttft_ms_text_only)));
    }
    Some(text)
}

/// The output rate's peak over a whole 1 s bucket, in words: `peak 700.0
/// over 1 s`, or, for a window shorter than one bucket (whose document's
/// peak is its mean rate), that there is none.
pub fn peak_text(r: &goodput_core::RunResult) -> String {
    match crate::read::peers::peak_output_tokens_per_s(r) {
        Some(_) if r.window.duration_s < 1.0 => "no whole 1 s in the window".to_string(),
        Some(p) => format!("peak {p:.1} over 1 s"),
        None => "peak - over 1 s".to_string(),
    }
}

/// An objective's verdict, `pass` or `fail` as given, a pass on too few
/// requests to bound its percentile at the run's confidence said so
/// (`pass, but 5 requests cannot bound a p99 at 95% confidence: give 367 or
/// more`).
pub fn objective_verdict(
    ob: &goodput_core::analysis::slo::ObjectiveResult,
    r: &goodput_core::RunResult,
    pass: &str,
    fail: &str,
) -> String {
    if !ob.pass {
        return fail.to_string();
    }
    let confidence =
        r.summary.intervals.as_ref().map_or(goodput_core::analysis::interval::DEFAULT_CONFIDENCE, |i| i.confidence);
    match ob.unbounded_pass(confidence) {
        Some(why) => format!("{pass}, but {why}"),
        None => pass.to_string(),
    }
}

/// An objective's measured percentile: `∞` where it falls among the
/// failed requests (each a sample above any limit), `-` where nothing was
/// judged.
pub fn objective_measured(ob: &goodput_core::analysis::slo::ObjectiveResult) -> String {
    match ob.measured_ms {
        None if ob.failures > 0 => "∞".into(),
        m => ms(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only what is bound is named: it had said "so is the TTFT of 0
    /// request(s)".
    #[test]
    fn bound_chunks_names_only_what_is_bound() {
        assert_eq!(bound_text(0, 0), None);
        let only_chunks = bound_text(3, 0).unwrap();
        assert!(only_chunks.starts_with("3 output chunk(s)") && !only_chunks.contains("TTFT"), "{only_chunks}");
        assert_eq!(bound_text(0, 2).unwrap(), "the TTFT of 2 request(s) is only an upper bound");
        assert!(bound_text(3, 2).unwrap().ends_with("so is the TTFT of 2 request(s)"));
    }

    #[test]
    fn dates_against_known_instants() {
        assert_eq!(utc(1_700_000_000.0), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc(-1.0), "1969-12-31 23:59:59 UTC");
        assert_eq!(utc(4_102_444_800.0), "2100-01-01 00:00:00 UTC");
    }

    /// The instants core's own calendar code was checked on before the
    /// `time` crate replaced it, and what lies past the years it holds.
    #[test]
    fn dates_where_the_calendar_turns_and_past_its_years() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400.0), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(951_782_399.9), "2000-02-28 23:59:59 UTC");
        assert_eq!(utc(-62_167_219_200.0), "0000-01-01 00:00:00 UTC");
        assert_eq!(utc(253_402_300_799.0), "9999-12-31 23:59:59 UTC");
        assert_eq!(utc(253_402_300_800.0), "-");
        assert_eq!(utc(1e300), "-");
        assert_eq!(utc(f64::NAN), "-");
    }

    #[test]
    fn prompt_extra_in_words() {
        let e = |requests, mean, min, max| PromptExtra { requests, mean, min, max };
        assert_eq!(prompt_extra(&e(4, 0.0, 0, 0), None), None, "agreement is no news");
        let same = prompt_extra(&e(4, 35.0, 35, 35), None).unwrap();
        assert!(
            same.starts_with("+35 prompt tokens a request beyond the workload's count (the server's chat template"),
            "{same}"
        );
        assert!(same.ends_with("; input figures are the server's counts"), "{same}");
        let range = prompt_extra(&e(2, 17.5, 10, 25), None).unwrap();
        assert!(range.starts_with("+17.5 prompt tokens a request (min +10, max +25) beyond"), "{range}");
        let fewer = prompt_extra(&e(1, -6.0, -6, -6), None).unwrap();
        assert!(fewer.starts_with("-6 prompt tokens a request below the workload's count (a tokenizer"), "{fewer}");
    }

    /// A rerank run's extra prompt tokens are the query counted once for
    /// each document, not a chat template (`--api rerank --rerank-docs 8`
    /// had said "+204 prompt tokens a request … the server's chat
    /// template"); an embeddings run's, each input's special tokens.
    #[test]
    fn a_pooling_run_s_prompt_extra_names_its_fan_out() {
        let e = PromptExtra { requests: 200, mean: 204.0, min: 204, max: 204 };
        let client = |api: &str, embed_batch, rerank_docs| goodput_core::doc::config::ClientSettings {
            api: api.into(),
            embed_batch,
            rerank_docs,
            ..Default::default()
        };
        let rerank = prompt_extra(&e, Some(&client("rerank", None, Some(8)))).unwrap();
        assert!(
            rerank.contains("each of its 8 documents is an engine request") && !rerank.contains("chat"),
            "{rerank}"
        );
        let inputs = prompt_extra(&e, Some(&client("embeddings", Some(4), None))).unwrap();
        assert!(inputs.contains("each of its 4 inputs is an engine request"), "{inputs}");
        let chat = prompt_extra(&e, Some(&client("chat", None, None))).unwrap();
        assert!(chat.contains("chat template"), "{chat}");
    }

    #[test]
    fn values_by_unit() {
        assert_eq!(value(Some(0.1234), Unit::Ratio), "12.34%");
        assert_eq!(value(Some(1010.91), Unit::TokensPerS), "1010.9");
        assert_eq!(value(Some(0.000026), Unit::Usd), "$0.000026");
        assert_eq!(value(Some(0.824), Unit::Usd), "$0.824");
        // Small prices keep three significant digits: they had read "$0.000".
        assert_eq!(usd(0.000417), "$0.000417");
        assert_eq!(usd(1.04e-7), "$0.000000104");
        assert_eq!(usd(2.5e-13), "$2.50e-13");
        assert_eq!((usd(-0.0), usd(0.0)), ("$0.000".to_owned(), "$0.000".to_owned()));
        assert_eq!((gpu_hour(0.004), gpu_hour(2.5), gpu_hour(-0.0)), ("0.004".into(), "2.50".into(), "0.00".into()));
        assert_eq!(value(None, Unit::Ms), "-");
        assert_eq!(change(Some(-0.05)), "-5.0%");
        assert_eq!(change(Some(f64::INFINITY)), "+∞%");
    }
}
