//! Live client-side metrics for `--prometheus-listen`: bucketed histograms
//! updated as each request completes and rendered as Prometheus text under
//! OpenTelemetry's GenAI names. Bucketed, so approximate; the run's own
//! figures stay exact.

use crate::analysis::metrics::RequestMetrics;
use crate::doc::record::{Outcome, RequestRecord};
use std::fmt::Write;
use std::sync::Mutex;

/// Bucket bounds in seconds, from OpenTelemetry's GenAI conventions.
const DURATION_BUCKETS: &[f64] =
    &[0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const CHUNK_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5];
const TOKEN_BUCKETS: &[f64] =
    &[1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0];

#[derive(Debug, Clone)]
struct Hist {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Hist {
    fn new(bounds: &'static [f64]) -> Self {
        Hist { bounds, counts: vec![0; bounds.len()], sum: 0.0, count: 0 }
    }

    fn observe(&mut self, v: f64) {
        if let Some(i) = self.bounds.iter().position(|&b| v <= b) {
            self.counts[i] += 1;
        }
        self.sum += v;
        self.count += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cum = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            cum += c;
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {cum}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Debug)]
struct State {
    duration: Hist,
    ttfc: Hist,
    per_chunk: Hist,
    input_tokens: Hist,
    output_tokens: Hist,
    outcomes: std::collections::BTreeMap<String, u64>,
}

/// Live metrics of one running client.
#[derive(Debug)]
pub struct LiveMetrics {
    labels: String,
    state: Mutex<State>,
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl LiveMetrics {
    /// `operation` is OpenTelemetry's `gen_ai.operation.name` (`chat`, `text_completion`).
    pub fn new(operation: &str, model: &str, server: &str) -> Self {
        LiveMetrics {
            labels: format!(
                "gen_ai_operation_name=\"{}\",gen_ai_request_model=\"{}\",server_address=\"{}\"",
                escape(operation),
                escape(model),
                escape(server)
            ),
            state: Mutex::new(State {
                duration: Hist::new(DURATION_BUCKETS),
                ttfc: Hist::new(DURATION_BUCKETS),
                per_chunk: Hist::new(CHUNK_BUCKETS),
                input_tokens: Hist::new(TOKEN_BUCKETS),
                output_tokens: Hist::new(TOKEN_BUCKETS),
                outcomes: Default::default(),
            }),
        }
    }

    /// Counts one completed request.
    pub fn observe(&self, r: &RequestRecord) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let outcome = match &r.outcome {
            Outcome::Success => "success".to_string(),
            Outcome::Failed { kind, .. } => kind.to_string(),
            Outcome::Cancelled => "cancelled".to_string(),
        };
        *s.outcomes.entry(outcome).or_default() += 1;
        s.duration.observe(r.end.saturating_sub(r.sent).as_secs_f64());
        if let Some(t) = r.ttft() {
            s.ttfc.observe(t.as_secs_f64());
        }
        for g in r.chunk_gaps() {
            s.per_chunk.observe(g.as_secs_f64());
        }
        if r.outcome.is_success() {
            s.input_tokens.observe(r.input_tokens as f64);
            s.output_tokens.observe(r.output_tokens as f64);
        }
    }

    /// Prometheus text 0.0.4.
    pub fn render(&self) -> String {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let l = &self.labels;
        let mut o = String::new();
        let head = |o: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(
            &mut o,
            "gen_ai_client_operation_duration_seconds",
            "histogram",
            "GenAI operation duration (request sent to end).",
        );
        s.duration.render(&mut o, "gen_ai_client_operation_duration_seconds", l);
        head(
            &mut o,
            "gen_ai_client_operation_time_to_first_chunk_seconds",
            "histogram",
            "Time to the first output-bearing chunk.",
        );
        s.ttfc.render(&mut o, "gen_ai_client_operation_time_to_first_chunk_seconds", l);
        head(
            &mut o,
            "gen_ai_client_operation_time_per_output_chunk_seconds",
            "histogram",
            "Time between consecutive output chunks.",
        );
        s.per_chunk.render(&mut o, "gen_ai_client_operation_time_per_output_chunk_seconds", l);
        head(&mut o, "gen_ai_client_token_usage", "histogram", "Tokens per request, by type.");
        s.input_tokens.render(&mut o, "gen_ai_client_token_usage", &format!("{l},gen_ai_token_type=\"input\""));
        s.output_tokens.render(&mut o, "gen_ai_client_token_usage", &format!("{l},gen_ai_token_type=\"output\""));
        head(&mut o, "goodput_requests_total", "counter", "Requests finished, by outcome.");
        for (k, n) in &s.outcomes {
            let _ = writeln!(o, "goodput_requests_total{{{l},outcome=\"{k}\"}} {n}");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::{Channel, OutputChunk};
    use std::time::Duration;

    #[test]
    fn renders_histograms_with_otel_names() {
        let m = LiveMetrics::new("chat", "m\"x", "127.0.0.1:1");
        let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.chunks = vec![
            OutputChunk { t: Duration::from_millis(150), tokens: 1, channel: Channel::Content },
            OutputChunk { t: Duration::from_millis(170), tokens: 1, channel: Channel::Content },
        ]
        .into();
        r.end = Duration::from_millis(171);
        r.input_tokens = 10;
        r.output_tokens = 2;
        r.outcome = Outcome::Success;
        m.observe(&r);
        let t = m.render();
        assert!(t.contains("gen_ai_request_model=\"m\\\"x\""));
        assert!(t.contains("gen_ai_client_operation_time_to_first_chunk_seconds_bucket{gen_ai_operation_name=\"chat\""));
        assert!(t.contains("le=\"0.16\"} 1"), "150 ms lands in the 0.16 s bucket: {t}");
        assert!(t.contains("gen_ai_token_type=\"output\""));
        assert!(t.contains("outcome=\"success\"} 1"));
    }
}
