//! Chat templates: what a real server adds to a prompt before it counts and
//! prefills it. A chat request's messages are wrapped in the model's
//! template (role headers, end-of-turn tokens, a default system block, the
//! assistant header that asks for the answer); a raw prompt (`/v1/completions`,
//! llama.cpp's `/completion`, TGI) gets the tokenizer's BOS. So a real
//! server's `usage.prompt_tokens` exceeds what the client wrote, and every
//! chat request starts with the same few dozen tokens, which the prefix cache
//! shares.
//!
//! The simulator's tokens are words (see [`crate::tokens::count_tokens`]),
//! so the templates here are the real ones' shapes spelled in as many
//! simulator tokens as the model's own tokenizer gives each fixed piece:
//! Llama 3.1 adds 35 tokens to a one-message chat, Qwen2.5 29, Mixtral 8,
//! and the count of each piece is documented where it is spelled. Qwen2.5's
//! 29 is what vLLM and SGLang report in usage for a one-question chat (36
//! for a 7-token question, in published responses); Llama's is our count of
//! its pieces, with digits split in threes as its pre-tokenizer splits them.

use crate::tokens::{token_id, token_ids};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A `--chat-template` name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown chat template '{name}': use auto or one of {known}")]
pub struct UnknownTemplate {
    pub name: String,
    pub known: String,
}

/// A model family's chat template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatTemplate {
    /// Nothing added: the prompt is the client's words.
    #[default]
    None,
    /// Llama 3.1 / 3.3 Instruct: BOS, a system block that always carries the
    /// knowledge-cutoff and date lines, header and `<|eot_id|>` per message.
    Llama3,
    /// Qwen2.5 Instruct: ChatML with its default system message.
    #[serde(rename = "qwen2.5")]
    Qwen25,
    /// ChatML with no default system message (Qwen3, many fine-tunes).
    ChatMl,
    /// Mistral / Mixtral Instruct v0.1: `<s>[INST] … [/INST]`, `</s>` after
    /// each answer; a system message is put before the first question.
    Mistral,
}

/// One message of a chat: its role and its content's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub role: &'a str,
    pub content: &'a str,
}

/// Llama 3.1's system preamble, "Cutting Knowledge Date: December 2023\n
/// Today Date: 26 Jul 2024\n\n", as its tokenizer splits it (digits in
/// groups of up to three): 20 tokens.
const LLAMA3_DATE: [&str; 20] = [
    "C",
    "utting",
    "▁Knowledge",
    "▁Date",
    ":",
    "▁December",
    "▁",
    "202",
    "3",
    "\\n",
    "Today",
    "▁Date",
    ":",
    "▁",
    "26",
    "▁Jul",
    "▁",
    "202",
    "4",
    "\\n\\n",
];

/// Qwen2.5's default system message, "You are Qwen, created by Alibaba
/// Cloud. You are a helpful assistant.": 16 tokens.
const QWEN25_SYSTEM: [&str; 16] = [
    "You",
    "▁are",
    "▁Q",
    "wen",
    ",",
    "▁created",
    "▁by",
    "▁Alibaba",
    "▁Cloud",
    ".",
    "▁You",
    "▁are",
    "▁a",
    "▁helpful",
    "▁assistant",
    ".",
];

impl ChatTemplate {
    pub const ALL: [ChatTemplate; 5] =
        [ChatTemplate::None, ChatTemplate::Llama3, ChatTemplate::Qwen25, ChatTemplate::ChatMl, ChatTemplate::Mistral];

