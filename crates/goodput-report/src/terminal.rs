//! The terminal summary: a table of latency percentiles, throughput,
//! failures and warnings, readable at a glance and pasteable into an issue.
//! Strings from the document pass through `escape::terminal`, so a server's
//! error text or a model name cannot drive the terminal.

pub mod sweep;

use crate::escape::terminal as esc;
use crate::format;
use crate::table::{self, Align, Column, Detail};
use goodput_core::doc::config::Rate;
use goodput_core::{RunConfig, RunResult};
use std::fmt::Write;

/// The width the summary fits when the terminal's is not known (a pipe,
/// a file): the classic terminal's.
pub const NARROW: usize = 80;

/// From this width on, the latency table shows every column at full width.
const WIDE: usize = 100;

/// Renders the summary of one run to fit [`NARROW`] columns.
pub fn render(r: &RunResult) -> String {
    render_width(r, NARROW)
}

/// Renders the summary of one run to fit `width` columns: the latency
/// table keeps the columns that fit (p50, max, p99 and the mean first),
/// and longer lines wrap at words, indented under their start.
pub fn render_width(r: &RunResult, width: usize) -> String {
    let width = width.max(60);
    let mut o = String::new();
    let s = &r.summary;
    heading(&mut o, r);
    latency_table(&mut o, r, width);
    intervals_block(&mut o, r, width);
    repeats_block(&mut o, r);
    throughput(&mut o, r);
    user_view(&mut o, r);
    let ps: Vec<f64> = s.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect();
    if let Some(ss) = &s.sessions {
        sessions(&mut o, ss, &ps);
    }
    if !s.by_model.is_empty() {
        by_model(&mut o, &s.by_model, &ps, width);
    }
    if let Some(q) = &s.quality {
        quality(&mut o, q);
    }
    slo_lines(&mut o, r);
    cost_line(&mut o, r);
    if let Some(e) = &r.energy {
        let _ = writeln!(o, "energy: {}", crate::format::energy(e));
    }
    vllm_line(&mut o, r);
    if let Some(sig) = &r.server_signals {
        server_lines(&mut o, sig);
    }
    for d in &r.diagnosis {
        let _ = writeln!(o, "diagnosis: {}", esc(&d.message));
    }
    for w in &r.warnings {
        let _ = writeln!(o, "warning: {}", esc(w));
    }
    wrap(&o, width)
}

/// `text` with every line longer than `width` characters broken at spaces;
/// a continuation is indented two more than its line (a word longer than
/// the line, a URL, stays whole).
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.chars().take_while(|c| *c == ' ').count();
        // Cells aligned by runs of spaces (a table's, a label's and its
        // figure) stay whole: only what follows the last run is broken.
        let head = body[indent..].rfind("   ").map_or(indent, |i| {
            let at = indent + i;
            at + body[at..].chars().take_while(|c| *c == ' ').count()
        });
        let next = " ".repeat((indent + 2).min(width / 2));
        out.push_str(&body[..head]);
        let mut col = body[..head].chars().count();
        let mut first = true;
        for word in body[head..].split(' ') {
            let n = word.chars().count();
            if !first && col + 1 + n > width {
                out.push('\n');
                out.push_str(&next);
                col = next.len();
            } else if !first {
                out.push(' ');
                col += 1;
            }
            out.push_str(word);
            col += n;
            first = false;
        }
        out.push_str(nl);
    }
    out
}

