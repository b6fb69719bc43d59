//! Per-request metrics, exactly as docs/metrics.md defines them. Each is a pure
//! function of one record; `None` where the record cannot define it.

use crate::doc::record::{Channel, RequestRecord};
use std::time::Duration;

/// The per-request metrics of one record.
pub trait RequestMetrics {
    /// First response byte − sent.
    fn ttfb(&self) -> Option<Duration>;
    /// First output-bearing chunk on any channel − sent.
    fn ttft(&self) -> Option<Duration>;
    /// First visible-content chunk − sent.
    fn ttft_content(&self) -> Option<Duration>;
    /// Last output-bearing chunk − sent; for a successful answer with no
    /// output chunks (a pooling one: embeddings, rerank), its body's end − sent.
    fn e2e(&self) -> Option<Duration>;
    /// (t_last − t_first) / (n_out − k_first), defined when the divisor ≥ 1.
    fn tpot(&self) -> Option<Duration>;
    /// TTFT as vLLM's `bench serve` (0.33) takes it: the first streamed
    /// payload it counts as output (text, `reasoning`, a tool call, or an
    /// empty `content` without a `role`: an empty keep-alive counts, the
    /// role-only opening chunk does not) − sent; the first output chunk
    /// where none came before it.
    fn ttft_vllm(&self) -> Option<Duration>;
    /// vLLM's request latency: the last payload it counts as output − sent.
    fn e2e_vllm(&self) -> Option<Duration>;
    /// The gaps vLLM's ITL has beyond the gaps between output chunks: from
    /// an earlier payload it counts (an empty keep-alive) to the first output
    /// chunk, and from the last output chunk to a later one it counts. vLLM
    /// appends a gap for every payload it counts after its first, so its ITL
    /// is the chunk gaps and these (none, one or two a request).
    fn vllm_edge_gaps(&self) -> Vec<Duration>;
    /// vLLM's (e2e − ttft) / (n_out − 1) on its own stamps, defined when
    /// n_out > 1.
    fn tpot_vllm(&self) -> Option<Duration>;
    /// Raw gaps between consecutive output chunks.
    fn chunk_gaps(&self) -> Vec<Duration>;
    /// Token-normalised inter-token latencies: a chunk arriving Δ after the
    /// previous one with k tokens gives k samples of Δ/k.
    fn itl_samples(&self) -> Vec<Duration>;
    /// The same samples as `(Δ/k, k)`, one pair a chunk: what the summary
    /// and the charts read, so that a server claiming billions of tokens in
    /// a chunk costs one pair, not billions of samples.
    fn itl_repeated(&self) -> Vec<(Duration, u64)>;
    /// The longest gap between output chunks within the request.
    fn itl_max(&self) -> Option<Duration>;
    /// sent − scheduled: the client's own lateness.
    fn client_queue(&self) -> Duration;
}

impl RequestMetrics for RequestRecord {
    fn ttfb(&self) -> Option<Duration> {
        self.first_byte.map(|t| t.saturating_sub(self.sent))
    }

    fn ttft(&self) -> Option<Duration> {
        self.chunks.first().map(|c| c.t.saturating_sub(self.sent))
    }

    fn ttft_content(&self) -> Option<Duration> {
        self.chunks.iter().find(|c| c.channel == Channel::Content).map(|c| c.t.saturating_sub(self.sent))
    }

    fn e2e(&self) -> Option<Duration> {
        match self.chunks.last() {
            Some(c) => Some(c.t.saturating_sub(self.sent)),
            None if self.outcome.is_success() => Some(self.stream_end.unwrap_or(self.end).saturating_sub(self.sent)),
            None => None,
        }
    }

    fn tpot(&self) -> Option<Duration> {
        let (first, last) = (self.chunks.first()?, self.chunks.last()?);
        let after_first = self.output_tokens.checked_sub(first.tokens as u64)?;
        if after_first == 0 {
            return None;
        }
        Some(div(last.t.saturating_sub(first.t), after_first))
    }

    fn ttft_vllm(&self) -> Option<Duration> {
        let first = self.chunks.first()?.t;
        Some(self.first_choice.map_or(first, |c| c.min(first)).saturating_sub(self.sent))
    }

    fn e2e_vllm(&self) -> Option<Duration> {
        let Some(last) = self.chunks.last().map(|c| c.t) else { return self.e2e() };
        Some(self.last_choice.map_or(last, |c| c.max(last)).saturating_sub(self.sent))
    }

