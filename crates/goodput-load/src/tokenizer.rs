//! Client-side token counting with a local Hugging Face `tokenizer.json`, for
//! exact prompt lengths and counts when the server gives no usage.

use crate::error::{TokenizerError, Unusable};
use std::path::Path;
use tokenizers::Tokenizer;

/// A loaded tokenizer.
pub struct TokenCounter {
    inner: Tokenizer,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter")
    }
}

impl TokenCounter {
    pub fn from_file(path: &Path) -> Result<Self, TokenizerError> {
        if !path.exists() {
            return Err(TokenizerError::NotFound { path: path.to_owned() });
        }
        let cap = goodput_core::util::input::TOKENIZER_CAP;
        let bytes = goodput_core::util::input::read_file(path, "--tokenizer", cap)?;
        let t = Tokenizer::from_bytes(bytes)
            .map(|inner| TokenCounter { inner })
            .map_err(|e| TokenizerError::Load { path: path.to_owned(), reason: e.to_string() })?;
        t.check().map_err(|reason| TokenizerError::Unusable { path: path.to_owned(), reason })?;
        Ok(t)
    }

    /// That it turns the words prompts are made of into tokens: one that
    /// cannot (an empty vocabulary, an encoding error) could neither count an
    /// answer nor build a prompt of the length asked, which then grows
    /// without end.
    fn check(&self) -> Result<(), Unusable> {
        let probe = crate::words::WORDS.join(" ");
        match self.inner.encode_fast(probe.as_str(), false) {
            Err(e) => Err(Unusable::CannotEncode(e.to_string())),
            Ok(enc) if enc.is_empty() => Err(Unusable::NoTokens { probe: probe.chars().take(40).collect() }),
            Ok(_) => Ok(()),
        }
    }

    /// Tokens in `text`, special tokens not added.
    pub fn count(&self, text: &str) -> usize {
        self.inner.encode_fast(text, false).map(|e| e.len()).unwrap_or(0)
    }

    /// Each chunk's tokens counted in context, as the server's tokenizer
    /// produced them: the tokens of the output up to and including the chunk,
    /// less those up to the chunk before it. A piece of text tokenised on its
    /// own splits otherwise (half a word, a leading space, a merge across the
    /// boundary), so counting chunks apart does not add up to the answer.
    ///
    /// Returns the counts and the whole output's count; the counts always sum
    /// to it. Adding text can merge tokens and lower a prefix's count; such a
    /// chunk counts 0 and the drop is taken from the chunks before it (each
    /// prefix counts at most what every longer prefix counts), so no count is
    /// negative.
    ///
    /// Linear in the output's length: each prefix is counted over a window
    /// that starts at a word boundary a little before its end (about
    /// [`WINDOW`] bytes plus the chunk), on top of the count up to the window.
    /// A window's own start may tokenise apart from its context (a prefix
    /// space), but it does so the same way for every prefix counted in that
    /// window, so the differences between them are the in-context ones.
    pub fn in_context_counts<S: AsRef<str>>(&self, chunks: &[S]) -> (Vec<u32>, u64) {
        let mut text = String::new();
        // Prefix count = base + tokens of text[anchor..].
        let (mut anchor, mut base) = (0usize, 0i64);
        let mut prefix = Vec::with_capacity(chunks.len());
        for c in chunks {
            text.push_str(c.as_ref());
            let n = base + self.count(&text[anchor..]) as i64;
            prefix.push(n);
            if text.len() - anchor > WINDOW {
                if let Some(a) = self.boundary_before(&text[anchor..], KEEP) {
                    anchor += a;
                    base = n - self.count(&text[anchor..]) as i64;
                }
            }
        }
        let total = self.count(&text) as u64;
        (monotone_steps(&mut prefix, total), total)
    }