    pub fn name(self) -> &'static str {
        match self {
            ChatTemplate::None => "none",
            ChatTemplate::Llama3 => "llama3",
            ChatTemplate::Qwen25 => "qwen2.5",
            ChatTemplate::ChatMl => "chatml",
            ChatTemplate::Mistral => "mistral",
        }
    }

    /// A template by name; `auto` is `model`'s, the template the model's
    /// name and vocabulary point to (the engine's `ModelSpec::chat_template`).
    pub fn parse(name: &str, model: ChatTemplate) -> Result<ChatTemplate, UnknownTemplate> {
        if name.eq_ignore_ascii_case("auto") {
            return Ok(model);
        }
        ChatTemplate::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(name)).ok_or_else(|| {
            let names: Vec<&str> = ChatTemplate::ALL.iter().map(|t| t.name()).collect();
            UnknownTemplate { name: name.to_owned(), known: names.join(", ") }
        })
    }

    /// The template a model's name and vocabulary size point to: Llama 3
    /// (its 128,256-token vocabulary), Qwen2.5 (or ChatML for later Qwens),
    /// Mistral and Mixtral (32,000 or 32,768); ChatML for anything else.
    pub fn for_model(name: &str, vocab_size: u32) -> ChatTemplate {
        let name = name.to_ascii_lowercase();
        if name.contains("qwen2.5") || name.contains("qwen-2.5") {
            ChatTemplate::Qwen25
        } else if name.contains("qwen") {
            ChatTemplate::ChatMl
        } else if name.contains("llama-3") || name.contains("llama3") || vocab_size == 128_256 {
            ChatTemplate::Llama3
        } else if name.contains("mistral") || name.contains("mixtral") || matches!(vocab_size, 32_000 | 32_768) {
            ChatTemplate::Mistral
        } else {
            ChatTemplate::ChatMl
        }
    }

    /// The tokenizer adds a BOS token to every prompt, raw ones included.
    pub fn bos(self) -> u32 {
        u32::from(matches!(self, ChatTemplate::Llama3 | ChatTemplate::Mistral))
    }

    /// The token ids of a raw prompt (no chat template): BOS, then its words.
    pub fn raw(self, prompt: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        if self.bos() == 1 {
            ids.push(token_id(self.bos_token()));
        }
        ids.extend(token_ids(prompt));
        ids
    }

    fn bos_token(self) -> &'static str {
        match self {
            ChatTemplate::Mistral => "<s>",
            _ => "<|begin_of_text|>",
        }
    }

    /// The token ids of `messages` rendered with the template, ending with
    /// the assistant's header (the generation prompt). A `system` message
    /// anywhere is the system block, as the templates take the first one.
    pub fn render(self, messages: &[Message]) -> Vec<u32> {
        fn put(ids: &mut Vec<u32>, pieces: &[&str]) {
            ids.extend(pieces.iter().map(|p| token_id(p)));
        }
        let mut ids = Vec::new();
        let system = messages.iter().filter(|m| m.role == "system").map(|m| m.content);
        let turns = messages.iter().filter(|m| m.role != "system");
        match self {
            ChatTemplate::None => {
                for m in messages {
                    ids.extend(token_ids(m.content));
                }
            }
            ChatTemplate::Llama3 => {
                put(&mut ids, &[self.bos_token(), "<|start_header_id|>", "system", "<|end_header_id|>", "\\n\\n"]);
                put(&mut ids, &LLAMA3_DATE);
                system.for_each(|s| ids.extend(token_ids(s)));
                put(&mut ids, &["<|eot_id|>"]);
                for m in turns {
                    put(&mut ids, &["<|start_header_id|>", m.role, "<|end_header_id|>", "\\n\\n"]);
                    ids.extend(token_ids(m.content));
                    put(&mut ids, &["<|eot_id|>"]);
                }
                put(&mut ids, &["<|start_header_id|>", "assistant", "<|end_header_id|>", "\\n\\n"]);
            }
            ChatTemplate::Qwen25 | ChatTemplate::ChatMl => {
                let message = |ids: &mut Vec<u32>, role: &str, words: &[u32]| {
                    put(ids, &["<|im_start|>", role, "\\n"]);
                    ids.extend_from_slice(words);
                    put(ids, &["<|im_end|>", "\\n"]);
                };
                let system: Vec<u32> = system.flat_map(token_ids).collect();
                if !system.is_empty() {
                    message(&mut ids, "system", &system);
                } else if self == ChatTemplate::Qwen25 {
                    message(&mut ids, "system", &QWEN25_SYSTEM.map(token_id));
                }
                for m in turns {
                    message(&mut ids, m.role, &token_ids(m.content));
                }
                put(&mut ids, &["<|im_start|>", "assistant", "\\n"]);
            }
            ChatTemplate::Mistral => {
                put(&mut ids, &[self.bos_token()]);
                let mut system: Option<Vec<u32>> = Some(system.flat_map(token_ids).collect());
                for m in turns {
                    if m.role == "assistant" {
                        ids.extend(token_ids(m.content));
                        put(&mut ids, &["</s>"]);
                        continue;
                    }
                    put(&mut ids, &["▁[", "INST", "]"]);
                    ids.extend(system.take().unwrap_or_default());
                    ids.extend(token_ids(m.content));
                    put(&mut ids, &["▁[", "/", "INST", "]"]);
                }
            }
        }
        ids
    }

    /// Tokens the template adds to a chat of `questions` user messages and
    /// `answers` assistant messages, no system message: what [`Self::render`]
    /// adds to their words.
    pub fn overhead(self, questions: u32, answers: u32) -> u32 {
        let messages = questions + answers;
        match self {
            ChatTemplate::None => 0,
            // BOS, system header (4), the date lines (20), <|eot_id|>; per
            // message a header (4) and <|eot_id|>; the assistant header (4).
            ChatTemplate::Llama3 => 1 + 4 + LLAMA3_DATE.len() as u32 + 1 + 5 * messages + 4,
            // <|im_start|> role \n … <|im_end|> \n per message; <|im_start|> assistant \n.
            ChatTemplate::Qwen25 => 5 + QWEN25_SYSTEM.len() as u32 + 5 * messages + 3,
            ChatTemplate::ChatMl => 5 * messages + 3,
            // <s>; [INST] (3) and [/INST] (4) per question; </s> per answer.
            ChatTemplate::Mistral => 1 + 7 * questions + answers,
        }
    }

    /// The leading tokens every chat that opens with a question (no system
    /// message) shares: everything before the first question's words.
    pub fn shared_start(self) -> u32 {
        match self {
            ChatTemplate::None => 0,
            ChatTemplate::Llama3 => 1 + 4 + LLAMA3_DATE.len() as u32 + 1 + 4,
            ChatTemplate::Qwen25 => 5 + QWEN25_SYSTEM.len() as u32 + 3,
            ChatTemplate::ChatMl => 3,
            ChatTemplate::Mistral => 4,
        }
    }
}

