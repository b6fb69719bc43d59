//! Markdown fit for a pull request or an issue: the headline tables (latency
//! percentiles, throughput, SLO verdicts, diagnosis, failures, cost, server
//! signals, the simulated engine) in GitHub-flavoured Markdown, every string
//! from the document escaped.

use super::{ExportError, Exporter, Rendered};
use crate::compare::{mark, Comparison, Verdict};
use crate::engine::{self, EngineView};
use crate::escape::markdown as md;
use crate::format;
use crate::metric::Unit;
use crate::series;
use crate::server::{self, Figure, SignalsView};
use crate::table::{Align, Cell, Detail, Mark, Table};
use crate::terminal::load_line;
use goodput_core::analysis::ratings::Rated;
use goodput_core::doc::sweep::{PointRef, SweepResult};
use goodput_core::RunResult;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, Default)]
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn render_run(&self, run: &RunResult) -> Result<Rendered, ExportError> {
        Ok(Rendered::File(run_markdown(run).into_bytes()))
    }

    fn render_sweep(&self, sweep: &SweepResult) -> Result<Rendered, ExportError> {
        Ok(Rendered::File(sweep_markdown(sweep).into_bytes()))
    }

    fn render_compare(&self, c: &Comparison, _runs: &[&RunResult]) -> Result<Rendered, ExportError> {
        Ok(Rendered::File(compare_markdown(c).into_bytes()))
    }
}

fn check(pass: bool) -> &'static str {
    if pass {
        "✅"
    } else {
        "❌"
    }
}

fn rated(r: &Option<Rated>) -> String {
    r.map(|r| format!("{} ms ({})", format::ms(Some(r.value_ms)), format!("{:?}", r.band).to_lowercase()))
        .unwrap_or("-".into())
}

/// One run.
pub fn run_markdown(r: &RunResult) -> String {
    let mut o = String::new();
    heading(&mut o, r);
    latency_table(&mut o, r);
    intervals(&mut o, r);
    repeats(&mut o, r);
    throughput_table(&mut o, r);
    slo_section(&mut o, r);
    diagnosis(&mut o, r);
    failures(&mut o, r);
    sessions(&mut o, r);
    by_model(&mut o, r);
    quality(&mut o, r);
    cost(&mut o, r);
    if let Some(e) = &r.energy {
        let _ = writeln!(o, "**Energy**: {}\n", md(&format::energy(e)));
    }
    user_view(&mut o, r);
    server_signals(&mut o, r);
    simulated_engine(&mut o, r);
    if !r.warnings.is_empty() {
        o.push('\n');
        for w in &r.warnings {
            let _ = writeln!(o, "> ⚠️ {}", md(w));
        }
    }
    o
}

/// The title and the target, load, window and requests.
fn heading(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    let q = &s.requests;
    let t = &r.target;
    match r.config.label.as_deref() {
        Some(l) => writeln!(o, "### goodput {}: {} · {}\n", md(&r.kind), md(l), md(&t.model)),
        None => writeln!(o, "### goodput {}: {}\n", md(&r.kind), md(&t.model)),
    }
    .ok();
    let embedded = if t.embedded { " (embedded simulator)" } else { "" };
    let _ = writeln!(o, "- **Target** {}{embedded} · {}", md(&t.url), md(&t.api));
    let load = load_line(&r.config);
    if !load.is_empty() {
        let _ = writeln!(o, "- **Load** {}", md(&load));
    }
    let _ = writeln!(
        o,
        "- **Window** {:.2} s · {}{}",
        r.window.duration_s,
        format::started(r.started_unix_s),
        if r.interrupted { " · **interrupted: partial result**" } else { "" }
    );
    let mut req = format!("- **Requests** {} sent · {} completed · {} failed", q.sent, q.completed, q.failed);
    if q.cancelled > 0 {
        let _ = write!(req, " · {} cancelled", q.cancelled);
    }
    if q.warmup > 0 {
        let _ = write!(req, " · {} warm-up (excluded)", q.warmup);
    }
    let _ = writeln!(o, "{req}");
    if let Some(stop) = crate::format::stop_text(r) {
        let _ = writeln!(o, "- **Stopped** {}", md(&stop));
    }
    if let Some(st) = &s.stability {
        let _ = writeln!(o, "- **Stability** {} {}", check(st.steady), md(&crate::terminal::stability_text(st)));
    }
    o.push('\n');
}

