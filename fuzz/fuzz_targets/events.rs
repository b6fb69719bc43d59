//! Each API's event parser (OpenAI chat and completions, Anthropic Messages,
//! Ollama, TGI, llama.cpp) on one event's data: any text parses without
//! panicking. The first byte picks the API.
#![no_main]
use goodput_load::protocol::{parse_for, Api};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let api = Api::ALL[pick as usize % Api::ALL.len()];
    let text = String::from_utf8_lossy(rest);
    let _ = parse_for(api, &text);
});
