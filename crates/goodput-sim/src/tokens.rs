//! The simulator's tokenizer and the deterministic words that stand for
//! output tokens.

/// The simulator's tokenizer: one whitespace-separated word is one token,
/// and so is each character of a script written without spaces (Chinese,
/// Japanese, Thai: [`goodput_core::util::words`], by which `estimate` counts
/// a dataset's prompts too). A Chinese paragraph had been one token.
pub fn count_tokens(text: &str) -> u64 {
    goodput_core::util::words::count(text) as u64
}

/// The ids of the tokens [`count_tokens`] counts: one per token, a hash of
/// its text (FNV-1a), so equal words are equal ids and prompts that share
/// leading words share a cacheable prefix in the engine.
pub fn token_ids(text: &str) -> Vec<u32> {
    goodput_core::util::words::tokens(text).map(token_id).collect()
}

/// The id of one token (see [`token_ids`]).
pub fn token_id(word: &str) -> u32 {
    word.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193))
}

/// The ids of the `n` tokens request `seed` answers with ([`word`]), as a
/// prompt that repeats the answer (the next turn of a conversation) holds them.
pub fn output_ids(seed: u64, n: u32) -> Vec<u32> {
    (0..n as u64).map(|i| token_id(word(seed, i))).collect()
}

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
    "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
    "yankee", "zulu", "river", "stone", "cloud", "maple", "ember", "harbor",
];

/// Token `i` of request `seed`'s output: a deterministic word, drawn with
/// SplitMix64's finaliser so that every bit of the seed and the position
/// reaches the choice. (A multiply and one shift had left the choice to a
/// few low bits: requests 0 to 999 gave 28 distinct 20-token answers.)
pub fn word(seed: u64, i: u64) -> &'static str {
    WORDS[(goodput_core::util::hash::draw(seed, i) % WORDS.len() as u64) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Chinese prompt is a token a character, as the estimate counts it.
    #[test]
    fn unspaced_scripts_count_a_token_a_character() {
        let zh = "请用三句话解释什么是注意力机制";
        assert_eq!(count_tokens(zh), zh.chars().count() as u64);
        assert_eq!(token_ids(zh).len() as u64, count_tokens(zh));
        assert_eq!(count_tokens("explain attention 注意力"), 5);
        assert_eq!(token_ids("a 注 a")[0], token_ids("a 注 a")[2], "equal tokens, equal ids");
    }

    /// Each request's answer is its own, and the same every time.
    #[test]
    fn requests_get_answers_of_their_own() {
        let answer = |seed: u64| (0..20).map(|i| word(seed, i)).collect::<Vec<_>>().join(" ");
        let distinct: std::collections::HashSet<String> = (0..1000).map(answer).collect();
        assert_eq!(distinct.len(), 1000, "1,000 requests, 1,000 answers");
        assert_eq!(answer(7), answer(7));
        // Every word is drawn, about evenly.
        let mut seen = std::collections::HashMap::new();
        for seed in 0..1000 {
            for i in 0..20 {
                *seen.entry(word(seed, i)).or_insert(0u32) += 1;
            }
        }
        assert_eq!(seen.len(), WORDS.len());
        assert!(seen.values().all(|&n| (400..850).contains(&n)), "{seen:?}");
    }
}
