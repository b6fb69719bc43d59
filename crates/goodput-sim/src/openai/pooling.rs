//! The pooling routes the simulator answers: OpenAI's `/v1/embeddings`, the
//! `/v1/rerank` of vLLM, Jina and Cohere, and TEI's own `/rerank` (shapes in
//! `goodput_load::protocol::pooling`). Each input of an embeddings request,
//! and each query–document pair of a rerank (a cross-encoder reads them
//! together, as vLLM's does), is one sequence the server prefills; the
//! answer's vectors and scores are deterministic in the sequences' tokens.

use super::fields::{Loose, PoolQuery, PoolText, PoolTexts};
use super::route::error_body;
use crate::template::ChatTemplate;
use serde::Deserialize;
use serde_json::{json, Value};

/// The most dimensions a simulated embedding has: the model's hidden size,
/// capped so that a batch's answer stays small.
pub const MAX_EMBED_DIM: usize = 256;

/// A pooling route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolRoute {
    Embeddings,
    Rerank,
    /// TEI's `/rerank`: `texts` for documents, a bare list of ranks back.
    TeiRerank,
}

impl PoolRoute {
    pub const ALL: [PoolRoute; 3] = [PoolRoute::Embeddings, PoolRoute::Rerank, PoolRoute::TeiRerank];

    pub fn path(self) -> &'static str {
        match self {
            PoolRoute::Embeddings => "/v1/embeddings",
            PoolRoute::Rerank => "/v1/rerank",
            PoolRoute::TeiRerank => "/rerank",
        }
    }

    /// The pooling route of a request path, if it is one.
    pub fn of_path(path: &str) -> Option<PoolRoute> {
        PoolRoute::ALL.into_iter().find(|r| r.path() == path)
    }

    /// The JSON body of an error: OpenAI's shape (vLLM answers its routes
    /// so), or TEI's.
    pub fn error_body(self, status: u16, message: &str) -> String {
        match self {
            PoolRoute::TeiRerank => {
                let kind = if status >= 500 { "backend" } else { "validation" };
                json!({ "error": message, "error_type": kind }).to_string()
            }
            _ => error_body(status, message),
        }
    }
}

/// One embeddings or rerank request, read.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolRequest {
    pub route: PoolRoute,
    pub model: Option<String>,
    /// Embeddings' inputs, or rerank's documents.
    pub texts: Vec<PoolText>,
    /// Rerank's query.
    pub query: Option<PoolText>,
    /// Rerank's `top_n` (0 or absent: every document).
    pub top_n: usize,
}

/// The most texts one request may carry: a bound on what a request makes
/// the server hold (vLLM has none; a real batch of embeddings is hundreds).
pub const MAX_TEXTS: usize = 4096;

/// The most bytes a rerank's query–document pairs may come to, the query
/// repeated with each document: a long query with many documents would
/// otherwise make the server build far more text than the request held.
pub const MAX_PAIR_BYTES: usize = 256 << 20;

/// A pooling body's fields, read straight into texts and token ids (a
/// `Map` of `Value`s had taken 3.3 GB for a 63 MB list of ids).
#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    model: Loose<String>,
    #[serde(default)]
    encoding_format: Loose<String>,
    #[serde(default)]
    input: Option<PoolTexts>,
    #[serde(default)]
    documents: Option<PoolTexts>,
    #[serde(default)]
    texts: Option<PoolTexts>,
    #[serde(default)]
    query: Option<PoolQuery>,
    #[serde(default)]
    top_n: Loose<u64>,
}

