//! The simulator's tokenizer and the deterministic words that stand for
//! output tokens.

/// The simulator's tokenizer: one whitespace-separated word is one token.
pub fn count_tokens(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// The ids of the tokens [`count_tokens`] counts: one per word, a hash of
/// the word (FNV-1a), so equal words are equal ids and prompts that share
/// leading words share a cacheable prefix in the engine.
pub fn token_ids(text: &str) -> Vec<u32> {
    text.split_whitespace().map(token_id).collect()
}

/// The id of one word (see [`token_ids`]).
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

/// Token `i` of request `seed`'s output: a deterministic word with a leading space.
pub fn word(seed: u64, i: u64) -> &'static str {
    let mut z = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 31;
    WORDS[(z % WORDS.len() as u64) as usize]
}