/// Latency percentiles, a row per distribution: the latency table's
/// headline rows and columns.
fn latency_table(o: &mut String, r: &RunResult) {
    table(o, &crate::table::latency(r).at(Detail::Headline));
    o.push('\n');
}

/// How sure each figure is: the headline percentiles' intervals, the
/// rates' and the attainment's, and what they assume.
fn intervals(o: &mut String, r: &RunResult) {
    let Some(iv) = crate::intervals::of(r) else { return };
    if let Some(t) = crate::intervals::latency(r) {
        table(o, &t.at(Detail::Headline));
        o.push('\n');
    }
    if let Some(t) = crate::intervals::rates(r) {
        table(o, &t.at(Detail::Headline));
        o.push('\n');
    }
    let mut note = crate::intervals::assumption(r, iv);
    if crate::intervals::has_unbounded(r, Detail::Headline) {
        note = format!("{note}. {}", crate::intervals::UNBOUNDED);
    }
    let _ = writeln!(o, "_{}._\n", md(&note));
}

/// The spread of the headline figures over the runs of `--runs N`.
fn repeats(o: &mut String, r: &RunResult) {
    let (Some(rep), Some(t)) = (r.repeats.as_ref(), crate::repeats::spread(r)) else { return };
    table(o, &t.at(Detail::Headline));
    o.push('\n');
    let _ = writeln!(o, "_{}._\n", md(&crate::repeats::note(rep)));
}

/// A table: its title and heads as they are (ours), its labels and text
/// escaped, a verdict marked ✅ or ❌, the recommended row in bold and the
/// saturation in italics beside its label.
fn table(o: &mut String, t: &Table) {
    let rule = |a: Align| match a {
        Align::Left => " --- |",
        Align::Right => " ---: |",
    };
    let _ = write!(o, "| {} |", t.title);
    for c in &t.columns {
        let _ = write!(o, " {} |", c.head);
    }
    let _ = write!(o, "\n|{}", rule(t.label_align));
    for c in &t.columns {
        o.push_str(rule(c.align));
    }
    o.push('\n');
    for row in &t.rows {
        let _ = write!(o, "| {}", md(&row.label));
        for m in &row.marks {
            let _ = match m {
                Mark::Recommended => write!(o, " **({})**", m.word()),
                Mark::Saturation => write!(o, " _({})_", m.word()),
            };
        }
        o.push_str(" |");
        for (cell, text) in row.cells.iter().zip(t.texts(row)) {
            let text = match cell {
                Cell::Verdict { pass: Some(true), .. } => format!("✅ {text}"),
                Cell::Verdict { pass: Some(false), .. } => format!("❌ {text}"),
                _ => md(&text),
            };
            let _ = write!(o, " {text} |");
        }
        o.push('\n');
    }
}

/// Throughput, in flight, and tokens.
fn throughput_table(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    let th = &s.throughput;
    o.push_str("| throughput | |\n| --- | ---: |\n");
    let _ = writeln!(o, "| requests/s | {:.3} |", th.requests_per_s);
    // A run without output (embeddings, rerank) has no output rate.
    let pooled = s.no_output();
    if !pooled {
        let _ = writeln!(o, "| output tok/s | {:.1} ({}) |", th.output_tokens_per_s, md(&format::peak_text(r)));
    }
    let _ = writeln!(o, "| input tok/s | {:.1} |", th.input_tokens_per_s);
    if !pooled {
        let _ = writeln!(o, "| total tok/s | {:.1} |", th.total_tokens_per_s);
    }
    let _ = writeln!(o, "| in flight | {:.2} mean · {} peak |", s.in_flight.mean, s.in_flight.peak);
    let _ = writeln!(o, "| tokens | {} in · {} out |", s.tokens.input, s.tokens.output);
    if let Some(extra) = s.tokens.prompt_extra.as_ref().and_then(|e| format::prompt_extra(e, r.config.client.as_ref()))
    {
        let _ = writeln!(o, "| prompt extra | {} |", md(&extra));
    }
    if let Some(images) = format::multimodal(s) {
        let _ = writeln!(o, "| images | {} |", md(&images));
    }
    if let Some(c) = &r.client {
        let _ = writeln!(o, "| client CPU | {} |", md(&format::client_cost(c)));
    }
    if let Some(c) = &r.client_stalls {
        let _ = writeln!(o, "| client stalls | {} |", md(&format::client_stalls(c)));
    }
    if let Some(b) = format::bound_chunks(&r.summary) {
        let _ = writeln!(o, "| late reads | {} |", md(&b));
    }
    o.push('\n');
}