/// What ran against what, over which window, and how the requests ended.
fn heading(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    let t = &r.target;
    let where_ = if t.embedded { " (embedded simulator)" } else { "" };
    let label = r.config.label.as_deref().map(|l| format!(" «{}»", esc(l))).unwrap_or_default();
    // An imported file may name no server or model: no empty field for them.
    let fields: Vec<String> = [
        (!t.url.is_empty()).then(|| format!("{}{where_}", esc(&t.url))),
        (!t.model.is_empty()).then(|| format!("model {}", esc(&t.model))),
        Some(api_line(r)).filter(|a| !a.is_empty()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let _ = writeln!(o, "goodput {}{label} · {}", esc(&r.kind), fields.join(" · "));
    if let Some(i) = crate::read::peers::import_info(r) {
        let v = crate::read::peers::version_text(&i.version);
        let _ = writeln!(o, "imported from {} {} · {} ({})", esc(&i.tool), esc(&v), esc(&i.source), esc(&i.format));
    }
    let _ = writeln!(o, "load: {}", esc(&load_line(&r.config)));
    if let Some(sh) = &r.shard {
        let _ = writeln!(
            o,
            "shard {} of {} (run {}): this process's share of the load; goodput merge puts the shards together",
            sh.index,
            sh.count,
            esc(&sh.run)
        );
    }
    if let Some(m) = &r.merge {
        let missing = match m.missing.as_slice() {
            [] => String::new(),
            ms => {
                format!(" · missing {}", ms.iter().map(|i| format!("{i}/{}", m.count)).collect::<Vec<_>>().join(", "))
            }
        };
        let _ = writeln!(
            o,
            "merged from {} of {} shards · their clocks began within {:.1} ms{missing}",
            m.shards.len(),
            m.count,
            m.clock_uncertainty_s * 1e3
        );
    }
    let _ = writeln!(
        o,
        "window: {:.2} s ({:.2} → {:.2} s){}",
        r.window.duration_s,
        r.window.start_s,
        r.window.end_s,
        if r.interrupted { " · INTERRUPTED: partial result" } else { "" }
    );
    let q = &s.requests;
    let mut req = format!("requests: {} sent · {} completed · {} failed", q.sent, q.completed, q.failed);
    if q.cancelled > 0 {
        let _ = write!(req, " · {} cancelled", q.cancelled);
        if q.abandoned > 0 {
            let _ = write!(req, " ({} given up on by --cancel-rate)", q.abandoned);
        }
    }
    if q.warmup > 0 {
        let _ = write!(req, " · {} warm-up (excluded)", q.warmup);
    }
    if q.retried > 0 {
        let _ = write!(req, " · {} sent again (a kept connection closed before the response)", q.retried);
    }
    let _ = writeln!(o, "{req}");
    if let Some(stop) = crate::format::stop_text(r) {
        let _ = writeln!(o, "stopped: {}", esc(&stop));
    }
    if let Some(st) = &s.stability {
        let _ = writeln!(o, "stability: {}", esc(&stability_text(st)));
    }
    if !q.errors_by_kind.is_empty() {
        let kinds: Vec<String> = q.errors_by_kind.iter().map(|(k, n)| format!("{} {n}", esc(k))).collect();
        let _ = writeln!(o, "failures: {}", kinds.join(" · "));
        for (k, m) in &q.error_samples {
            let m: String = m.chars().take(160).collect();
            let _ = writeln!(o, "  first {}: {}", esc(k), esc(&m));
        }
    }
    o.push('\n');
}

/// The stability verdict in words: `steady` with the figures that say so,
/// or `NOT STEADY` with the reason.
pub fn stability_text(st: &goodput_core::analysis::stability::Stability) -> String {
    if let (false, Some(reason)) = (st.steady, &st.reason) {
        return format!("NOT STEADY: {reason}");
    }
    let mut t = String::from("steady");
    match st.offered_rps {
        Some(o) => {
            let _ = write!(t, " · arrivals {o:.1} req/s, completions {:.1} req/s", st.achieved_rps);
        }
        None => {
            let _ = write!(t, " · completions {:.1} req/s", st.achieved_rps);
        }
    }
    let _ = write!(t, " · outstanding {:.1} ({:+.1}/s)", st.outstanding_mean, st.outstanding_growth_per_s);
    if let Some(tr) = st.ttft_trend_ms_per_s {
        let _ = write!(t, " · TTFT trend {tr:+.1} ms/s");
    }
    if let Some(q) = st.server_queue_growth_per_s {
        let _ = write!(t, " · server queue {q:+.1}/s");
    }
    let _ = write!(t, " (judged {:.1}–{:.1} s)", st.judged_from_s, st.judged_to_s);
    t
}

/// The latency table's columns that fit `width`, as indices into `cols`
/// in table order, and those left out, with the width of each: every
/// column at 10 on a wide terminal; at 9 otherwise, the median, the
/// maximum, p99 and the mean kept first, the standard deviation last.
fn latency_columns(cols: &[Column], width: usize) -> (Vec<usize>, Vec<usize>, usize) {
    let all: Vec<usize> = (0..cols.len()).collect();
    if 16 + 10 * all.len() <= width.max(WIDE) && width >= WIDE {
        return (all, Vec::new(), 10);
    }
    let room = width.saturating_sub(16) / 9;
    let at = |key: &str| cols.iter().position(|c| c.key == key);
    let mut priority: Vec<usize> =
        ["p50", "max", "p99", "mean", "p90", "p95", "min"].into_iter().filter_map(at).collect();
    let std = at("std");
    let rest: Vec<usize> = all.iter().copied().filter(|i| !priority.contains(i) && Some(*i) != std).collect();
    priority.extend(rest);
    priority.extend(std);
    let kept: Vec<usize> = priority.iter().take(room).copied().collect();
    let (shown, hidden) = all.into_iter().partition(|i| kept.contains(i));
    (shown, hidden, 9)
}

/// `text` padded to `width` on the side `align` says.
fn pad(text: &str, width: usize, align: Align) -> String {
    match align {
        Align::Left => format!("{text:<width$}"),
        Align::Right => format!("{text:>width$}"),
    }
}

/// Latency percentiles, a row per distribution: the latency table's
/// standard rows and columns, those columns that fit `width`.
fn latency_table(o: &mut String, r: &RunResult, width: usize) {
    let t = table::latency(r).at(Detail::Standard);
    let (cols, hidden, w) = latency_columns(&t.columns, width);
    o.push_str(&pad(&t.title, 16, t.label_align));
    for &i in &cols {
        o.push_str(&pad(&t.columns[i].head, w, t.columns[i].align));
    }
    o.push('\n');
    for row in &t.rows {
        let texts = t.texts(row);
        let _ = write!(o, "  {}", pad(&esc(&row.label), 14, t.label_align));
        for &i in &cols {
            o.push_str(&pad(&texts[i], w, t.columns[i].align));
        }
        o.push('\n');
    }
    if !hidden.is_empty() {
        // Where else they are: Markdown shows the headline columns alone
        // (mean, the percentiles, max), so not there; it had been named.
        let names: Vec<&str> = hidden.iter().map(|&i| t.columns[i].head.as_str()).collect();
        let _ = writeln!(o, "  ({} on a wider terminal, and in -o, --html and --csv)", names.join(", "));
    }
    o.push('\n');
}

/// The intervals (`summary.intervals`): the headline distributions'
/// percentiles, as many columns as fit `width` (the median and the
/// highest first), then the rates and the attainment on one line, and
/// what the intervals assume.
fn intervals_block(o: &mut String, r: &RunResult, width: usize) {
    let (Some(iv), Some(t)) = (crate::intervals::of(r), crate::intervals::latency(r)) else { return };
    let t = t.at(Detail::Headline);
    // Wide enough for the widest interval and two spaces before it: a
    // 15-column cell had run "[36212, 36212] [36212, 36702]" together.
    let widest = t.rows.iter().flat_map(|row| t.texts(row)).map(|s| s.chars().count()).max().unwrap_or(0);
    let w = (widest + 2).max(15);
    let room = (width.saturating_sub(18) / w).max(1);
    // The median, then from the highest percentile down.
    let mut order: Vec<usize> = (0..t.columns.len()).collect();
    order.sort_by_key(|&i| (t.columns[i].key != "p50", std::cmp::Reverse(i)));
    let mut cols: Vec<usize> = order.into_iter().take(room).collect();
    cols.sort_unstable();
    if !t.rows.is_empty() {
        o.push_str(&pad(&t.title, 18, t.label_align));
        for &i in &cols {
            o.push_str(&pad(&t.columns[i].head, w, Align::Right));
        }
        o.push('\n');
        for row in &t.rows {
            let texts = t.texts(row);
            let _ = write!(o, "  {}", pad(&esc(&row.label), 16, t.label_align));
            for &i in &cols {
                o.push_str(&pad(&texts[i], w, Align::Right));
            }
            o.push('\n');
        }
    }
    if let Some(rates) = crate::intervals::rates(r) {
        let parts: Vec<String> = rates
            .at(Detail::Headline)
            .rows
            .iter()
            .map(|row| format!("{} {}", row.label, rates.texts(row)[1]))
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(o, "  {}", parts.join(" · "));
        }
    }
    if crate::intervals::has_unbounded(r, Detail::Headline) {
        let _ = writeln!(o, "  ({})", crate::intervals::UNBOUNDED);
    }
    let _ = writeln!(o, "  ({})", crate::intervals::assumption(r, iv));
    o.push('\n');
}

/// Throughput, in-flight requests, token counts and where they came from.
/// The spread of the headline figures over the runs of `--runs N`: a row
/// per figure, its mean, standard deviation, range and interval of the mean.
fn repeats_block(o: &mut String, r: &RunResult) {
    let (Some(rep), Some(t)) = (r.repeats.as_ref(), crate::repeats::spread(r)) else { return };
    let t = t.at(Detail::Standard);
    let (head, rows) = t.grid();
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    widths[0] = widths[0].max(16);
    for (i, h) in head.iter().enumerate() {
        let align = if i == 0 { Align::Left } else { Align::Right };
        let _ = write!(o, "{}{}", if i == 0 { "" } else { "  " }, pad(h, widths[i] + 2 * usize::from(i == 0), align));
    }
    o.push('\n');
    for row in &rows {
        let _ = write!(o, "  {}", pad(&esc(&row[0]), widths[0], Align::Left));
        for (i, c) in row.iter().enumerate().skip(1) {
            let _ = write!(o, "  {}", pad(c, widths[i], Align::Right));
        }
        o.push('\n');
    }
    let _ = writeln!(o, "  ({})", crate::repeats::note(rep));
    o.push('\n');
}

/// The output tokens that failed and cancelled requests streamed, which
/// the rates leave out, where they are 5% or more of all the run's
/// streamed output (a timed run that cut long answers at its end reads a
/// rate below what the server made): how many, and the rate with them.
fn uncounted_output(r: &RunResult) -> Option<String> {
    let (tok, n) = (&r.summary.tokens, &r.summary.requests);
    let left = tok.output_all.checked_sub(tok.output).filter(|&k| k > 0)?;
    if (left as f64) < 0.05 * tok.output_all as f64 || crate::metric::no_output(&r.summary) {
        return None;
    }
    let whose = match (n.cancelled, n.failed) {
        (0, f) => format!("{f} failed"),
        (c, 0) => format!("{c} cancelled"),
        (c, f) => format!("{c} cancelled and {f} failed"),
    };
    let with = if r.window.duration_s > 0.0 {
        format!("; with them, {:.1} output tok/s", tok.output_all as f64 / r.window.duration_s)
    } else {
        String::new()
    };
    Some(format!(
        "{left:>12}   output tokens of the {whose} requests ({:.0}% of all streamed), left out of the rates{with}",
        100.0 * left as f64 / tok.output_all as f64
    ))
}

fn throughput(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    let th = &s.throughput;
    let pooled = crate::metric::no_output(s);
    let _ = writeln!(o, "throughput");
    let _ = writeln!(o, "  requests/s      {:>12.3}", th.requests_per_s);
    if !pooled {
        let _ = writeln!(o, "  output tok/s    {:>12.1}   ({})", th.output_tokens_per_s, format::peak_text(r));
    }
    let _ = writeln!(o, "  input tok/s     {:>12.1}", th.input_tokens_per_s);
    if !pooled {
        let _ = writeln!(o, "  total tok/s     {:>12.1}", th.total_tokens_per_s);
    }
    let _ = writeln!(o, "  in flight       {:>12.1}   (peak {})", s.in_flight.mean, s.in_flight.peak);
    let tok = &s.tokens;
    let sources = |m: &std::collections::BTreeMap<String, u64>| {
        let s: Vec<String> = m.iter().map(|(k, n)| format!("{} {n}", esc(k))).collect();
        if s.is_empty() {
            "-".to_string()
        } else {
            s.join(", ")
        }
    };
    // Where each chunk's tokens came from, said when it was not the server.
    let per_chunk = match tok.chunk_sources.keys().map(String::as_str).collect::<Vec<_>>()[..] {
        [] | ["continuous_usage"] => String::new(),
        _ => format!("; per chunk: {}", sources(&tok.chunk_sources)),
    };
    if pooled {
        let _ = writeln!(o, "  tokens          {:>12}   in (counted by: {})", tok.input, sources(&tok.input_sources));
    } else {
        let _ = writeln!(
            o,
            "  tokens          {:>12}   in / {} out (output counted by: {}; input by: {}{per_chunk})",
            tok.input,
            tok.output,
            sources(&tok.output_sources),
            sources(&tok.input_sources)
        );
    }
    if let Some(line) = uncounted_output(r) {
        let _ = writeln!(o, "  not counted     {line}");
    }
    // Bursts are news only where some chunk carried more than one token.
    if let Some(c) = tok.per_chunk.as_ref().filter(|c| c.max > 1) {
        let _ = writeln!(
            o,
            "  tokens/chunk    {:>12.2}   mean (p50 {}, p90 {}, p99 {}, max {}; {:.0}% of {} chunks carried more than one)",
            c.mean,
            c.p50,
            c.p90,
            c.p99,
            c.max,
            c.multi_token_share * 100.0,
            c.chunks
        );
    }
    if let Some(extra) = tok.prompt_extra.as_ref().and_then(|e| format::prompt_extra(e, r.config.client.as_ref())) {
        let _ = writeln!(o, "  prompt extra    {}", esc(&extra));
    }
    if let Some(images) = format::multimodal(s) {
        let _ = writeln!(o, "  images          {images}");
    }
    if let Some(c) = &r.client {
        let _ = writeln!(o, "  client CPU      {}", format::client_cost(c));
    }
    if let Some(c) = &r.client_stalls {
        let _ = writeln!(o, "  client stalls   {}", format::client_stalls(c));
    }
    if s.shared_read_chunks > 0 {
        let _ = writeln!(
            o,
            "  shared reads    {:>12}   output chunks came in one read with the chunk before them (gaps not seen)",
            s.shared_read_chunks
        );
    }
    if let Some(b) = format::bound_chunks(s) {
        let _ = writeln!(o, "  late reads      {b}");
    }
    if crate::metric::Dist::ErrorAdjustedTtft.present(s) {
        let ea = &s.error_adjusted;
        let _ = writeln!(
            o,
            "  error-adjusted  TTFT p50 {} · p99 {} ms (a failure counts as ∞)",
            format::adjusted(&ea.ttft_ms, 50.0),
            format::adjusted(&ea.ttft_ms, 99.0)
        );
    }
}

/// The latencies as a user would rate them, and the reading speed.
fn user_view(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    if crate::metric::no_output(s) {
        return;
    }
    let rt = &s.ratings;
    let band = |x: &Option<goodput_core::analysis::ratings::Rated>| {
        x.map(|x| format!("{} ({:.1} ms)", format!("{:?}", x.band).to_lowercase(), x.value_ms)).unwrap_or("-".into())
    };
    let _ = writeln!(
        o,
        "\nuser view: TTFT p50 {} · p95 {} · TPOT p50 {} · p95 {}",
        band(&rt.ttft_p50),
        band(&rt.ttft_p95),
        band(&rt.tpot_p50),
        band(&rt.tpot_p95)
    );
    // Rated over the successes: a run with a fifth of its requests failed
    // had read "excellent" with no word of them.
    if let Some(f) = crate::format::rated_over(s) {
        let _ = writeln!(o, "  {f}");
    }
    if let Some(x) = rt.times_reading_speed {
        let lm = &rt.latency_model;
        let _ = writeln!(
            o,
            "  streams at {x:.1}× human reading speed · e2e p50 {} ms vs TTFT + TPOT × (n − k_first) = {} ms ({})",
            num(lm.measured_e2e_p50_ms),
            num(lm.model_e2e_p50_ms),
            lm.relative_deviation.map(|e| format!("{:+.1}%", e * 100.0)).unwrap_or("-".into())
        );
    }
}

fn slo_lines(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    if let (Some(slo), Some(g)) = (&r.slo, &s.goodput) {
        let _ = writeln!(o, "\nSLO {}: {}", esc(&slo.spec), if slo.pass { "PASS" } else { "FAIL" });
        if crate::metric::no_output(s) {
            // No output to count as good, nor work done on it.
            let _ = writeln!(
                o,
                "  goodput {:.3} req/s · {} {:.1}%",
                g.requests_per_s,
                slo.goodput_share_label(),
                g.slo_attainment * 100.0
            );
        } else {
            let _ = writeln!(
                o,
                "  goodput {:.3} req/s · {:.1} output tok/s · {} {:.1}% · useful work {:.1}%",
                g.requests_per_s,
                g.output_tokens_per_s,
                slo.goodput_share_label(),
                g.slo_attainment * 100.0,
                g.useful_work * 100.0
            );
        }
        if let Some(a) = &slo.attainment {
            let label = esc(&limits_label(slo));
            // A label past its column goes with its count as prose, which
            // wraps at words (a run of spaces keeps what precedes it whole).
            let gap = if label.chars().count() > 24 { " " } else { "   " };
            let _ = writeln!(
                o,
                "  {:<24} {} of {} good ({:.1}%, target {:.1}%){gap}{}",
                label,
                a.good_requests,
                a.judged_requests,
                a.measured * 100.0,
                a.target * 100.0,
                if a.pass { "pass" } else { "FAIL" }
            );
        }
        for ob in &slo.objectives {
            let _ = writeln!(
                o,
                "  {:<24} measured {:>10} ms   {}",
                esc(&ob.objective),
                format::objective_measured(ob),
                format::objective_verdict(ob, r, "pass", "FAIL")
            );
        }
        for q in &slo.quality {
            let _ = writeln!(
                o,
                "  {:<24} measured {:>10}      {}",
                esc(&q.objective),
                q.measured.map(|m| format!("{m:.3}")).unwrap_or("-".into()),
                if q.pass { "pass" } else { "FAIL" }
            );
        }
        for l in &slo.unscored {
            let _ = writeln!(o, "  {:<24} no answer scored by it   FAIL", esc(l));
        }
    }
}

/// What the attainment judges: the per-request limits, or, for an SLO of
/// percentile objectives with an attainment of its own, every threshold.
pub(crate) fn limits_label(slo: &goodput_core::SloReport) -> String {
    slo.attainment_label()
}

/// The cost per million good output tokens, as the cost lines end with it:
/// only where an SLO said which tokens are good (without one every token
/// counted, and the figure, the cost per output token again, had been
/// printed as if judged).
pub(crate) fn good_cost(r: &RunResult, usd: String) -> String {
    if r.slo.is_some() {
        format!(" · {usd} per M good output tokens")
    } else {
        String::new()
    }
}

fn cost_line(o: &mut String, r: &RunResult) {
    if let Some(c) = &r.cost {
        // Significant digits, as the Markdown has: a small price had read "$0.000".
        let usd = |v: Option<f64>| v.map(crate::format::usd).unwrap_or("-".into());
        if crate::metric::no_output(&r.summary) {
            let _ = writeln!(
                o,
                "\ncost (${}/GPU-hour × {}): {} per M input tokens · {} per request",
                crate::format::gpu_hour(c.gpu_hour_usd),
                c.gpus,
                usd(c.usd_per_million_input_tokens),
                usd(c.usd_per_request)
            );
            return;
        }
        let per_session = c.usd_per_session.map(|_| format!(" · {} per session", usd(c.usd_per_session)));
        let _ = writeln!(
            o,
            "\ncost (${}/GPU-hour × {}): {} per M output tokens · {} per M total · {} per request{}{}",
            crate::format::gpu_hour(c.gpu_hour_usd),
            c.gpus,
            usd(c.usd_per_million_output_tokens),
            usd(c.usd_per_million_total_tokens),
            usd(c.usd_per_request),
            per_session.unwrap_or_default(),
            good_cost(r, usd(c.usd_per_million_good_output_tokens))
        );
    }
}

fn vllm_line(o: &mut String, r: &RunResult) {
    if crate::metric::no_output(&r.summary) {
        return;
    }
    let v = &r.compat.vllm;
    let _ = writeln!(
        o,
        "\nvLLM view: mean TTFT {} · median TPOT {} · mean ITL {} ms · {:.1} output tok/s",
        num(v.mean_ttft_ms),
        num(v.median_tpot_ms),
        num(v.mean_itl_ms),
        v.output_throughput
    );
    if let Some(why) = vllm_ttft_note(r) {
        let _ = writeln!(o, "  {why}");
    }
}

/// Why vLLM's TTFT is far below goodput's, when it is: vLLM (0.33.0, which
/// `compat.vllm` follows) stamps the first payload it counts as output, an
/// empty `content` included but a role-only chunk skipped, and goodput the
/// first token.
pub fn vllm_ttft_note(r: &RunResult) -> Option<String> {
    let (theirs, ours) = (r.compat.vllm.mean_ttft_ms?, r.summary.ttft_ms.mean?);
    (ours - theirs > 1.0 && theirs < 0.9 * ours).then(|| {
        format!(
            "vLLM's TTFT ({theirs:.2} ms) is its first chunk with output or an empty content (a role-only one \
             skipped, as vLLM 0.33 does); goodput's ({ours:.2} ms) is the first token: this server sends an empty \
             chunk before its first token"
        )
    })
}

/// Multi-turn sessions: how many finished, what one took, and each turn's
/// context and TTFT as the history grew.
fn sessions(o: &mut String, s: &goodput_core::analysis::session::SessionSummary, ps: &[f64]) {
    // The tail shown beside the median: the highest percentile asked for.
    let tail = ps.last().copied().unwrap_or(99.0);
    let _ = write!(
        o,
        "\nsessions: {} started · {} completed · {} failed · {} cut short",
        s.started, s.completed, s.failed, s.cut
    );
    let _ = writeln!(o, " · {:.3} completed/s", s.per_s);
    if s.completed > 0 {
        let secs = crate::format::seconds_of_ms;
        let _ = writeln!(
            o,
            "  a session: {} turns on average · {} p50 · {} p{tail} from its first question to its last answer",
            num(s.turns.mean),
            secs(s.duration_ms.p(50.0)),
            secs(s.duration_ms.p(tail)),
        );
    }
    let cached = s.by_turn.iter().any(|t| t.cached_tokens_mean.is_some());
    let _ = write!(o, "  {:<6}{:>9}{:>14}", "turn", "requests", "input tokens");
    if cached {
        let _ = write!(o, "{:>10}", "cached");
    }
    let _ = writeln!(o, "{:>14}{:>14}", "TTFT p50 ms", format!("TTFT p{tail} ms"));
    // Long sessions: the first turns, then the last ones.
    let n = s.by_turn.len();
    for (i, t) in s.by_turn.iter().enumerate() {
        if n > 12 && i == 8 {
            let _ = writeln!(o, "  {:<6}", "…");
        }
        if n > 12 && (8..n - 3).contains(&i) {
            continue;
        }
        let _ = write!(o, "  {:<6}{:>9}{:>14.0}", t.turn, t.requests, t.input_tokens_mean);
        if cached {
            let _ = write!(o, "{:>10}", t.cached_tokens_mean.map(|c| format!("{c:.0}")).unwrap_or("-".into()));
        }
        let _ = writeln!(o, "{:>14}{:>14}", num(t.ttft_ms.p(50.0)), num(t.ttft_ms.p(tail)));
    }
}

/// The answers' scores against their references, and how alike repeated
/// prompts came back.
fn quality(o: &mut String, q: &goodput_core::quality::QualitySummary) {
    if q.scores.requests_scored > 0 {
        let (header, rows) = format::quality_table(q);
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                rows.iter().map(|r| esc(&r[i]).chars().count()).chain([header[i].chars().count()]).max().unwrap_or(0)
            })
            .collect();
        o.push_str(
            "
quality (means with 95% interval; BLEU and chrF corpus 0–100)
",
        );
        for row in std::iter::once(&header).chain(&rows) {
            let _ = write!(o, "  {:<w$}", esc(&row[0]), w = widths[0]);
            for (i, c) in row.iter().enumerate().skip(1) {
                let _ = write!(o, "  {:>w$}", c, w = widths[i]);
            }
            o.push('\n');
        }
    }
    if let Some(c) = &q.consistency {
        let _ = writeln!(
            o,
            "{}consistency: {}",
            if q.scores.requests_scored > 0 { "  " } else { "\n" },
            format::consistency_line(c)
        );
    }
}

