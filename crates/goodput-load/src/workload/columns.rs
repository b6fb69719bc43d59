//! One dataset entry from one record of columns (a JSONL line, an item of
//! a JSON array, a Parquet row): the prompt column named, or the first
//! found of [`DETECTED`], read by its shape.

use super::dataset::{count_prompt, count_tokens, reference_of, DatasetEntry};
use crate::error::EntryError;
use crate::protocol::PromptBody;
use crate::tokenizer::TokenCounter;
use serde_json::{Map, Value};

/// The prompt columns looked for, in this order, when none is named.
pub const DETECTED: [&str; 7] =
    ["prompt", "messages", "conversations", "conversation", "text", "instruction", "question"];

/// Why an entry read is left out of the run (counted and named in a
/// warning, and in the result's `config.workload.dataset_skipped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    /// The prompt is empty or only white space.
    Blank,
    /// A conversation with no question in it (only answers or system turns).
    AsksNothing,
    /// ShareGPT's array: the first question got no answer, so the entry sets
    /// no output length (as vLLM's benchmarks read it).
    NoAnswer,
}

impl Skip {
    /// The reason, as a warning says it.
    pub fn reason(self) -> &'static str {
        match self {
            Skip::Blank => "an empty or blank prompt",
            Skip::AsksNothing => "a conversation that asks no question",
            Skip::NoAnswer => "a ShareGPT conversation whose first question got no answer (no output length)",
        }
    }
}

/// The entry `v` holds, [`Skip`] for an empty prompt or a conversation with
/// no question to ask, or what is wrong with it.
pub(super) fn entry_of(
    v: &Value,
    column: Option<&str>,
    tokenizer: Option<&TokenCounter>,
) -> Result<Result<DatasetEntry, Skip>, EntryError> {
    let obj = v.as_object().ok_or(EntryError::NotObject)?;
    let key = match column {
        Some(c) if obj.contains_key(c) => c,
        Some(c) => return Err(EntryError::NoColumn { column: c.to_owned(), found: names(obj) }),
        None => match DETECTED.into_iter().find(|k| obj.get(*k).is_some_and(|x| !x.is_null())) {
            Some(k) => k,
            // A prompt column that is there, but null: named as such, not
            // as a column missing.
            None => match DETECTED.into_iter().find(|k| obj.contains_key(*k)) {
                Some(k) => return Err(EntryError::NullColumn { column: k.to_owned() }),
                None => return Err(EntryError::NoPrompt { found: names(obj) }),
            },
        },
    };
    if obj[key].is_null() {
        return Err(EntryError::NullColumn { column: key.to_owned() });
    }
    let max_tokens = match obj.get("max_tokens") {
        None | Some(Value::Null) => None,
        Some(m) => Some(max_tokens_of(m)?),
    };
    let reference = reference_of(v)?;
    let images = super::images::images_column(obj)?;
    let entry = |prompt: PromptBody, prompt_tokens: u32| DatasetEntry {
        prompt,
        system: None,
        max_tokens,
        follow_ups: Vec::new(),
        follow_up_tokens: Vec::new(),
        reference: reference.clone(),
        prompt_tokens,
        images: images.clone(),
    };
    match &obj[key] {
        Value::String(text) => {
            let mut text = text.clone();
            // Alpaca-style: the instruction's input goes after it.
            if key == "instruction" {
                if let Some(input) = obj.get("input").and_then(Value::as_str).filter(|i| !i.trim().is_empty()) {
                    text = format!("{text}\n\n{input}");
                }
            }
            // A prompt that asks nothing (empty, or only white space) is
            // skipped, as a conversation that asks nothing is.
            if text.trim().is_empty() {
                return Ok(Err(Skip::Blank));
            }
            let n = count_prompt(&text, tokenizer);
            Ok(Ok(entry(PromptBody::Text(text), n)))
        }
        Value::Array(items) => {
            if key == "messages" && items.is_empty() {
                return Err(EntryError::NoMessages);
            }
            let turns = turns_of(items).ok_or_else(|| EntryError::ColumnType { column: key.to_owned() })?;
            // Messages that end with a question are the request, as they are
            // (a system message and all); a whole conversation, which ends
            // with its answer, is asked turn by turn.
            if key == "messages" && turns.last().is_some_and(|t| t.role != Role::Answer) {
                let n: u32 = turns.iter().map(|t| count_prompt(&t.text, tokenizer)).sum();
                return Ok(Ok(entry(PromptBody::Messages(items.clone()), n)));
            }
            Ok(conversation(&turns, tokenizer).ok_or(Skip::AsksNothing).map(|(system, prompt, max, follow_ups)| {
                DatasetEntry {
                    prompt_tokens: count_prompt(&prompt, tokenizer)
                        .saturating_add(system.as_deref().map_or(0, |s| count_prompt(s, tokenizer))),
                    prompt: PromptBody::Text(prompt),
                    system,
                    max_tokens: max_tokens.or(max),
                    follow_up_tokens: follow_ups.iter().map(|(q, _)| count_prompt(q, tokenizer)).collect(),
                    follow_ups,
                    reference: reference.clone(),
                    images: images.clone(),
                }
            }))
        }
        _ if key == "prompt" => Err(EntryError::PromptNotText),
        _ if key == "messages" => Err(EntryError::MessagesNotArray),
        _ => Err(EntryError::ColumnType { column: key.to_owned() }),
    }
}