    /// A token boundary in `window` that leaves at least `keep` bytes after
    /// it, as late as possible: the start of a pre-tokenizer word if there is
    /// one, else a token next to whitespace, else any token.
    fn boundary_before(&self, window: &str, keep: usize) -> Option<usize> {
        let limit = window.len().checked_sub(keep)?;
        let enc = self.inner.encode(window, false).ok()?;
        let (offsets, words) = (enc.get_offsets(), enc.get_word_ids());
        let mut best: [Option<usize>; 3] = [None; 3];
        for (j, &(start, _)) in offsets.iter().enumerate().skip(1) {
            if start == 0 || start > limit || !window.is_char_boundary(start) {
                continue;
            }
            let tier = if words.get(j) != words.get(j - 1) {
                0
            } else if window[..start].ends_with(char::is_whitespace) || window[start..].starts_with(char::is_whitespace)
            {
                1
            } else {
                2
            };
            best[tier] = Some(best[tier].map_or(start, |b: usize| b.max(start)));
        }
        best.into_iter().flatten().next()
    }

    /// The longest prefix of `text` that holds exactly `n` tokens, or `None`
    /// when `text` holds fewer.
    pub fn truncate(&self, text: &str, n: usize) -> Option<String> {
        let enc = self.inner.encode(text, false).ok()?;
        if enc.len() < n {
            return None;
        }
        if n == 0 {
            return Some(String::new());
        }
        let end = enc.get_offsets()[n - 1].1;
        Some(text.get(..end)?.to_owned())
    }
}

/// Bytes of output a counting window grows to before it moves on. Each chunk
/// re-counts its window, so this sets the cost: with a byte-level BPE, 31 µs
/// an output token at 256 bytes (KEEP 64), 16 µs at 96 (KEEP 32), against
/// 1.8 µs for counting each chunk apart (`examples/chunk_count_cost.rs`).
const WINDOW: usize = 96;
/// Bytes of context a window keeps behind its end when it moves: its start
/// is a pre-tokenizer word's start at least this far back, so a word is
/// never cut; the property test checks the counts against every prefix
/// counted whole.
const KEEP: usize = 32;

