//! The simulated engine's tokens (goodput-sim's tokenizer), which `estimate`
//! and `plan` also count a dataset's prompts by, so that they predict the
//! prompts that engine is sent: a word (a run of characters between white
//! space) is one token, and so is each character of a script written without
//! spaces between its words (Chinese, Japanese, Thai, ...), where a "word"
//! had been a whole sentence or paragraph.

/// The tokens of `text`, in order: its words, and its no-space-script
/// characters one by one.
///
/// ```
/// use goodput_core::util::words::tokens;
/// assert_eq!(tokens("say 你好 twice").collect::<Vec<_>>(), ["say", "你", "好", "twice"]);
/// assert_eq!(tokens("日本語のテキスト").count(), 8);
/// ```
pub fn tokens(text: &str) -> Tokens<'_> {
    Tokens { text, at: 0 }
}

/// How many [`tokens`] `text` holds.
pub fn count(text: &str) -> usize {
    tokens(text).count()
}

/// Whether `c` is a character of a script written without spaces between
/// words, or its punctuation: CJK ideographs, kana, CJK and full-width
/// punctuation, Thai, Lao, Khmer and Myanmar. Hangul is written with spaces,
/// so its words are words.
pub fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF // Thai, Lao
        | 0x1000..=0x109F // Myanmar
        | 0x1780..=0x17FF // Khmer
        | 0x2E80..=0x2FDF // CJK radicals, Kangxi radicals
        | 0x3000..=0x30FF // CJK symbols and punctuation, hiragana, katakana
        | 0x3100..=0x31FF // bopomofo, kanbun, CJK strokes, katakana extensions
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0xFE30..=0xFE4F // CJK compatibility forms
        | 0xFF00..=0xFFEF // half-width and full-width forms
        | 0x20000..=0x3FFFF // CJK extensions B and after
    )
}

/// The iterator of [`tokens`].
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.text[self.at..];
        let start = self.at + rest.find(|c: char| !c.is_whitespace())?;
        let mut chars = self.text[start..].char_indices();
        let (_, first) = chars.next()?;
        let end = if is_unspaced(first) {
            start + first.len_utf8()
        } else {
            chars.find(|&(_, c)| c.is_whitespace() || is_unspaced(c)).map_or(self.text.len(), |(i, _)| start + i)
        };
        self.at = end;
        Some(&self.text[start..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_tokens_and_unspaced_characters_each_one() {
        assert_eq!(count("The quick  brown\tfox\n"), 4);
        assert_eq!(count(""), 0);
        assert_eq!(count("   "), 0);
        // Chinese: a sentence with no spaces is one token a character,
        // its full-width punctuation included, not one token.
        assert_eq!(count("我们今天去公园。"), 8);
        assert_eq!(tokens("GPU是什么?").collect::<Vec<_>>(), ["GPU", "是", "什", "么", "?"]);
        // An ideographic space (U+3000) separates, and is no token.
        assert_eq!(count("東京\u{3000}大阪"), 4);
        // Thai is written without spaces between words.
        assert_eq!(count("สวัสดี"), "สวัสดี".chars().count());
        // Korean is written with spaces: its words are words.
        assert_eq!(count("안녕하세요 세계"), 2);
        // Accented Latin and Cyrillic are words as English is.
        assert_eq!(count("café über привет"), 3);
    }
}
