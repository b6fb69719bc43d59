//! The pooling routes: OpenAI's `/v1/embeddings` and the rerank route
//! `/v1/rerank` that vLLM, Jina and Cohere share. Neither streams: the
//! answer is one JSON body of vectors or scores, with the input tokens in
//! its `usage` and no output tokens.
//!
//! Shapes, as vLLM's `vllm/entrypoints/openai/protocol.py` defines them
//! (`EmbeddingCompletionRequest`, `EmbeddingResponse`, `RerankRequest`,
//! `RerankResponse`) and OpenAI's API reference gives the embeddings one:
//! - embeddings: `{"model", "input": "…" | ["…", …], "encoding_format"?}` →
//!   `{"data": [{"embedding": [..], "index"}], "usage": {"prompt_tokens",
//!   "total_tokens"}}` (`embedding` is a base64 string under
//!   `"encoding_format": "base64"`);
//! - rerank: `{"model", "query", "documents": ["…", …], "top_n"?}` →
//!   `{"results": [{"index", "relevance_score", "document"?}], "usage":
//!   {"prompt_tokens"?, "total_tokens"}}` (older vLLM releases sent only
//!   `total_tokens`);
//! - TEI's own `/rerank` (text-embeddings-inference's
//!   `router/src/http/types.rs`, `RerankRequest` and `Rank`): `{"query", "texts": ["…", …]}` → `[{"index", "score"}]`, a
//!   bare list without usage; TEI serves one model, so the body names none.

use super::{
    decode, error_message, one_prompt, Api, BodyError, BodyOptions, ChunkInfo, PromptBody, ProtocolError, Usage,
};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The texts of one request: the prompt split at word boundaries into
/// `n` pieces of about equal length (`n` at least 1). A prompt of fewer
/// words than pieces gives each piece one word, repeating from its start.
pub fn split_words(text: &str, n: usize) -> Vec<String> {
    let n = n.max(1);
    let words: Vec<&str> = text.split_whitespace().collect();
    if n == 1 || words.is_empty() {
        return vec![text.to_owned(); n];
    }
    if words.len() < n {
        return (0..n).map(|i| words[i % words.len()].to_owned()).collect();
    }
    (0..n).map(|i| words[i * words.len() / n..(i + 1) * words.len() / n].join(" ")).collect()
}