/// Per-chunk steps of a run of prefix counts ending at `total`: each prefix
/// is first lowered to the least count of any prefix after it (and `total`),
/// so the steps are never negative and sum to `total`.
fn monotone_steps(prefix: &mut [i64], total: u64) -> Vec<u32> {
    let mut least = total as i64;
    for p in prefix.iter_mut().rev() {
        least = least.min(*p).max(0);
        *p = least;
    }
    if let Some(last) = prefix.last_mut() {
        *last = total as i64;
    }
    let mut before = 0;
    prefix
        .iter()
        .map(|&p| {
            let k = (p - before) as u32;
            before = p;
            k
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> TokenCounter {
        TokenCounter::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)).unwrap()
    }

    fn tiny() -> TokenCounter {
        fixture("tiny-bpe-tokenizer.json")
    }

    /// The three kinds of tokenizer the counts must hold for: a whitespace
    /// pre-tokenizer, GPT-2's byte level (a word keeps its leading space) and
    /// Llama 2's (a "▁" prepended to the whole text, no pre-tokenizer, bytes
    /// as <0xXX> tokens).
    fn kinds() -> Vec<(&'static str, TokenCounter)> {
        ["tiny-bpe-tokenizer.json", "bytelevel-bpe-tokenizer.json", "spm-bpe-tokenizer.json"]
            .into_iter()
            .map(|n| (n, fixture(n)))
            .collect()
    }

    /// What [`TokenCounter::in_context_counts`] computes, the slow way: every
    /// prefix counted whole.
    fn counted_whole(t: &TokenCounter, chunks: &[String]) -> Vec<u32> {
        let mut text = String::new();
        let mut prefix: Vec<i64> = chunks
            .iter()
            .map(|c| {
                text.push_str(c);
                t.count(&text) as i64
            })
            .collect();
        monotone_steps(&mut prefix, t.count(&text) as u64)
    }

    /// Splits `text` at the given fractions of its length (on char boundaries).
    fn split_at(text: &str, cuts: &[f64]) -> Vec<String> {
        let mut at: Vec<usize> = cuts
            .iter()
            .map(|f| (text.len() as f64 * f) as usize)
            .map(|mut i| {
                while !text.is_char_boundary(i) {
                    i -= 1;
                }
                i
            })
            .collect();
        at.push(0);
        at.push(text.len());
        at.sort_unstable();
        at.dedup();
        at.windows(2).map(|w| text[w[0]..w[1]].to_string()).collect()
    }

    const WORDS: &[&str] = &[
        "the", "other", "token", "server", "latency", "goodput", "a", "of", "measure", "é", "naïve", "中文", "—",
        "don't", "it's", "42", "3.14", "ITL", "TTFT", "hello", "world", "   ", "\n", "\n\n", ",", ".", "!?", "(x)",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Random texts split into random chunks: the counts are the ones of
        /// every prefix counted whole, and they sum to the whole text's count.
        #[test]
        fn chunk_counts_in_context_add_up(
            words in proptest::collection::vec((0..WORDS.len(), 0u8..4), 1..400),
            cuts in proptest::collection::vec(0.0f64..1.0, 0..200),
        ) {
            let mut text = String::new();
            for (w, sep) in words {
                text.push_str(WORDS[w]);
                text.push_str(["", " ", " ", "\n"][sep as usize]);
            }
            let chunks = split_at(&text, &cuts);
            for (name, t) in kinds() {
                let (counts, total) = t.in_context_counts(&chunks);
                proptest::prop_assert_eq!(total, t.count(&text) as u64, "{}", name);
                proptest::prop_assert_eq!(counts.iter().map(|&k| k as u64).sum::<u64>(), total, "{}", name);
                proptest::prop_assert_eq!(&counts, &counted_whole(&t, &chunks), "{}: {:?}", name, chunks);
            }
        }
    }

    #[test]
    fn a_word_split_over_chunks_counts_as_it_does_whole() {
        let t = tiny();
        // Apart, " ot" and "her" are 2 and 3 tokens; in context, "other" is
        // o + the + r, and "the" is one token.
        let chunks = ["the", " ot", "her"];
        let apart: usize = chunks.iter().map(|c| t.count(c)).sum();
        assert_eq!(apart, 6);
        let (counts, total) = t.in_context_counts(&chunks);
        assert_eq!(total, 4);
        assert_eq!(counts.iter().sum::<u32>(), 4);
        assert_eq!(counts[0], 1);
    }

    #[test]
    fn steps_never_go_negative() {
        // A prefix that counts more than a longer one (a merge across the
        // boundary) gives its extra to no chunk.
        assert_eq!(monotone_steps(&mut [1, 2, 1, 3], 3), vec![1, 0, 0, 2]);
        assert_eq!(monotone_steps(&mut [], 0), Vec::<u32>::new());
        assert_eq!(monotone_steps(&mut [2, 5], 4), vec![2, 2]);
    }

    #[test]
    fn counts_and_truncates_with_a_small_bpe() {
        let t = tiny();
        // "the" is one merged token; "other" is o + the + r.
        assert_eq!(t.count("the"), 1);
        assert_eq!(t.count("other"), 3);
        assert_eq!(t.count("the other"), 4);
        assert_eq!(t.truncate("the other", 2).as_deref(), Some("the o"));
        assert_eq!(t.truncate("the", 2), None);
    }

    #[test]
    fn a_tokenizer_that_gives_no_tokens_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.json");
        let empty = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,
            "pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
            "model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,
            "end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"vocab":{},"merges":[]}}"#;
        std::fs::write(&path, empty).unwrap();
        let e = TokenCounter::from_file(&path).unwrap_err();
        assert!(matches!(e, TokenizerError::Unusable { .. }), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("empty.json") && e.contains("gives no tokens"), "{e}");
    }

    #[test]
    fn a_device_or_a_directory_is_not_a_tokenizer() {
        // /dev/zero once read as "not found" (issue 29, defect 14), and
        // would be read without end were it opened.
        let e = TokenCounter::from_file(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("/dev/zero is a character device, not a file to read --tokenizer from"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = TokenCounter::from_file(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a folder, not a file to read --tokenizer from"), "{e}");
    }

    #[test]
    fn missing_file_says_what_to_do() {
        let e = TokenCounter::from_file(Path::new("/nope/tokenizer.json")).unwrap_err();
        assert!(matches!(e, TokenizerError::NotFound { .. }), "{e:?}");
        assert!(e.to_string().contains("local tokenizer.json"), "{e}");
    }
}