/// The SLO verdict, goodput and each objective.
fn slo_section(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    if let Some(slo) = &r.slo {
        let _ = write!(o, "**SLO** {}: {} {}", md(&slo.spec), check(slo.pass), if slo.pass { "met" } else { "missed" });
        if let Some(g) = &s.goodput {
            let _ = write!(
                o,
                " · goodput {:.3} req/s, {:.1} tok/s · {} {} ({} of {} good) · useful work {}",
                g.requests_per_s,
                g.output_tokens_per_s,
                slo.goodput_share_label(),
                format::value(Some(g.slo_attainment), Unit::Ratio),
                g.good_requests,
                g.judged_requests,
                format::value(Some(g.useful_work), Unit::Ratio)
            );
        }
        o.push_str("\n\n");
        if let Some(a) = &slo.attainment {
            let _ = writeln!(
                o,
                "Requests meeting {}: {} of {} ({}), target {}: {} {}\n",
                md(&crate::terminal::limits_label(slo)),
                a.good_requests,
                a.judged_requests,
                format::value(Some(a.measured), Unit::Ratio),
                format::value(Some(a.target), Unit::Ratio),
                check(a.pass),
                if a.pass { "pass" } else { "fail" }
            );
        }
        if !slo.objectives.is_empty() {
            o.push_str("| objective | limit (ms) | measured (ms) | verdict |\n| --- | ---: | ---: | --- |\n");
            for ob in &slo.objectives {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} {} |",
                    md(&ob.objective),
                    format::ms(Some(ob.limit_ms)),
                    format::objective_measured(ob),
                    check(ob.pass),
                    md(&format::objective_verdict(ob, r, "pass", "fail"))
                );
            }
            o.push('\n');
        }
        if !slo.quality.is_empty() || !slo.unscored.is_empty() {
            o.push_str("| quality objective | measured | verdict |\n| --- | ---: | --- |\n");
            for q in &slo.quality {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} {} |",
                    md(&q.objective),
                    q.measured.map(|m| format!("{m:.3}")).unwrap_or("-".into()),
                    check(q.pass),
                    if q.pass { "pass" } else { "fail" }
                );
            }
            for l in &slo.unscored {
                let _ = writeln!(o, "| {} | no answer scored by it | {} fail |", md(l), check(false));
            }
            o.push('\n');
        }
    }
}

fn diagnosis(o: &mut String, r: &RunResult) {
    if !r.diagnosis.is_empty() {
        o.push_str("**Diagnosis**\n\n");
        for d in &r.diagnosis {
            let _ = writeln!(o, "- ⚠️ {}", md(&d.message));
        }
        o.push('\n');
    }
}

/// Failures by kind, and the commonest messages.
fn failures(o: &mut String, r: &RunResult) {
    let q = &r.summary.requests;
    if q.errors_by_kind.is_empty() {
        o.push_str("**Failures** none\n\n");
    } else {
        let kinds: Vec<String> = q.errors_by_kind.iter().map(|(k, n)| format!("{} {n}", md(k))).collect();
        let _ = writeln!(o, "**Failures** {}\n", kinds.join(" · "));
        let msgs = series::failure_messages(r, 10);
        if !msgs.is_empty() {
            o.push_str("| kind | count | message |\n| --- | ---: | --- |\n");
            for (k, m, n) in msgs {
                let short: String = m.chars().take(200).collect();
                let more = if m.chars().count() > 200 { "…" } else { "" };
                let _ = writeln!(o, "| {} | {n} | {}{more} |", md(&k), md(&short));
            }
            o.push('\n');
        }
    }
}