/// A run spread over several models: each one's requests, speed and latency.
fn by_model(o: &mut String, rows: &[goodput_core::analysis::models::ModelStats], ps: &[f64], width: usize) {
    let (header, cells) = table::by_model(rows, ps).grid();
    let name = |c: &str| esc(c).chars().count();
    let first = cells.iter().map(|r| name(&r[0])).max().unwrap_or(5).clamp(5, 40);
    let col = |i: usize| header[i].chars().count().max(8) + 2;
    // The columns after the name in as few stacked tables as fit `width`,
    // each repeating the name: on a narrow terminal the table is cut in
    // two rather than wrapped.
    let mut parts: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = 2 + first;
    for i in 1..header.len() {
        let last = parts.last_mut().expect("one part at least");
        if used + col(i) > width && !last.is_empty() {
            parts.push(Vec::new());
            used = 2 + first;
        }
        parts.last_mut().expect("just pushed").push(i);
        used += col(i);
    }
    o.push_str("\nby model\n");
    for (n, cols) in parts.iter().enumerate() {
        if n > 0 {
            o.push('\n');
        }
        for row in std::iter::once(&header).chain(&cells) {
            let _ = write!(o, "  {:<first$}", esc(&row[0]));
            for &i in cols {
                let _ = write!(o, "{:>w$}", row[i], w = col(i));
            }
            o.push('\n');
        }
    }
}

