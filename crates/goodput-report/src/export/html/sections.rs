//! The run page's sections below its charts: sessions, models, quality,
//! failures, warnings, the vLLM view and the diagnosis.

use super::charts;
use crate::escape::html;
use crate::format;
use crate::svg::{Chart, Series, Style};
use goodput_core::{RequestRecord, RunResult};
use std::fmt::Write;

pub(super) fn warnings(o: &mut String, r: &RunResult) {
    if !r.warnings.is_empty() {
        o.push_str(r#"<section><h2>Warnings</h2><ul class="warnings">"#);
        for w in &r.warnings {
            let _ = write!(o, "<li>{}</li>", html(w));
        }
        o.push_str("</ul></section>");
    }
}

/// The same run under the names and formulas of vLLM's `bench serve`.
pub(super) fn vllm_view(o: &mut String, r: &RunResult) {
    let v = &r.compat.vllm;
    let _ = write!(
        o,
        r#"<section><h2>vLLM view</h2><p class="note">The same run under the names and formulas of vLLM's <code>bench serve</code>.{}</p><div class="scroll"><table><thead><tr><th>metric (ms)</th><th>mean</th><th>median</th><th>std</th><th>p99</th></tr></thead><tbody>"#,
        crate::terminal::vllm_ttft_note(r).map(|n| format!(" {}.", html(&n))).unwrap_or_default()
    );
    for (name, vals) in [
        ("TTFT", [v.mean_ttft_ms, v.median_ttft_ms, v.std_ttft_ms, v.p99_ttft_ms]),
        ("TPOT", [v.mean_tpot_ms, v.median_tpot_ms, v.std_tpot_ms, v.p99_tpot_ms]),
        ("ITL", [v.mean_itl_ms, v.median_itl_ms, v.std_itl_ms, v.p99_itl_ms]),
        ("E2EL", [v.mean_e2el_ms, v.median_e2el_ms, v.std_e2el_ms, v.p99_e2el_ms]),
    ] {
        let _ = write!(o, "<tr><td>{name}</td>");
        for x in vals {
            let _ = write!(o, "<td>{}</td>", format::ms(x));
        }
        o.push_str("</tr>");
    }
    let _ = write!(
        o,
        "</tbody></table></div><p class=\"note\">{} completed · {:.3} req/s · {:.1} output tok/s · {:.1} total tok/s</p></section>",
        v.completed, v.request_throughput, v.output_throughput, v.total_token_throughput
    );
}

/// What the numbers suggest, right under the verdicts: the first thing to
/// read after whether the SLO held.
pub(super) fn diagnosis(o: &mut String, r: &RunResult) {
    if r.diagnosis.is_empty() {
        return;
    }
    o.push_str(r#"<section class="diagnosis"><h2>Diagnosis</h2><ul>"#);
    // Each message names its kind in its own first words.
    for d in &r.diagnosis {
        let _ = write!(o, "<li>{}</li>", html(&d.message));
    }
    o.push_str("</ul></section>");
}

/// Multi-turn sessions: what finished, what one took, and each turn as
/// its conversation grew.
pub(super) fn sessions(o: &mut String, r: &RunResult) {
    let Some(ss) = &r.summary.sessions else { return };
    let secs = format::seconds_of_ms;
    let _ = write!(
        o,
        r#"<section><h2>Sessions</h2><p>{} started · {} completed · {} failed · {} cut short · {:.3} completed per second · {} turns on average · {} p50 and {} max from a session's first question to its last answer</p>"#,
        ss.started,
        ss.completed,
        ss.failed,
        ss.cut,
        ss.per_s,
        ss.turns.mean.map(|m| format!("{m:.1}")).unwrap_or("-".into()),
        secs(ss.duration_ms.p(50.0)),
        secs(ss.duration_ms.max),
    );
    let cached = ss.by_turn.iter().any(|t| t.cached_tokens_mean.is_some());
    o.push_str(r#"<div class="scroll"><table><thead><tr><th>turn</th><th>requests</th><th>input tokens (mean)</th>"#);
    if cached {
        o.push_str("<th>served from prefix cache (mean)</th>");
    }
    o.push_str("<th>TTFT p50 (ms)</th><th>TTFT max (ms)</th></tr></thead><tbody>");
    for t in &ss.by_turn {
        let _ = write!(o, "<tr><td>{}</td><td>{}</td><td>{:.0}</td>", t.turn, t.requests, t.input_tokens_mean);
        if cached {
            let _ = write!(o, "<td>{}</td>", t.cached_tokens_mean.map(|c| format!("{c:.0}")).unwrap_or("-".into()));
        }
        let _ = write!(o, "<td>{}</td><td>{}</td></tr>", format::ms(t.ttft_ms.p(50.0)), format::ms(t.ttft_ms.max));
    }
    o.push_str("</tbody></table></div>");
    charts(o, &session_charts(ss));
    o.push_str("</section>");
}

/// The answers' scores against their references, and consistency.
pub(super) fn quality(o: &mut String, r: &RunResult) {
    let Some(q) = &r.summary.quality else { return };
    o.push_str(r#"<section><h2>Quality</h2>"#);
    if q.scores.requests_scored > 0 {
        let (header, rows) = format::quality_table(q);
        o.push_str(r#"<p class="text">Means with their 95% bootstrap interval; BLEU and chrF corpus on sacreBLEU's 0–100 scale.</p><div class="scroll"><table><thead><tr>"#);
        for h in &header {
            let _ = write!(o, "<th>{}</th>", html(h));
        }
        o.push_str("</tr></thead><tbody>");
        for row in &rows {
            o.push_str("<tr>");
            for c in row {
                let _ = write!(o, "<td>{}</td>", html(c));
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table></div>");
    }
    if let Some(c) = &q.consistency {
        let _ = write!(o, r#"<p class="text">Consistency: {}</p>"#, html(&format::consistency_line(c)));
    }
    o.push_str("</section>");
}

/// A run spread over several models: a row per model.
pub(super) fn by_model(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    if s.by_model.is_empty() {
        return;
    }
    o.push_str(r#"<section><h2>By model</h2>"#);
    super::table(o, &crate::table::by_model(&s.by_model, &crate::table::percentiles(s)), None);
    o.push_str("</section>");
}

/// TTFT and the prompt, turn by turn: what a growing conversation costs,
/// and how much of it the prefix cache served.
fn session_charts(ss: &goodput_core::analysis::session::SessionSummary) -> Vec<Chart> {
    let by = |f: &dyn Fn(&goodput_core::analysis::session::TurnStats) -> Option<f64>| -> Vec<(f64, f64)> {
        ss.by_turn.iter().filter_map(|t| Some((t.turn as f64, f(t)?))).collect()
    };
    let mut ttft = vec![Series::new("TTFT p50", Style::LineDots, 0, by(&|t| t.ttft_ms.p(50.0)))];
    let tail = ss.by_turn.first().and_then(|t| t.ttft_ms.percentiles.last()).map(|(p, _)| *p).filter(|p| *p > 50.0);
    if let Some(p) = tail {
        ttft.push(Series::new(format!("TTFT p{p}"), Style::LineDots, 1, by(&|t| t.ttft_ms.p(p))));
    }
    let mut prompt = vec![Series::new("input tokens (mean)", Style::LineDots, 2, by(&|t| Some(t.input_tokens_mean)))];
    let cached = by(&|t| t.cached_tokens_mean);
    if !cached.is_empty() {
        prompt.push(Series::new("served from the prefix cache (mean)", Style::LineDots, 3, cached));
    }
    vec![
        Chart {
            id: "session-ttft".into(),
            title: "TTFT by turn".into(),
            x_label: "turn of the session".into(),
            y_label: "TTFT (ms)".into(),
            series: ttft,
            ..Default::default()
        },
        Chart {
            id: "session-prompt".into(),
            title: "The prompt by turn".into(),
            x_label: "turn of the session".into(),
            y_label: "tokens".into(),
            series: prompt,
            note: Some("Each turn's prompt holds the conversation before it.".into()),
            ..Default::default()
        },
    ]
}

/// The failures by kind, and their messages from `recs` (the records that
/// draw the page) where there are some.
pub(super) fn failures(o: &mut String, r: &RunResult, recs: Option<&[RequestRecord]>) {
    let q = &r.summary.requests;
    o.push_str(r#"<section><h2>Failures</h2>"#);
    if q.errors_by_kind.is_empty() {
        o.push_str(r#"<p class="note">No request failed.</p></section>"#);
        return;
    }
    o.push_str(r#"<div class="scroll"><table><thead><tr><th>kind</th><th>requests</th></tr></thead><tbody>"#);
    for (k, n) in &q.errors_by_kind {
        let _ = write!(o, "<tr><td>{}</td><td>{n}</td></tr>", html(k));
    }
    o.push_str("</tbody></table></div>");
    let msgs = recs.map(|recs| crate::series::failure_messages_of(recs, 20)).unwrap_or_default();
    if !msgs.is_empty() {
        o.push_str(r#"<div class="scroll"><table class="messages"><thead><tr><th>kind</th><th>count</th><th>message</th></tr></thead><tbody>"#);
        for (k, m, n) in msgs {
            let _ = write!(o, r#"<tr><td>{}</td><td>{n}</td><td class="text mono">{}</td></tr>"#, html(&k), html(&m));
        }
        o.push_str("</tbody></table></div>");
    }
    o.push_str("</section>");
}