/// Fills `body` (which holds `model`): the inputs of an embeddings request,
/// or the query and documents of a rerank. The request's prompt is its whole
/// input: `--embed-batch N` sends it as N inputs, `--rerank-docs N` as a
/// query and N documents (the first of N + 1 pieces is the query).
pub(super) fn fill_body(
    opts: &BodyOptions,
    prompt: &PromptBody,
    body: &mut Map<String, Value>,
) -> Result<(), BodyError> {
    let text = one_prompt(opts.api, prompt)?;
    match opts.api {
        Api::Rerank | Api::TeiRerank => {
            let docs = opts.rerank_docs.max(1) as usize;
            let mut pieces = split_words(&text, docs + 1);
            let query = pieces.remove(0);
            body.insert("query".into(), Value::String(query));
            let key = if opts.api == Api::TeiRerank { "texts" } else { "documents" };
            body.insert(key.into(), Value::Array(pieces.into_iter().map(Value::String).collect()));
            if opts.api == Api::TeiRerank {
                body.remove("model");
            }
        }
        _ => {
            let n = opts.embed_batch.max(1) as usize;
            let input = if n == 1 {
                Value::String(text)
            } else {
                Value::Array(split_words(&text, n).into_iter().map(Value::String).collect())
            };
            body.insert("input".into(), input);
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct PooledBody {
    /// Embeddings' vectors.
    #[serde(default)]
    data: Option<Vec<Value>>,
    /// Rerank's scores.
    #[serde(default)]
    results: Option<Vec<Value>>,
    #[serde(default)]
    usage: Option<PooledUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct PooledUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

/// Parses a whole embeddings or rerank answer: its input tokens (the
/// usage's `prompt_tokens`, else its `total_tokens`, which for a pooling
/// request are the same), and how many vectors or scores it carried.
pub fn parse_pooled(data: &str) -> Result<ChunkInfo, ProtocolError> {
    let mut info = ChunkInfo::default();
    // TEI's /rerank: a bare list of ranks.
    if data.trim_start().starts_with('[') {
        let ranks: Vec<Value> = decode(data)?;
        info.pooled = Some(ranks.len());
        info.done = true;
        return Ok(info);
    }
    let body: PooledBody = decode(data)?;
    if let Some(e) = body.error {
        info.error = Some(error_message(&e));
        return Ok(info);
    }
    info.usage = body.usage.map(|u| Usage { prompt_tokens: u.prompt_tokens.or(u.total_tokens), ..Default::default() });
    info.pooled = Some(body.data.or(body.results).map_or(0, |v| v.len()));
    info.done = true;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{build_body, parse_for};
    use serde_json::json;

    fn body(api: Api, text: &str, embed_batch: u32, rerank_docs: u32) -> Value {
        let opts = BodyOptions { api, model: "m".into(), embed_batch, rerank_docs, ..Default::default() };
        serde_json::from_slice(&build_body(&opts, &PromptBody::Text(text.into()), Some(9)).unwrap()).unwrap()
    }

    #[test]
    fn embeddings_bodies_carry_the_prompt_as_one_input_or_a_batch() {
        let b = body(Api::Embeddings, "a b c d e f", 1, 0);
        assert_eq!(b, json!({"model": "m", "input": "a b c d e f"}), "no length, no stream: {b}");
        let b = body(Api::Embeddings, "a b c d e f", 3, 0);
        assert_eq!(b["input"], json!(["a b", "c d", "e f"]));
        let b = body(Api::Embeddings, "a b", 3, 0);
        assert_eq!(b["input"], json!(["a", "b", "a"]), "fewer words than inputs: each input one word");
        assert_eq!(Api::Embeddings.path(false), "/v1/embeddings");
    }

    #[test]
    fn rerank_bodies_carry_a_query_and_documents() {
        let b = body(Api::Rerank, "q1 q2 d1 d2 d3 d4", 0, 2);
        assert_eq!(b, json!({"model": "m", "query": "q1 q2", "documents": ["d1 d2", "d3 d4"]}));
        assert_eq!(Api::Rerank.path(false), "/v1/rerank");
        let b = body(Api::TeiRerank, "q1 q2 d1 d2 d3 d4", 0, 2);
        assert_eq!(b, json!({"query": "q1 q2", "texts": ["d1 d2", "d3 d4"]}), "TEI's: one model, named nowhere");
        assert_eq!(Api::TeiRerank.path(false), "/rerank");
    }

    #[test]
    fn chat_messages_are_one_text() {
        let opts = BodyOptions { api: Api::Embeddings, ..Default::default() };
        let m = PromptBody::Messages(vec![
            json!({"role": "system", "content": "S"}),
            json!({"role": "user", "content": "U"}),
        ]);
        let b: Value = serde_json::from_slice(&build_body(&opts, &m, None).unwrap()).unwrap();
        assert_eq!(b["input"], "S\n\nU");
    }

    #[test]
    fn answers_give_their_input_tokens_and_count() {
        let emb = r#"{"object":"list","data":[{"object":"embedding","embedding":[0.1,-0.2],"index":0},
            {"object":"embedding","embedding":"AAAA","index":1}],"model":"m","usage":{"prompt_tokens":12,"total_tokens":12}}"#;
        let info = parse_for(Api::Embeddings, emb).unwrap();
        assert_eq!((info.usage.unwrap().prompt_tokens, info.pooled, info.done), (Some(12), Some(2), true));
        assert!(info.channel.is_none() && info.text.is_empty(), "no output");
        // Older vLLM releases: total_tokens alone.
        let rr = r#"{"id":"rerank-1","model":"m","usage":{"total_tokens":30},
            "results":[{"index":1,"document":{"text":"d"},"relevance_score":0.9},{"index":0,"relevance_score":0.1}]}"#;
        let info = parse_for(Api::Rerank, rr).unwrap();
        assert_eq!((info.usage.unwrap().prompt_tokens, info.pooled), (Some(30), Some(2)));
        let info = parse_for(Api::Rerank, r#"{"results":[]}"#).unwrap();
        assert_eq!((info.usage, info.pooled), (None, Some(0)));
        let info = parse_for(Api::Embeddings, r#"{"error":{"message":"too long","code":400}}"#).unwrap();
        assert_eq!(info.error.as_deref(), Some("too long"));
        assert!(parse_for(Api::Embeddings, "{").is_err());
        // TEI's /rerank: a bare list, no usage.
        let info = parse_for(Api::TeiRerank, r#"[{"index":1,"score":0.9},{"index":0,"score":0.2}]"#).unwrap();
        assert_eq!((info.usage, info.pooled, info.done), (None, Some(2), true));
        let info =
            parse_for(Api::TeiRerank, r#"{"error":"Input validation error","error_type":"Validation"}"#).unwrap();
        assert_eq!(info.error.as_deref(), Some("Input validation error"));
        assert!(parse_for(Api::TeiRerank, "[").is_err());
    }
}