/// An entry's `max_tokens`: a whole number from 1 to [`super::MAX_TOKENS`],
/// written as an integer or as a whole float (`5.0`: pandas writes a column
/// of integers with a missing value as floats, and the trace reader takes
/// `472.0`); otherwise refused, quoting the value read.
fn max_tokens_of(m: &Value) -> Result<u32, EntryError> {
    let max = u64::from(super::MAX_TOKENS);
    let n = match m.as_u64() {
        Some(n) => Some(n),
        None => m.as_f64().filter(|f| f.fract() == 0.0 && (1.0..=max as f64).contains(f)).map(|f| f as u64),
    };
    match n.filter(|&n| n > 0 && n <= max) {
        Some(n) => Ok(n as u32),
        None => {
            let mut shown = m.to_string();
            if shown.chars().count() > 40 {
                shown = shown.chars().take(40).chain("…".chars()).collect();
            }
            Err(EntryError::MaxTokens(shown))
        }
    }
}

/// The record's column names, for messages.
fn names(obj: &Map<String, Value>) -> String {
    if obj.is_empty() {
        return "none".into();
    }
    let shown: Vec<String> = obj.keys().take(20).map(|k| format!("\"{k}\"")).collect();
    let more = obj.len().saturating_sub(20);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    System,
    Question,
    Answer,
}

struct Turn {
    role: Role,
    text: String,
}

/// Chat turns: OpenAI's and LMSYS/WildChat's `{role, content}` (content a
/// string or a list of text parts), ShareGPT's `{from, value}`. `None` when
/// an item is neither.
fn turns_of(items: &[Value]) -> Option<Vec<Turn>> {
    items
        .iter()
        .map(|item| {
            let role = item.get("role").or_else(|| item.get("from"))?.as_str()?;
            let text = match item.get("content").or_else(|| item.get("value"))? {
                Value::String(s) => s.clone(),
                Value::Array(parts) => {
                    parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
                }
                Value::Null => String::new(),
                _ => return None,
            };
            let role = match role.to_ascii_lowercase().as_str() {
                "system" => Role::System,
                "user" | "human" | "prompter" => Role::Question,
                // assistant, gpt, chatgpt, bard, bing, model, bot, …
                _ => Role::Answer,
            };
            Some(Turn { role, text })
        })
        .collect()
}