/// The simulated engine's own view of an estimate, in two lines.
pub fn engine_lines(e: &goodput_core::doc::engine::SimulatedEngine) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nengine (simulated): {} steps · mean batch {:.1} seqs / {:.0} tokens (max {}) · KV capacity {} tokens{}, peak use {:.1}%",
        e.steps,
        e.mean_batch_seqs,
        e.mean_batch_tokens,
        e.max_batch_seqs,
        e.kv_capacity_tokens,
        e.kv_rank_tokens.map(|t| format!(" ({t} a rank, the most one request holds)")).unwrap_or_default(),
        e.kv_usage_max * 100.0
    );
    let _ = writeln!(
        o,
        "  {} {} · prefix cache hit rate {} · busy {:.1}% of {:.2} s",
        e.preemptions_word(),
        e.preemptions,
        e.prefix_cache_hit_rate.map(|r| format!("{:.1}%", r * 100.0)).unwrap_or("-".into()),
        100.0 * e.busy_s / e.makespan_s.max(1e-9),
        e.makespan_s
    );
    if let Some(busy) = e.frontend_busy_s {
        // The busier of the two is the bottleneck.
        let pace = if busy > e.busy_s { ": busier than the engine, it set the pace" } else { "" };
        let share = 100.0 * busy / e.makespan_s.max(1e-9);
        let _ = writeln!(o, "  front end busy {share:.1}% of the run (its serial work){pace}");
    }
    if !e.replicas.is_empty() {
        for (pool, replicas) in crate::engine::pools(e) {
            let (spread, each) = crate::engine::replica_spread(replicas, e.makespan_s);
            let spread = spread.map_or("—".into(), |x| format!("{x:.2}"));
            // A dense model's replicas behind the server's own balancer:
            // SGLang's controller by its method, or vLLM's front end.
            let by = match (&e.config.load_balance_method, &e.config.router) {
                (Some(m), None) if e.config.balances_replicas() => format!(" · SGLang's controller by {m}"),
                (_, None) if e.config.internal_lb => format!(
                    " · {}",
                    goodput_core::doc::config::vllm_balancer_words(e.config.api_server_count.unwrap_or(1))
                ),
                _ => String::new(),
            };
            let _ = writeln!(o, "  {pool}: busiest {spread}× the mean · requests {each}{by}");
        }
    }
    if let (Some(pd), Some(pools)) = (&e.config.pd, e.config.pools_routed()) {
        let mean = e.kv_transfer_mean_s.map(|s| format!(" · KV transfer mean {:.2} ms", s * 1e3)).unwrap_or_default();
        let _ = writeln!(
            o,
            "  disaggregated: {pools} · KV link {} Gb/s per GPU ({}), {} µs a transfer{mean}",
            pd.kv_link_gbps, pd.kv_link, pd.kv_link_latency_us
        );
    }
    let c = &e.config;
    if c.pp > 1 || c.ep > 1 {
        let (tp, pp, dp) = (c.tp.max(1), c.pp.max(1), c.dp.max(1));
        match &c.pd {
            // Disaggregated: the pools' instances are the replicas.
            Some(pd) => {
                let n = pd.prefill.saturating_add(pd.decode);
                // An expert-parallel instance is a group of EP / TP ranks.
                let ranks = (c.ep / tp).max(1);
                let of = if ranks > 1 { format!(" of {ranks} ranks") } else { String::new() };
                let gpus = pd.gpus(tp, c.ep, pp);
                let _ = match (pd.decode_tp, pd.decode_ep) {
                    (None, None) => write!(o, "  parallelism: TP {tp} × PP {pp} × {n} instances{of} = {gpus} GPUs"),
                    _ => write!(o, "  parallelism: PP {pp} × ({}) = {gpus} GPUs", pd.pools_words(tp, c.ep)),
                };
            }
            None => {
                let _ = write!(o, "  parallelism: TP {tp} × PP {pp} × DP {dp} = {} GPUs", tp * pp * dp);
            }
        }
        if pp > 1 {
            let _ = write!(o, " · {pp} pipeline stages, up to {pp} micro-batches in flight");
        }
        match (c.ep / tp).max(1) {
            _ if c.ep <= 1 => {}
            1 => {
                let _ = write!(o, " · EP {}: experts over {} GPUs", c.ep, c.ep);
            }
            ranks => {
                let _ = write!(o, " · EP {}: experts over {} GPUs, {ranks} ranks stepped together", c.ep, c.ep);
            }
        }
        if let Some(m) = &c.load_balance_method {
            let _ = write!(o, " · SGLang's {} by {m}", crate::engine::balanced(c));
        }
        o.push('\n');
    }
    o
}