impl PoolRequest {
    /// Reads a request body of `route`, or says what is wrong with it.
    pub fn parse(route: PoolRoute, body: &[u8]) -> Result<PoolRequest, String> {
        let mut b: Body =
            serde_json::from_slice(body).map_err(|e| format!("the request body is not a JSON object: {e}"))?;
        if b.encoding_format.0.as_deref().is_some_and(|f| f != "float") {
            return Err("goodput's simulator answers encoding_format \"float\" only; drop encoding_format".into());
        }
        let key = match route {
            PoolRoute::Embeddings => "input",
            PoolRoute::Rerank => "documents",
            PoolRoute::TeiRerank => "texts",
        };
        let list = match route {
            PoolRoute::Embeddings => b.input.take(),
            PoolRoute::Rerank => b.documents.take(),
            PoolRoute::TeiRerank => b.texts.take(),
        };
        let query = match route {
            PoolRoute::Embeddings => None,
            PoolRoute::Rerank | PoolRoute::TeiRerank => match b.query.take() {
                None => return Err("the request has no \"query\" string".into()),
                Some(PoolQuery(q)) => Some(q?),
            },
        };
        let Some(list) = list else { return Err(format!("the request has no \"{key}\"")) };
        if let Some(bad) = list.bad {
            return Err(format!("\"{key}\"{bad}"));
        }
        if list.count == 0 {
            return Err(format!("the request carries no {}", if query.is_some() { "documents" } else { "input" }));
        }
        if list.count > MAX_TEXTS as u64 {
            return Err(format!("the request carries {} texts, more than the {MAX_TEXTS} it may", list.count));
        }
        let texts = list.texts;
        if let Some(q) = &query {
            let pairs = q.bytes().saturating_mul(texts.len()).saturating_add(texts.iter().map(PoolText::bytes).sum());
            if pairs > MAX_PAIR_BYTES {
                return Err(format!(
                    "the query read with each of the {} documents comes to {} MiB, more than the {} MiB the \
                     simulator reads; send a shorter query or fewer documents",
                    texts.len(),
                    pairs >> 20,
                    MAX_PAIR_BYTES >> 20
                ));
            }
        }
        let top_n = usize::try_from(b.top_n.0.unwrap_or(0)).unwrap_or(usize::MAX);
        Ok(PoolRequest { route, model: b.model.0, texts, query, top_n })
    }

    /// Each sequence's tokens as a server with template `t` counts them
    /// (its BOS, an encoder's CLS, first), without building them: checked
    /// against the context before [`Self::sequence_ids`] builds them.
    pub fn sequence_tokens(&self, t: ChatTemplate) -> impl Iterator<Item = u64> + '_ {
        let query = self.query.as_ref().map_or(0, PoolText::tokens);
        self.texts.iter().map(move |d| u64::from(t.bos()) + query + d.tokens())
    }

    /// The sequences the server prefills, as token ids after template `t`'s
    /// BOS: each input, or the query and each document together.
    pub fn sequence_ids(&self, t: ChatTemplate) -> Vec<Vec<u32>> {
        self.texts
            .iter()
            .map(|d| {
                let mut ids = t.raw("");
                if let Some(q) = &self.query {
                    q.extend_ids(&mut ids);
                }
                d.extend_ids(&mut ids);
                ids
            })
            .collect()
    }

    /// The answer, given each sequence's token ids (as the server counted
    /// them), an embedding's dimensions, and the request's number.
    pub fn answer(&self, model: &str, ids: &[Vec<u32>], dim: usize, n: u64) -> Value {
        let tokens: usize = ids.iter().map(Vec::len).sum();
        let usage = json!({ "prompt_tokens": tokens, "total_tokens": tokens });
        match self.route {
            PoolRoute::Embeddings => {
                let data: Vec<Value> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, ids)| json!({ "object": "embedding", "index": i, "embedding": embedding(ids, dim) }))
                    .collect();
                json!({ "id": format!("embd-{n}"), "object": "list", "created": super::unix_now(), "model": model,
                        "data": data, "usage": usage })
            }
            PoolRoute::Rerank | PoolRoute::TeiRerank => {
                let mut results: Vec<(usize, f64)> = ids.iter().map(|ids| score(ids)).enumerate().collect();
                results.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                if self.top_n > 0 {
                    results.truncate(self.top_n);
                }
                if self.route == PoolRoute::TeiRerank {
                    let ranks: Vec<Value> =
                        results.into_iter().map(|(i, s)| json!({ "index": i, "score": s })).collect();
                    return Value::Array(ranks);
                }
                let results: Vec<Value> = results
                    .into_iter()
                    .map(|(i, s)| {
                        let text = self.texts.get(i).map(PoolText::text).unwrap_or_default();
                        json!({ "index": i, "document": { "text": text }, "relevance_score": s })
                    })
                    .collect();
                json!({ "id": format!("rerank-{n}"), "model": model, "usage": usage, "results": results })
            }
        }
    }
}

