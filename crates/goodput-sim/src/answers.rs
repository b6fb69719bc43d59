//! Scripted answers (`goodput serve --answers FILE.jsonl`): a prompt found in
//! the file is answered with its reference, word by word on the usual
//! schedule, and the seeded faults `--fault-wrong-rate` (another entry's
//! reference instead) and `--fault-diverge-rate` (the reference left at a
//! random word for the simulator's own words) make it wrong on purpose, so
//! tests know what share of answers a scorer must find right.

use goodput_core::util::hash::{draw, unit};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One answer's words, raw and escaped for a JSON string.
#[derive(Debug, Clone, PartialEq)]
pub struct Words {
    pub raw: Vec<String>,
    pub json: Vec<String>,
}

/// The answers a server gives, by prompt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answers {
    answers: Vec<Arc<Words>>,
    by_prompt: HashMap<String, usize>,
    /// Share of answers given with another entry's reference.
    pub wrong_rate: f64,
    /// Share of answers that leave the reference at a random word.
    pub diverge_rate: f64,
    pub seed: u64,
}

/// What request `n` is answered with: `words` up to `diverge_at`, the
/// simulator's own words from there.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub words: Arc<Words>,
    pub diverge_at: Option<u64>,
}

impl Script {
    /// The answer's length in words.
    pub fn len(&self) -> u64 {
        self.words.raw.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.words.raw.is_empty()
    }

    /// Word `i`, raw and JSON-escaped, when the script holds it there.
    pub fn word(&self, i: u64) -> Option<(&str, &str)> {
        if self.diverge_at.is_some_and(|d| i >= d) {
            return None;
        }
        let i = i as usize;
        Some((self.words.raw.get(i)?.as_str(), self.words.json.get(i)?.as_str()))
    }
}

/// The text a simulated server sees of a dataset entry: its prompt, or its
/// messages' contents joined by spaces (as `GenerationRequest::prompt_text`).
fn prompt_of(v: &Value) -> Option<String> {
    if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        return Some(p.to_owned());
    }
    let msgs = v.get("messages")?.as_array()?;
    let parts: Vec<&str> =
        msgs.iter().filter_map(|m| m.get("content").and_then(Value::as_str)).filter(|s| !s.is_empty()).collect();
    Some(parts.join(" "))
}

/// The first reference of an entry (`reference` or `answer`, a string or a list).
fn reference_of(v: &Value) -> Option<String> {
    let r = v.get("reference").filter(|r| !r.is_null()).or_else(|| v.get("answer"))?;
    match r {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.first()?.as_str().map(str::to_owned),
        _ => None,
    }
}

/// An `--answers` file that scripts no answer.
#[derive(Debug, thiserror::Error)]
pub enum AnswersError {
    #[error("line {line}: not JSON ({error})")]
    NotJson { line: usize, error: serde_json::Error },
    /// A reference word that cannot be written as JSON.
    #[error("line {line}: {error}")]
    Encode { line: usize, error: serde_json::Error },
    #[error("no line holds both a prompt (or messages) and a reference (or answer)")]
    NoAnswer,
}

impl Answers {
    /// Reads a dataset's JSONL: each line with a prompt (or messages) and a
    /// reference (or answer) is one scripted answer.
    pub fn from_jsonl(text: &str) -> Result<Answers, AnswersError> {
        let mut a = Answers::default();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).map_err(|error| AnswersError::NotJson { line: i + 1, error })?;
            let (Some(prompt), Some(reference)) = (prompt_of(&v), reference_of(&v)) else { continue };
            let raw: Vec<String> = reference.split_whitespace().map(str::to_owned).collect();
            if raw.is_empty() {
                continue;
            }
            let json: Result<Vec<String>, _> =
                raw.iter().map(|w| serde_json::to_string(w).map(|s| s[1..s.len() - 1].to_owned())).collect();
            let json = json.map_err(|error| AnswersError::Encode { line: i + 1, error })?;
            a.by_prompt.entry(prompt).or_insert(a.answers.len());
            a.answers.push(Arc::new(Words { raw, json }));
        }
        if a.answers.is_empty() {
            return Err(AnswersError::NoAnswer);
        }
        Ok(a)
    }

    /// The answer to request `n` asking `prompt`, if the file has the prompt.
    pub fn script(&self, prompt: &str, n: u64) -> Option<Script> {
        let &right = self.by_prompt.get(prompt.trim())?;
        let k = self.answers.len();
        let index = if k > 1 && unit(self.seed ^ WRONG_SALT, n) < self.wrong_rate {
            (right + 1 + (draw(self.seed ^ PICK_SALT, n) % (k as u64 - 1)) as usize) % k
        } else {
            right
        };
        let words = self.answers[index].clone();
        let diverge_at = (unit(self.seed ^ DIVERGE_SALT, n) < self.diverge_rate)
            .then(|| draw(self.seed ^ WHERE_SALT, n) % words.raw.len() as u64);
        Some(Script { words, diverge_at })
    }
}

const WRONG_SALT: u64 = 0x0a45_0001;
const PICK_SALT: u64 = 0x0a45_0002;
const DIVERGE_SALT: u64 = 0x0a45_0003;
const WHERE_SALT: u64 = 0x0a45_0004;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_get_their_reference_and_faults_their_share() {
        let text = concat!(
            "{\"prompt\": \"q0\", \"reference\": \"a \\\"zero\\\"\"}\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"q1\"}], \"answer\": [\"one\", \"uno\"]}\n",
            "{\"prompt\": \"no reference\"}\n",
        );
        let mut a = Answers::from_jsonl(text).unwrap();
        let s = a.script("q0", 0).unwrap();
        assert_eq!((s.word(1), s.diverge_at), (Some(("\"zero\"", "\\\"zero\\\"")), None));
        assert_eq!(a.script("q1", 0).unwrap().words.raw, ["one"]);
        assert!(a.script("unknown", 0).is_none());
        a.wrong_rate = 0.2;
        a.diverge_rate = 0.3;
        let n = 20_000;
        let wrong = (0..n).filter(|&i| a.script("q1", i).unwrap().words.raw != ["one"]).count() as f64 / n as f64;
        let diverged = (0..n).filter(|&i| a.script("q1", i).unwrap().diverge_at.is_some()).count() as f64 / n as f64;
        assert!((wrong - 0.2).abs() < 0.015 && (diverged - 0.3).abs() < 0.015, "{wrong} {diverged}");
        assert!(Answers::from_jsonl("{\"prompt\": \"x\"}").is_err());
    }
}