    fn vllm_edge_gaps(&self) -> Vec<Duration> {
        let (Some(first), Some(last)) = (self.chunks.first(), self.chunks.last()) else { return Vec::new() };
        let before = self.first_choice.filter(|&c| c < first.t).map(|c| first.t - c);
        let after = self.last_choice.filter(|&c| c > last.t).map(|c| c - last.t);
        before.into_iter().chain(after).collect()
    }

    fn tpot_vllm(&self) -> Option<Duration> {
        if self.output_tokens <= 1 {
            return None;
        }
        let span = self.e2e_vllm()?.saturating_sub(self.ttft_vllm()?);
        Some(div(span, self.output_tokens - 1))
    }

    fn chunk_gaps(&self) -> Vec<Duration> {
        self.chunks.pairs().map(|(a, b)| b.t.saturating_sub(a.t)).collect()
    }

    fn itl_samples(&self) -> Vec<Duration> {
        self.itl_repeated().into_iter().flat_map(|(per, k)| std::iter::repeat_n(per, k as usize)).collect()
    }

    /// Each chunk's gap from the last chunk before it that carried tokens
    /// (the first chunk, whatever it carried, when none did), shared among
    /// its tokens: the time a chunk of none took is the next token's, and
    /// the samples sum to the decode span, last chunk − first.
    fn itl_repeated(&self) -> Vec<(Duration, u64)> {
        let mut chunks = self.chunks.iter();
        let Some(mut from) = chunks.next().map(|c| c.t) else { return Vec::new() };
        chunks
            .filter(|c| c.tokens > 0)
            .map(|c| {
                let gap = c.t.saturating_sub(from);
                from = c.t;
                (div(gap, c.tokens as u64), c.tokens as u64)
            })
            .collect()
    }

    fn itl_max(&self) -> Option<Duration> {
        self.chunks.max_gap()
    }

    fn client_queue(&self) -> Duration {
        self.sent.saturating_sub(self.scheduled)
    }
}

fn div(d: Duration, n: u64) -> Duration {
    Duration::from_nanos((d.as_nanos() / n as u128) as u64)
}

