//! Client-side token counting with a local Hugging Face `tokenizer.json`, for
//! exact prompt lengths and counts when the server gives no usage.

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
    pub fn from_file(path: &Path) -> Result<Self, String> {
        if !path.is_file() {
            return Err(format!(
                "tokenizer file {} not found: pass the path of a local tokenizer.json (goodput never downloads one)",
                path.display()
            ));
        }
        Tokenizer::from_file(path).map(|inner| TokenCounter { inner }).map_err(|e| {
            format!("cannot load tokenizer {}: {e} (expected a Hugging Face tokenizer.json)", path.display())
        })
    }

    /// Tokens in `text`, special tokens not added.
    pub fn count(&self, text: &str) -> usize {
        self.inner.encode_fast(text, false).map(|e| e.len()).unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> TokenCounter {
        TokenCounter::from_file(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tiny-bpe-tokenizer.json"
        )))
        .unwrap()
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
    fn missing_file_says_what_to_do() {
        let e = TokenCounter::from_file(Path::new("/nope/tokenizer.json")).unwrap_err();
        assert!(e.contains("local tokenizer.json"), "{e}");
    }
}