impl fmt::Display for ChatTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat<'a>(questions: &[&'a str], answers: &[&'a str]) -> Vec<Message<'a>> {
        let mut m = Vec::new();
        for (i, q) in questions.iter().enumerate() {
            m.push(Message { role: "user", content: q });
            if let Some(a) = answers.get(i) {
                m.push(Message { role: "assistant", content: a });
            }
        }
        m
    }

    #[test]
    fn what_each_template_adds_to_a_one_message_chat() {
        // The real templates' counts for one question: Llama 3.1 Instruct
        // 35, Qwen2.5 Instruct 29, Mixtral Instruct 8.
        for (t, extra) in [
            (ChatTemplate::None, 0),
            (ChatTemplate::Llama3, 35),
            (ChatTemplate::Qwen25, 29),
            (ChatTemplate::ChatMl, 8),
            (ChatTemplate::Mistral, 8),
        ] {
            assert_eq!(t.render(&chat(&["one two three"], &[])).len(), 3 + extra, "{t}");
            assert_eq!(t.overhead(1, 0) as usize, extra, "{t}");
        }
    }

    #[test]
    fn overhead_counts_what_render_adds_for_every_shape() {
        let q = ["a b c", "d e", "f g h i", "j"];
        let a = ["k l", "m n o", "p"];
        for t in ChatTemplate::ALL {
            for turns in 1..=q.len() {
                let (qs, answers) = (&q[..turns], &a[..turns - 1]);
                let words: usize = qs.iter().chain(answers).map(|s| s.split_whitespace().count()).sum();
                let ids = t.render(&chat(qs, answers));
                assert_eq!(
                    ids.len(),
                    words + t.overhead(turns as u32, turns as u32 - 1) as usize,
                    "{t}, {turns} turns"
                );
            }
        }
    }

    #[test]
    fn chats_share_the_start_and_a_turn_extends_the_one_before() {
        for t in ChatTemplate::ALL {
            let (x, y) = (t.render(&chat(&["x y z"], &[])), t.render(&chat(&["p q"], &[])));
            let same = x.iter().zip(&y).take_while(|(a, b)| a == b).count();
            assert_eq!(same, t.shared_start() as usize, "{t}: the shared start ends at the question");
            // The next turn's prompt begins with this prompt and its answer,
            // so the prefix cache serves them.
            let first = t.render(&chat(&["x y z"], &[]));
            let mut with_answer = first.clone();
            with_answer.extend(token_ids("alpha bravo"));
            let second = t.render(&chat(&["x y z", "w"], &["alpha bravo"]));
            assert!(second.starts_with(&with_answer), "{t}");
        }
    }

    #[test]
    fn a_system_message_replaces_the_default_one() {
        let with = |sys: &str| {
            ChatTemplate::Qwen25
                .render(&[Message { role: "system", content: sys }, Message { role: "user", content: "hi" }])
                .len()
        };
        assert_eq!(with("be brief"), 1 + 5 + 2 + 5 + 3, "2 words replace the default 16");
        let llama = ChatTemplate::Llama3
            .render(&[Message { role: "system", content: "be brief" }, Message { role: "user", content: "hi" }]);
        assert_eq!(llama.len(), 35 + 1 + 2, "Llama keeps its date lines and adds the system words");
        let mistral = ChatTemplate::Mistral
            .render(&[Message { role: "system", content: "be brief" }, Message { role: "user", content: "hi" }]);
        assert_eq!(mistral.len(), 8 + 1 + 2, "Mistral puts the system words before the question");
    }

    #[test]
    fn raw_prompts_get_the_bos_and_models_their_templates() {
        assert_eq!(ChatTemplate::Llama3.raw("a b").len(), 3);
        assert_eq!(ChatTemplate::Qwen25.raw("a b").len(), 2);
        for (name, vocab, want) in [
            ("Llama-3.1-70B", 128_256, ChatTemplate::Llama3),
            ("meta-llama/Llama-3.3-70B-Instruct", 128_256, ChatTemplate::Llama3),
            ("Qwen2.5-7B", 152_064, ChatTemplate::Qwen25),
            ("Qwen/Qwen3-8B", 151_936, ChatTemplate::ChatMl),
            ("Mixtral-8x7B", 32_000, ChatTemplate::Mistral),
            ("custom", 32_768, ChatTemplate::Mistral),
            ("custom", 50_000, ChatTemplate::ChatMl),
        ] {
            assert_eq!(ChatTemplate::for_model(name, vocab), want, "{name}");
            assert_eq!(ChatTemplate::parse("auto", ChatTemplate::for_model(name, vocab)), Ok(want));
        }
        assert_eq!(ChatTemplate::parse("Llama3", ChatTemplate::None), Ok(ChatTemplate::Llama3));
        let err = ChatTemplate::parse("llama2", ChatTemplate::None).unwrap_err().to_string();
        assert!(err.contains("unknown chat template 'llama2'") && err.contains("auto or one of none, llama3"), "{err}");
    }
}