/// The server's side of the run, when its metrics were scraped.
fn server_lines(o: &mut String, sig: &goodput_core::prometheus::scrape::ServerSignals) {
    use goodput_core::prometheus::scrape::{CounterSignal as C, GaugeSignal as G};
    let w = &sig.window;
    let engine = sig.engine.map_or("unrecognised", |e| e.name());
    let of = match sig.urls.len() {
        0 | 1 => String::new(),
        n => format!(" of {n} URLs"),
    };
    let _ = write!(o, "\nserver ({engine}, {} scrapes{of})", sig.scrapes);
    let g = |g: G| w.gauges.get(&g);
    let mut parts = Vec::new();
    if let Some((m, peak)) = g(G::RunningRequests).and_then(|d| Some((d.mean?, d.max.unwrap_or(0.0)))) {
        parts.push(format!("running mean {m:.1} (peak {peak:.0})"));
    }
    if let Some((m, peak)) = g(G::WaitingRequests).and_then(|d| Some((d.mean?, d.max.unwrap_or(0.0)))) {
        parts.push(format!("waiting mean {m:.1} (peak {peak:.0})"));
    }
    if let Some(m) = g(G::KvCacheUsage).and_then(|d| d.max) {
        // One decimal, as Markdown and HTML give it: a peak of 0.57% is not 1%.
        // Of the cache's tokens where the server says how many.
        let of = g(G::KvCacheTokens).and_then(|d| d.max).map(|t| format!(" of {t:.0} tokens")).unwrap_or_default();
        parts.push(format!("KV peak {:.1}%{of}", m * 100.0));
    }
    if let Some(h) = w.prefix_cache_hit_rate {
        parts.push(format!("prefix hits {:.1}%", h * 100.0));
    }
    if let Some(p) = w.counters.get(&C::Preemptions) {
        parts.push(format!("{:.0} preemptions", p.delta));
    }
    if parts.is_empty() {
        let _ = writeln!(o, ": no recognised engine signals");
    } else {
        let _ = writeln!(o, ": {}", parts.join(" · "));
    }
    for n in sig.cross_check.iter().flat_map(|c| &c.notes) {
        let _ = writeln!(o, "  cross-check: {}", esc(n));
    }
    if sig.failed_scrapes > 0 {
        let _ =
            writeln!(o, "  {} scrapes failed: {}", sig.failed_scrapes, esc(sig.last_error.as_deref().unwrap_or("")));
    }
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.abs() >= 1e5 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    }
}