/// What a conversation's system turns say (joined by blank lines), its
/// first question (past any assistant turns it opens with), the length of the answer it got, and its later questions
/// with theirs, while questions and answers alternate: the turns of a
/// session (`--turns`). `None` when it asks nothing.
#[allow(clippy::type_complexity)]
fn conversation(
    turns: &[Turn],
    tokenizer: Option<&TokenCounter>,
) -> Option<(Option<String>, String, Option<u32>, Vec<(String, Option<u32>)>)> {
    let system: Vec<&str> = turns
        .iter()
        .take_while(|t| t.role == Role::System)
        .map(|t| t.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    let rest = &turns[turns.iter().take_while(|t| t.role == Role::System).count()..];
    // An assistant's opening turns (a greeting, as real ShareGPT dumps hold)
    // answer no question of the conversation: left out, the conversation
    // asked from its first question (it had been skipped unsaid).
    let rest = &rest[rest.iter().take_while(|t| t.role == Role::Answer).count()..];
    let mut pairs = Vec::new();
    let mut i = 0;
    while let Some(q) = rest.get(i).filter(|t| t.role == Role::Question && !t.text.is_empty()) {
        let answer = rest.get(i + 1).filter(|t| t.role == Role::Answer && !t.text.is_empty());
        pairs.push((q.text.clone(), answer.map(|a| count_tokens(&a.text, tokenizer))));
        if answer.is_none() {
            break;
        }
        i += 2;
    }
    let mut pairs = pairs.into_iter();
    let (first, answer) = pairs.next()?;
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    // A later question whose answer is missing is still asked (its length the server's).
    Some((system, first, answer, pairs.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(v: Value, column: Option<&str>) -> Result<Option<DatasetEntry>, EntryError> {
        entry_of(&v, column, None).map(Result::ok)
    }

    /// Without a tokenizer a prompt is counted as the simulated engine
    /// counts it (what `estimate` predicts, and bench sends it): a word a
    /// token, a Chinese character a token. Bytes over 4 had made 7 words
    /// 9 tokens, and 15 Chinese characters 12 where the engine counts 15.
    #[test]
    fn prompts_are_counted_as_the_simulated_engine_counts_them() {
        for text in ["Explain the attention mechanism in three sentences please", "请用三句话解释什么是注意力机制"]
        {
            let e = one(json!({ "prompt": text }), None).unwrap().unwrap();
            assert_eq!(e.prompt_tokens as usize, goodput_core::util::words::count(text), "{text}");
        }
        let e = one(json!({"prompt": "请用三句话解释什么是注意力机制"}), None).unwrap().unwrap();
        assert_eq!(e.prompt_tokens, 15, "a token a character");
        let e = one(
            json!({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "你好"}]}),
            None,
        );
        assert_eq!(e.unwrap().unwrap().prompt_tokens, 4, "each message's words and characters");
    }

    /// A `max_tokens` of a whole float (pandas's `5.0`) is taken; one that
    /// is not a whole number in range is refused with the value read.
    #[test]
    fn max_tokens_may_be_a_whole_float_and_a_refusal_quotes_it() {
        for (v, want) in [(json!(5), 5), (json!(5.0), 5), (json!(472.0), 472)] {
            let e = one(json!({"prompt": "hi", "max_tokens": v}), None).unwrap().unwrap();
            assert_eq!(e.max_tokens, Some(want), "{v}");
        }
        for (v, shown) in [(json!(5.5), "5.5"), (json!(0.0), "0.0"), (json!(-3), "-3"), (json!("12"), "\"12\"")] {
            let e = one(json!({"prompt": "hi", "max_tokens": v}), None).unwrap_err().to_string();
            assert!(e.starts_with(&format!("\"max_tokens\" is {shown}: it must be a whole number from 1")), "{e}");
        }
        let e = one(json!({"prompt": "hi", "max_tokens": 1e300}), None).unwrap_err().to_string();
        assert!(e.contains("is 1e+300") && e.contains("2 Mi"), "{e}");
    }

    /// A prompt column that is null is named, not called missing.
    #[test]
    fn a_null_prompt_is_named_as_null() {
        let e = one(json!({"prompt": null, "max_tokens": 5}), None).unwrap_err().to_string();
        assert_eq!(e, "\"prompt\" is null: it must be a string");
        let e = one(json!({"messages": null}), None).unwrap_err().to_string();
        assert!(e.starts_with("\"messages\" is null: it must be an array"), "{e}");
        let e = one(json!({"q": null}), Some("q")).unwrap_err().to_string();
        assert!(e.starts_with("\"q\" is null: it must be"), "{e}");
        // Another prompt column that is there is read.
        assert!(one(json!({"prompt": null, "text": "hi"}), None).unwrap().is_some());
        let e = one(json!({"id": 1}), None).unwrap_err().to_string();
        assert!(e.contains("an entry needs a prompt column"), "{e}");
    }

    #[test]
    fn each_shape_gives_its_prompt_and_turns() {
        // A text column, found or named.
        let e = one(json!({"id": 1, "text": "abcdefgh"}), None).unwrap().unwrap();
        assert_eq!((e.prompt, e.prompt_tokens, e.max_tokens), (PromptBody::Text("abcdefgh".into()), 1, None));
        let e = one(json!({"q": "why", "text": "no"}), Some("q")).unwrap().unwrap();
        assert_eq!(e.prompt, PromptBody::Text("why".into()));
        let e = one(json!({"instruction": "Sum", "input": "1 2", "output": "3"}), None).unwrap().unwrap();
        assert_eq!(e.prompt, PromptBody::Text("Sum\n\n1 2".into()));
        // Messages that ask are sent as they are.
        let asks = json!({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]});
        assert!(matches!(one(asks, None).unwrap().unwrap().prompt, PromptBody::Messages(m) if m.len() == 2));
        // A whole conversation is asked turn by turn: LMSYS/WildChat, ShareGPT, OpenAI messages.
        let lmsys = json!({"conversation": [
            {"role": "user", "content": "first?"}, {"role": "assistant", "content": "0123456789abcdef"},
            {"role": "user", "content": "second?"}, {"role": "assistant", "content": "0123"}]});
        let e = one(lmsys, None).unwrap().unwrap();
        assert_eq!((e.prompt, e.max_tokens), (PromptBody::Text("first?".into()), Some(4)));
        assert_eq!(e.follow_ups, vec![("second?".to_string(), Some(1))]);
        let sharegpt = json!({"conversations": [
            {"from": "system", "value": "sys"}, {"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]});
        let e = one(sharegpt, None).unwrap().unwrap();
        assert_eq!((e.prompt, e.system, e.max_tokens), (PromptBody::Text("q".into()), Some("sys".into()), Some(1)));
        let parts = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}]}, {"role": "assistant", "content": "ok"}]});
        assert_eq!(one(parts, None).unwrap().unwrap().prompt, PromptBody::Text("look".into()));
        // A conversation that asks nothing is skipped.
        assert_eq!(one(json!({"conversation": [{"role": "assistant", "content": "hi"}]}), None).unwrap(), None);
    }

    #[test]
    fn a_missing_column_names_the_columns_found() {
        let err = one(json!({"id": 1, "body": "x"}), None).unwrap_err().to_string();
        assert!(err.contains("\"id\"") && err.contains("\"body\"") && err.contains("--dataset-column"), "{err}");
        let err = one(json!({"id": 1}), Some("prompt_text")).unwrap_err().to_string();
        assert_eq!(err, "has no column \"prompt_text\" (--dataset-column); its columns are \"id\"");
        let err = one(json!({"conversation": 5}), None).unwrap_err().to_string();
        assert!(err.contains("neither text nor a list of chat turns"), "{err}");
        assert_eq!(one(json!({"prompt": 5}), None).unwrap_err(), EntryError::PromptNotText);
        assert_eq!(one(json!({"messages": []}), None).unwrap_err(), EntryError::NoMessages);
        assert_eq!(one(json!([1]), None).unwrap_err(), EntryError::NotObject);
    }
}