/// Multi-turn sessions, a row per turn.
fn sessions(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    if let Some(ss) = &s.sessions {
        let _ = writeln!(
            o,
            "**Sessions** {} started · {} completed · {} failed · {} cut short · {:.3} completed/s · p50 {} from first question to last answer\n",
            ss.started,
            ss.completed,
            ss.failed,
            ss.cut,
            ss.per_s,
            format::seconds_of_ms(ss.duration_ms.p(50.0))
        );
        o.push_str(
            "| turn | requests | input tokens | cached | TTFT p50 (ms) |\n| ---: | ---: | ---: | ---: | ---: |\n",
        );
        for t in &ss.by_turn {
            let cached = t.cached_tokens_mean.map(|c| format!("{c:.0}")).unwrap_or("-".into());
            let _ = writeln!(
                o,
                "| {} | {} | {:.0} | {cached} | {} |",
                t.turn,
                t.requests,
                t.input_tokens_mean,
                format::ms(t.ttft_ms.p(50.0))
            );
        }
        o.push('\n');
    }
}

/// The answers' scores against their references, and consistency.
fn quality(o: &mut String, r: &RunResult) {
    let Some(q) = &r.summary.quality else { return };
    if q.scores.requests_scored > 0 {
        let (header, rows) = format::quality_table(q);
        let _ = writeln!(
            o,
            "**Quality** (means with 95% interval; BLEU and chrF corpus 0–100)\n\n| {} |",
            header.join(" | ")
        );
        let _ = writeln!(o, "| --- |{}", " ---: |".repeat(header.len() - 1));
        for row in &rows {
            let row: Vec<String> = row.iter().map(|c| md(c)).collect();
            let _ = writeln!(o, "| {} |", row.join(" | "));
        }
        o.push('\n');
    }
    if let Some(c) = &q.consistency {
        let _ = writeln!(o, "**Consistency** {}\n", md(&format::consistency_line(c)));
    }
}

/// A run spread over several models: a row per model.
fn by_model(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    if !s.by_model.is_empty() {
        o.push_str("**By model**\n\n");
        table(o, &crate::table::by_model(&s.by_model, &crate::table::percentiles(s)));
        o.push('\n');
    }
}

fn cost(o: &mut String, r: &RunResult) {
    if let Some(c) = &r.cost {
        let usd = |v: Option<f64>| v.map(|v| md(&format::usd(v))).unwrap_or("-".into());
        if r.summary.no_output() {
            let _ = writeln!(
                o,
                "**Cost** (\\${}/GPU-hour × {}): {} per M input tokens · {} per request\n",
                format::gpu_hour(c.gpu_hour_usd),
                c.gpus,
                usd(c.usd_per_million_input_tokens),
                usd(c.usd_per_request)
            );
            return;
        }
        let _ = writeln!(
            o,
            "**Cost** (\\${}/GPU-hour × {}): {} per M output tokens · {} per M total · {} per request{}{}\n",
            format::gpu_hour(c.gpu_hour_usd),
            c.gpus,
            usd(c.usd_per_million_output_tokens),
            usd(c.usd_per_million_total_tokens),
            usd(c.usd_per_request),
            c.usd_per_session.map(|v| format!(" · {} per session", usd(Some(v)))).unwrap_or_default(),
            crate::terminal::good_cost(r, usd(c.usd_per_million_good_output_tokens))
        );
    }
}

/// The latencies as a user would rate them.
fn user_view(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    if s.no_output() {
        return;
    }
    let rt = &s.ratings;
    let _ = write!(
        o,
        "**User view** TTFT p50 {} · p95 {} · TPOT p50 {} · p95 {}",
        rated(&rt.ttft_p50),
        rated(&rt.ttft_p95),
        rated(&rt.tpot_p50),
        rated(&rt.tpot_p95)
    );
    if let Some(x) = rt.times_reading_speed {
        let _ = write!(o, " · {x:.1}× human reading speed");
    }
    if let Some(f) = crate::format::rated_over(s) {
        let _ = write!(o, " ({})", md(&f));
    }
    o.push('\n');
    // The error-adjusted figures the sentence above speaks of (it had
    // named them in a report that held none).
    if crate::metric::Dist::ErrorAdjustedTtft.present(s) {
        let ea = &s.error_adjusted;
        let _ = writeln!(
            o,
            "\n**Error-adjusted** (a failure counts as ∞) TTFT p50 {} · p99 {} ms · E2E p50 {} · p99 {} ms",
            format::adjusted(&ea.ttft_ms, 50.0),
            format::adjusted(&ea.ttft_ms, 99.0),
            format::adjusted(&ea.e2e_ms, 50.0),
            format::adjusted(&ea.e2e_ms, 99.0)
        );
    }
}