fn api_line(r: &RunResult) -> String {
    let streaming = r.config.client.as_ref().is_none_or(|c| c.stream);
    format!("{}, {}", esc(&r.target.api), if streaming { "streaming" } else { "non-streaming" })
}

/// A one-line description of the load from the config block.
pub fn load_line(config: &RunConfig) -> String {
    let l = config.load.clone().unwrap_or_default();
    let mut parts = Vec::new();
    let sessions = l.sessions.as_ref();
    // With sessions a rate starts sessions.
    let per = if sessions.is_some() { "sessions/s" } else { "req/s" };
    let arrival = || l.arrival.as_deref().unwrap_or("poisson");
    if let Some(t) = &l.trace {
        let cap = l.concurrency.map(|c| format!(" capped at {c} in flight")).unwrap_or_default();
        parts.push(format!("trace replay of {} at {}×{cap}", esc(t), l.trace_speed.unwrap_or(1.0)));
    } else {
        match (l.concurrency, l.rate) {
            // An unbounded rate: everything is due at once.
            (Some(c), Some(r)) if r.is_unbounded() => {
                parts.push(format!("open loop, all at once, capped at {c} in flight"))
            }
            (None, Some(r)) if r.is_unbounded() => parts.push("open loop, all at once".into()),
            (Some(c), Some(Rate(r))) => {
                parts.push(format!("open loop {r} {per} ({}) capped at {c} in flight", arrival()))
            }
            (Some(c), None) => parts.push(format!("closed loop, concurrency {c}")),
            (None, Some(Rate(r))) => parts.push(format!("open loop {r} {per} ({})", arrival())),
            (None, None) => {}
        }
    }
    let unit = if sessions.is_some() { "sessions" } else { "requests" };
    // A stretch of the run re-analysed: the run's count is not this one's.
    match (l.requests, &config.report_window) {
        (Some(n), Some(w)) => parts.push(format!("--window {} of a run of {n} {unit}", esc(w))),
        (None, Some(w)) => parts.push(format!("--window {}", esc(w))),
        (Some(n), None) => parts.push(format!("{n} {unit}")),
        (None, None) => {}
    }
    if let Some(s) = sessions {
        parts.push(format!("{} turns each, {} think time", s.turns, s.think_time));
    }
    if let Some(d) = &l.duration {
        parts.push(format!("for {d}"));
    }
    if let Some(w) = l.warmup.filter(|&w| w > 0) {
        parts.push(format!("+{w} warm-up"));
    }
    if let Some(r) = &l.ramp_up {
        parts.push(format!("ramping up over {r}"));
    }
    if let Some(w) = &l.warmup_time {
        parts.push(format!("after {w} of warm-up"));
    }
    if let Some(c) = &l.cancel {
        parts.push(format!("{}% given up on after {}", (c.rate * 1e4).round() / 100.0, esc(&c.after)));
    }
    let w = config.workload.clone().unwrap_or_default();
    // An embeddings or rerank run's texts a request; it asks for no output.
    let pooled = config.client.as_ref().and_then(|c| match c.api.as_str() {
        "embeddings" => Some(match c.embed_batch.unwrap_or(1) {
            1 => "1 input a request".to_string(),
            n => format!("{n} inputs a request"),
        }),
        "rerank" | "tei-rerank" => Some(match c.rerank_docs.unwrap_or(1) {
            1 => "a query and 1 document a request".to_string(),
            n => format!("a query and {n} documents a request"),
        }),
        _ => None,
    });
    if let Some(d) = &w.dataset {
        parts.push(format!("dataset {d}"));
    } else if let (Some(i), Some(p)) = (&w.input_tokens, &pooled) {
        parts.push(format!("input {i} tokens"));
        parts.push(p.clone());
        return parts.join(" · ");
    } else if let (Some(i), Some(o)) = (&w.input_tokens, &w.output_tokens) {
        if sessions.is_some() {
            parts.push(format!("questions of {i} · answers of {o} tokens"));
        } else {
            parts.push(format!("input {i} · output {o} tokens"));
        }
    } else if let Some(t) = &w.trace {
        // A mean to a tenth where it has one (8.5 had been shown as 8).
        let mean = |m: f64| if (m - m.round()).abs() < 0.05 { format!("{m:.0}") } else { format!("{m:.1}") };
        parts.push(format!(
            "input {} · output {} tokens on average",
            mean(t.input_tokens_mean),
            mean(t.output_tokens_mean)
        ));
    }
    parts.extend(pooled);
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_load_line_says_what_share_is_given_up_on_and_when() {
        let config: RunConfig = serde_json::from_value(json!({
            "load": {"concurrency": 8, "requests": 40, "cancel": {"rate": 0.125, "after": "300ms"}},
            "workload": {"input_tokens": "256", "output_tokens": "128"},
        }))
        .unwrap();
        assert_eq!(
            load_line(&config),
            "closed loop, concurrency 8 · 40 requests · 12.5% given up on after 300ms · input 256 · output 128 tokens"
        );
    }

    /// The KV-cache peak has one decimal, as Markdown and HTML give it: a
    /// peak of 0.57% had been printed `KV peak 1%` beside their 0.6%.
    #[test]
    fn the_kv_peak_has_the_precision_of_the_other_formats() {
        use goodput_core::prometheus::scrape::GaugeSignal;
        let mut sig = goodput_core::prometheus::scrape::ServerSignals::default();
        let peak = goodput_core::analysis::stats::Distribution::from_samples(&mut [0.002, 0.0057], &[50.0]);
        sig.window.gauges.insert(GaugeSignal::KvCacheUsage, peak);
        let mut o = String::new();
        server_lines(&mut o, &sig);
        assert!(o.contains("KV peak 0.6% ·") || o.ends_with("KV peak 0.6%\n"), "{o}");
        // Of the cache's size where the server gives it.
        let size = goodput_core::analysis::stats::Distribution::from_samples(&mut [2560.0, 2560.0], &[50.0]);
        sig.window.gauges.insert(GaugeSignal::KvCacheTokens, size);
        let mut o = String::new();
        server_lines(&mut o, &sig);
        assert!(o.contains("KV peak 0.6% of 2560 tokens"), "{o}");
        let engine = goodput_core::doc::engine::SimulatedEngine { kv_usage_max: 0.0057, ..Default::default() };
        let lines = engine_lines(&engine);
        assert!(lines.contains("peak use 0.6%"), "{lines}");
    }

    #[test]
    fn the_engine_lines_say_when_the_front_end_was_busier_than_the_engine() {
        let engine = |front: Option<f64>| goodput_core::doc::engine::SimulatedEngine {
            busy_s: 6.0,
            makespan_s: 10.0,
            frontend_busy_s: front,
            ..Default::default()
        };
        assert!(!engine_lines(&engine(None)).contains("front end"));
        let idle = engine_lines(&engine(Some(2.5)));
        assert!(idle.contains("front end busy 25.0% of the run") && !idle.contains("pace"), "{idle}");
        let pacing = engine_lines(&engine(Some(8.0)));
        assert!(
            pacing
                .contains("front end busy 80.0% of the run (its serial work): busier than the engine, it set the pace"),
            "{pacing}"
        );
    }
}