/// A hash of a sequence's token ids.
fn seed(ids: &[u32]) -> u64 {
    ids.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &t| (h ^ u64::from(t)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// A unit vector of `dim` components, deterministic in `ids`.
pub fn embedding(ids: &[u32], dim: usize) -> Vec<f32> {
    use goodput_core::util::hash::{mix64, GOLDEN_GAMMA};
    let s = seed(ids);
    let raw: Vec<f64> = (0..dim as u64)
        .map(|j| (mix64(s.wrapping_add(j.wrapping_mul(GOLDEN_GAMMA))) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        .collect();
    let norm = raw.iter().map(|x| x * x).sum::<f64>().sqrt().max(f64::MIN_POSITIVE);
    raw.iter().map(|x| (x / norm) as f32).collect()
}

/// A relevance score in [0, 1), deterministic in a query–document pair's ids.
pub fn score(ids: &[u32]) -> f64 {
    (goodput_core::util::hash::mix64(seed(ids)) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(r: &PoolRequest) -> Vec<String> {
        r.texts.iter().map(PoolText::text).collect()
    }

    fn sequences(r: &PoolRequest) -> Vec<Vec<u32>> {
        r.sequence_ids(ChatTemplate::None)
    }

    fn words(texts: &[&str]) -> Vec<Vec<u32>> {
        texts.iter().map(|t| crate::tokens::token_ids(t)).collect()
    }

    #[test]
    fn requests_read_their_texts_in_every_shape() {
        let long = "q ".repeat(40_000);
        let huge = serde_json::to_vec(&json!({"query": long, "documents": vec!["d"; 4000]})).unwrap();
        let r = PoolRequest::parse(PoolRoute::Embeddings, br#"{"model":"m","input":"a b"}"#).unwrap();
        assert_eq!((r.model.as_deref(), texts(&r)), (Some("m"), vec!["a b".to_owned()]));
        let r = PoolRequest::parse(PoolRoute::Embeddings, br#"{"input":["a","b c"]}"#).unwrap();
        assert_eq!(sequences(&r), words(&["a", "b c"]));
        let r = PoolRequest::parse(PoolRoute::Embeddings, br#"{"input":[1,2,3]}"#).unwrap();
        assert_eq!(r.texts, [PoolText::Ids(vec![1, 2, 3])], "one list of ids is one input");
        assert_eq!(sequences(&r), words(&["1 2 3"]), "an id is the word of its number");
        let r = PoolRequest::parse(PoolRoute::Embeddings, br#"{"input":[[7,7],[8]]}"#).unwrap();
        assert_eq!(texts(&r), ["7 7", "8"], "a list of lists of ids is one input each");
        let r = PoolRequest::parse(PoolRoute::Rerank, br#"{"query":"q","documents":["x",{"text":"y z"}],"top_n":1}"#)
            .unwrap();
        assert_eq!((sequences(&r), r.top_n), (words(&["q x", "q y z"]), 1));
        assert_eq!(
            r.sequence_tokens(ChatTemplate::Llama3).collect::<Vec<_>>(),
            [3, 4],
            "the BOS, the query, the document"
        );
        // More texts than a request may carry are counted, not kept.
        let many = format!(r#"{{"input":[{}]}}"#, vec![r#""""#; MAX_TEXTS + 5].join(","));
        let e = PoolRequest::parse(PoolRoute::Embeddings, many.as_bytes()).unwrap_err();
        assert!(e.contains(&format!("carries {} texts", MAX_TEXTS + 5)), "{e}");
        for (route, bad, says) in [
            (PoolRoute::Embeddings, &br#"{"model":"m"}"#[..], "no \"input\""),
            (PoolRoute::Embeddings, br#"{"input":[]}"#, "carries no input"),
            (PoolRoute::Embeddings, br#"{"input":[{}]}"#, "\"input\"[0] is an object with no \"text\""),
            (PoolRoute::Embeddings, br#"{"input":[true]}"#, "\"input\"[0] is true: it must be a string"),
            (PoolRoute::Embeddings, br#"{"input":5}"#, "\"input\" is 5: it must be a string"),
            (PoolRoute::Embeddings, br#"{"input":[5,-1]}"#, "\"input\"[1] is -1: a token id"),
            (PoolRoute::Embeddings, br#"{"input":[5,"a"]}"#, "\"input\"[1] mixes token ids"),
            (PoolRoute::Embeddings, br#"{"input":[[5,-1]]}"#, "\"input\"[0][1] is -1: a token id is a whole number"),
            (PoolRoute::Embeddings, br#"{"input":["a",[1.5]]}"#, "\"input\"[1][0] is 1.5"),
            (PoolRoute::Embeddings, br#"{"input":"a","encoding_format":"base64"}"#, "drop encoding_format"),
            (PoolRoute::Rerank, br#"{"documents":["a"]}"#, "no \"query\""),
            (PoolRoute::Rerank, b"[", "not a JSON object"),
            (PoolRoute::Rerank, &huge[..], "shorter query"),
        ] {
            let e = PoolRequest::parse(route, bad).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn answers_are_deterministic_unit_vectors_and_ranked_scores() {
        let r = PoolRequest::parse(PoolRoute::Embeddings, br#"{"input":["a","b"]}"#).unwrap();
        let ids = vec![vec![1, 2], vec![3]];
        let a = r.answer("m", &ids, 8, 1);
        assert_eq!(a["usage"], json!({"prompt_tokens": 3, "total_tokens": 3}));
        let v: Vec<f64> = a["data"][1]["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(v.len(), 8);
        assert!((v.iter().map(|x| x * x).sum::<f64>() - 1.0).abs() < 1e-5, "unit length: {v:?}");
        assert_eq!(a["data"], r.answer("m", &ids, 8, 2)["data"], "the same inputs, the same vectors");
        assert_ne!(a["data"][0]["embedding"], a["data"][1]["embedding"]);

        let r = PoolRequest::parse(PoolRoute::Rerank, br#"{"query":"q","documents":["a","b","c"],"top_n":2}"#).unwrap();
        let a = r.answer("m", &[vec![1, 2], vec![1, 3], vec![1, 4]], 8, 1);
        let results = a["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "top_n");
        let s: Vec<f64> = results.iter().map(|x| x["relevance_score"].as_f64().unwrap()).collect();
        assert!(s[0] >= s[1] && (0.0..1.0).contains(&s[1]), "ranked, in [0, 1): {s:?}");
        assert_eq!(a["usage"]["total_tokens"], 6);

        let r = PoolRequest::parse(PoolRoute::TeiRerank, br#"{"query":"q","texts":["a","b"]}"#).unwrap();
        let a = r.answer("m", &[vec![1, 2], vec![1, 3]], 8, 1);
        let ranks = a.as_array().expect("TEI's bare list");
        assert_eq!(ranks.len(), 2);
        assert!(ranks[0]["score"].as_f64() >= ranks[1]["score"].as_f64() && ranks[0]["index"].is_u64(), "{a}");
        assert!(PoolRoute::TeiRerank.error_body(400, "x").contains("\"error_type\":\"validation\""));
        assert!(PoolRequest::parse(PoolRoute::TeiRerank, br#"{"query":"q","documents":["a"]}"#).is_err());
    }
}