fn figures_table(o: &mut String, what: &str, figures: &[Figure]) {
    if figures.is_empty() {
        return;
    }
    let _ = writeln!(o, "| {what} | value | |\n| --- | ---: | --- |");
    for f in figures {
        let value = if f.unit.is_empty() { f.value.clone() } else { format!("{} {}", f.value, f.unit) };
        let _ = writeln!(o, "| {} | {} | {} |", md(f.label), md(&value), md(&f.detail));
    }
}

fn server_signals(o: &mut String, r: &RunResult) {
    let Some(s) = server::of(r) else { return };
    let w = &s.window;
    let engine = s.engine.map(|e| format!("engine {}", md(e.name()))).unwrap_or("no engine recognised".into());
    let urls: Vec<String> = s.urls.iter().map(|u| md(u)).collect();
    let _ = write!(
        o,
        "\n**Server signals** {engine} · {} scrapes of {}",
        s.scrapes,
        if urls.is_empty() { "-".into() } else { urls.join(", ") }
    );
    if s.interval_s > 0.0 {
        let _ = write!(o, " every {} s", s.interval_s);
    }
    let _ = write!(o, " · {} in the window", w.scrapes);
    if s.failed_scrapes > 0 {
        let _ = write!(o, " · {} failed", s.failed_scrapes);
        if let Some(e) = &s.last_error {
            let _ = write!(o, " (last error: {})", md(e));
        }
    }
    o.push_str("\n\n");
    let figures = s.figures();
    if figures.is_empty() {
        o.push_str("No metric the server exposed is one goodput recognises.\n");
    }
    figures_table(o, "server signal", &figures);
    if let Some(c) = &s.cross_check {
        if !c.notes.is_empty() {
            o.push('\n');
        }
        for n in &c.notes {
            let _ = writeln!(o, "- cross-check: {}", md(n));
        }
    }
}

fn simulated_engine(o: &mut String, r: &RunResult) {
    let Some(e) = engine::of(r) else { return };
    let _ = writeln!(o, "\n**Engine (simulated)** {}\n", md(&e.config_line()));
    figures_table(o, "engine (simulated)", &e.figures());
    if !e.notes.is_empty() {
        o.push('\n');
    }
    for n in &e.notes {
        let _ = writeln!(o, "- note: {}", md(n));
    }
}

fn point_line(p: &Option<PointRef>) -> String {
    match p {
        None => "-".into(),
        Some(p) => {
            let mut s = format!(
                "{} · {:.1} tok/s · TTFT p50 {} ms",
                md(&p.load.label()),
                p.output_tokens_per_s,
                format::ms(p.ttft_p50_ms)
            );
            if let Some(g) = p.goodput_tokens_per_s {
                let _ = write!(s, " · goodput {g:.1} tok/s");
            }
            if let Some(c) = p.usd_per_million_output_tokens {
                let _ = write!(s, " · {} per M", md(&format::usd(c)));
            }
            s
        }
    }
}

/// A sweep.
pub fn sweep_markdown(sw: &SweepResult) -> String {
    let mut o = String::new();
    let a = &sw.analysis;
    let _ = writeln!(o, "### goodput sweep: {}\n", md(&sw.target.model));
    let _ = writeln!(o, "- **Target** {} · {}", md(&sw.target.url), md(&sw.target.api));
    let _ = writeln!(
        o,
        "- **Points** {} · started {}{}",
        sw.points.len(),
        format::utc(sw.started_unix_s),
        if sw.interrupted { " · **interrupted: partial result**" } else { "" }
    );
    if let Some(spec) = sw.points.iter().find_map(|p| p.result.slo.as_ref().map(|s| s.spec.as_str())) {
        let _ = writeln!(o, "- **SLO** {}", md(spec));
    }
    if let Some(rec) = &a.recommendation {
        let _ = writeln!(o, "- **Recommended** {}", md(rec));
    }
    let _ = writeln!(o, "- **Saturation** {}", point_line(&a.saturation));
    let _ = writeln!(o, "- **Max throughput** {}", point_line(&a.max_throughput));
    if a.max_goodput.is_some() {
        let _ = writeln!(o, "- **Max goodput** {}", point_line(&a.max_goodput));
        let _ = writeln!(o, "- **Highest load meeting the SLO** {}", point_line(&a.highest_load_meeting_slo));
    }
    for n in &a.notes {
        let _ = writeln!(o, "- _{}_", md(n));
    }
    o.push('\n');
    table(&mut o, &crate::table::sweep_points(sw).at(Detail::Headline));
    if let Some(t) = crate::repeats::sweep_spread(sw) {
        o.push('\n');
        table(&mut o, &t.at(Detail::Headline));
        let _ = writeln!(o, "\n_{}._", md(crate::repeats::SWEEP_NOTE));
    }
    o
}