/// Milliseconds as f64, the unit of every exported latency.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::{Outcome, OutputChunk};

    fn rec(sent_ms: u64, chunks: &[(u64, u32)], n_out: u64) -> RequestRecord {
        let mut r =
            RequestRecord::new(0, Duration::from_millis(sent_ms.saturating_sub(2)), Duration::from_millis(sent_ms));
        r.first_byte = Some(Duration::from_millis(sent_ms + 1));
        r.chunks = chunks
            .iter()
            .map(|&(t, k)| OutputChunk { t: Duration::from_millis(t), tokens: k, channel: Channel::Content })
            .collect();
        r.output_tokens = n_out;
        r.outcome = Outcome::Success;
        r
    }

    /// (chunks as (t_ms, k), n_out, ttft, e2e, tpot, tpot_vllm, itl samples, itl_max), sent at 100 ms.
    #[test]
    fn formulas_table() {
        type Case = (
            &'static [(u64, u32)],
            u64,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            &'static [f64],
            Option<f64>,
        );
        let cases: &[Case] = &[
            // The fixed profile: 150 ms to first, 2 tokens every 20 ms, 8 tokens.
            (
                &[(250, 2), (270, 2), (290, 2), (310, 2)],
                8,
                Some(150.0),
                Some(210.0),
                Some(10.0),
                Some(60.0 / 7.0),
                &[10.0; 6],
                Some(20.0),
            ),
            // One token per chunk: tpot == vLLM's formula.
            (
                &[(150, 1), (160, 1), (180, 1)],
                3,
                Some(50.0),
                Some(80.0),
                Some(15.0),
                Some(15.0),
                &[10.0, 20.0],
                Some(20.0),
            ),
            // Single chunk with everything (non-streaming): no tpot, no itl.
            (&[(400, 5)], 5, Some(300.0), Some(300.0), None, Some(0.0), &[], None),
            // One token in total.
            (&[(120, 1)], 1, Some(20.0), Some(20.0), None, None, &[], None),
            // Uneven chunks: a 3-token chunk after 30 ms gives three 10 ms samples.
            (
                &[(200, 1), (230, 3), (240, 1)],
                5,
                Some(100.0),
                Some(140.0),
                Some(10.0),
                Some(10.0),
                &[10.0, 10.0, 10.0, 10.0],
                Some(30.0),
            ),
            // Continuous usage: 2 tokens every 40 ms, each chunk followed 10 ms
            // later by one whose running count did not rise (0 tokens). The
            // next token's gap counts from the last chunk with tokens.
            (
                &[(200, 2), (210, 0), (240, 2), (250, 0), (280, 2), (290, 0)],
                6,
                Some(100.0),
                Some(190.0),
                Some(22.5),
                Some(18.0),
                &[20.0; 4],
                Some(30.0),
            ),
            // No output at all (failed: a successful one is a pooling answer).
            (&[], 0, None, None, None, None, &[], None),
        ];
        for (i, (chunks, n, ttft, e2e, tpot, tpot_v, itl, itl_max)) in cases.iter().enumerate() {
            let mut r = rec(100, chunks, *n);
            if chunks.is_empty() {
                r.outcome = Outcome::Failed { kind: crate::FailureKind::EmptyOutput, message: String::new() };
            }
            let f = |d: Option<Duration>| d.map(ms);
            let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-6,
                (None, None) => true,
                _ => false,
            };
            assert!(close(f(r.ttft()), *ttft), "case {i} ttft {:?}", r.ttft());
            assert!(close(f(r.e2e()), *e2e), "case {i} e2e");
            assert!(close(f(r.tpot()), *tpot), "case {i} tpot {:?}", r.tpot());
            assert!(close(f(r.tpot_vllm()), *tpot_v), "case {i} tpot_vllm {:?}", r.tpot_vllm());
            let got: Vec<f64> = r.itl_samples().into_iter().map(ms).collect();
            assert_eq!(got.len(), itl.len(), "case {i} itl {got:?}");
            for (g, w) in got.iter().zip(itl.iter()) {
                assert!((g - w).abs() < 1e-6, "case {i} itl {got:?}");
            }
            assert!(close(f(r.itl_max()), *itl_max), "case {i} itl_max");
            assert_eq!(r.ttfb(), Some(Duration::from_millis(1)));
            assert_eq!(r.client_queue(), Duration::from_millis(2));
        }
    }

    #[test]
    fn a_pooling_answer_is_timed_to_its_body_s_end_and_has_no_ttft() {
        // An embeddings answer: success, no output chunks, the body read at 180 ms.
        let mut r = rec(100, &[], 0);
        r.stream_end = Some(Duration::from_millis(180));
        r.end = Duration::from_millis(181);
        assert_eq!((r.e2e(), r.e2e_vllm()), (Some(Duration::from_millis(80)), Some(Duration::from_millis(80))));
        assert_eq!((r.ttft(), r.tpot(), r.tpot_vllm(), r.itl_max()), (None, None, None, None));
        r.stream_end = None;
        assert_eq!(r.e2e(), Some(Duration::from_millis(81)), "no stamp of the body: the request's end");
    }

    #[test]
    fn ttft_content_skips_reasoning() {
        let mut r = rec(0, &[(10, 1), (20, 1), (30, 1)], 3);
        let reasoning =
            |(i, c): (usize, OutputChunk)| if i < 2 { OutputChunk { channel: Channel::Reasoning, ..c } } else { c };
        r.chunks = r.chunks.iter().enumerate().map(reasoning).collect();
        assert_eq!(r.ttft(), Some(Duration::from_millis(10)));
        assert_eq!(r.ttft_content(), Some(Duration::from_millis(30)));
    }

    #[test]
    fn vllm_stamps_at_the_first_and_last_choice() {
        // A keep-alive with an empty choice at 75 ms of a true 150 ms TTFT,
        // and a finish-reason chunk 5 ms after the last token.
        let mut r = rec(100, &[(250, 1), (260, 1), (270, 1)], 3);
        assert_eq!((r.ttft_vllm(), r.e2e_vllm()), (r.ttft(), r.e2e()));
        r.first_choice = Some(Duration::from_millis(175));
        r.last_choice = Some(Duration::from_millis(275));
        assert_eq!(r.ttft_vllm(), Some(Duration::from_millis(75)));
        assert_eq!(r.e2e_vllm(), Some(Duration::from_millis(175)));
        // (175 − 75) / 2, against goodput's 10 ms a token.
        assert_eq!(r.tpot_vllm(), Some(Duration::from_millis(50)));
        assert_eq!((r.ttft(), r.tpot()), (Some(Duration::from_millis(150)), Some(Duration::from_millis(10))));
        // vLLM's ITL counts the keep-alive to the first token, and the last
        // token to the finish chunk, beside the gaps between chunks.
        assert_eq!(r.vllm_edge_gaps(), [Duration::from_millis(75), Duration::from_millis(5)]);
        r.last_choice = None;
        assert_eq!(r.vllm_edge_gaps(), [Duration::from_millis(75)]);
    }
}