/// A comparison: the table, then the rule verdicts.
pub fn compare_markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let labels: Vec<String> = c.labels.iter().map(|l| md(l)).collect();
    let _ = writeln!(o, "### goodput compare: {} runs, baseline {}\n", labels.len(), labels.first().map_or("-", |l| l));
    if let Some(n) = &c.note {
        let _ = writeln!(o, "> {}\n", md(n));
    }
    o.push_str("| metric |");
    for (i, l) in labels.iter().enumerate() {
        let _ = write!(o, " {l} |");
        if i > 0 {
            o.push_str(" Δ |");
        }
    }
    o.push_str("\n| --- |");
    for i in 0..labels.len() {
        o.push_str(if i > 0 { " ---: | ---: |" } else { " ---: |" });
    }
    o.push('\n');
    for row in &c.rows {
        let _ = write!(o, "| {} |", md(&row.label));
        for (i, v) in row.values.iter().enumerate() {
            let _ = write!(o, " {} |", md(&format::value(*v, row.unit)));
            if i > 0 {
                let ch = row.changes[i];
                let flag = match mark(row.better, ch) {
                    " !" => " ⚠️",
                    " +" => " ✓",
                    _ => "",
                };
                let sig = crate::compare::significance_mark(row.significance.get(i).and_then(Option::as_ref));
                let sig = if sig == "*" { "\\*" } else { sig };
                let _ = write!(o, " {}{flag}{sig} |", row.change_text(i));
            }
        }
        o.push('\n');
    }
    if !c.slo.is_empty() {
        let _ = write!(o, "| {} |", crate::compare::SLO_VERDICT);
        for (i, s) in c.slo.iter().enumerate() {
            let word = match s.pass {
                Some(true) => "✅ pass",
                Some(false) => "❌ fail",
                None => "-",
            };
            let _ = write!(o, " {word} |{}", if i > 0 { "  |" } else { "" });
        }
        o.push('\n');
    }
    // The marks' legend, as the terminal and HTML give theirs.
    if c.labels.len() > 1 {
        o.push_str("\nΔ against the baseline: ✓ better, ⚠️ worse (by 1% or more); unmarked: within 1%, or neither\n");
        if c.rows.iter().any(|r| r.significance.iter().any(Option::is_some)) {
            let _ = writeln!(o, "\n{}", md(crate::compare::SIGNIFICANCE_LEGEND));
        }
    }
    let slo = crate::compare::slo_lines(c);
    if let Some((head, each)) = slo.split_first() {
        let _ = writeln!(o, "\n**{}**\n", md(head));
        for l in each {
            let _ = writeln!(o, "- {}", md(l));
        }
    }
    if !c.answers.is_empty() {
        o.push_str("\n**Answers on the same prompts as the baseline** (change, 95% paired interval)\n\n");
        for a in &c.answers {
            let label = labels.get(a.run).map_or("?", |l| l.as_str());
            let _ = writeln!(o, "- {label}: {}", md(&crate::compare::answers_line(a)));
        }
    }
    if !c.differences.is_empty() {
        o.push_str("\n| setting that differs |");
        for l in &labels {
            let _ = write!(o, " {l} |");
        }
        o.push_str("\n| --- |");
        o.push_str(&" --- |".repeat(labels.len()));
        o.push('\n');
        for d in &c.differences {
            let _ = write!(o, "| {} |", md(&d.path));
            for v in &d.values {
                let _ = write!(o, " {} |", md(v));
            }
            o.push('\n');
        }
    }
    if !c.verdicts.is_empty() {
        o.push('\n');
        for v in &c.verdicts {
            let word = match v.verdict {
                Verdict::Pass => "✅ pass",
                Verdict::Fail => "❌ fail",
                Verdict::Unjudged => "❌ unjudged",
            };
            let _ = writeln!(
                o,
                "- {word} {} on {}: {}",
                md(&v.rule),
                c.labels.get(v.run).map_or("?".into(), |l| md(l)),
                md(&v.reason)
            );
        }
    }
    o
}
