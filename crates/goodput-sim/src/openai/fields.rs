//! The large fields of request bodies, read straight into what the
//! simulator keeps: prompts (text, or token ids as `u32`s), chat messages
//! (role, text, image URLs), and the pooling routes' inputs. Nothing goes
//! through `serde_json::Value`, which took 30 to 50 times a body's size for
//! a list of numbers (a 63 MB prompt of ids peaked at 2.1 GB).
//!
//! A value of the wrong shape does not fail the parse: the field records
//! what was wrong and where (`prompt[3] is -1`), ignores the rest of its
//! list unread, and the request is refused with that message once parsed.
//! serde's own error would name a line and column, not the element.

use serde::de::{Deserialize, Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt::{self, Write as _};

/// The most token ids one list keeps: more than any model's context. Ids
/// past it are counted, not kept, so a prompt of a billion ids costs its
/// count and is refused by the context check for what it is.
pub const MAX_KEPT_IDS: usize = 1 << 24;

/// Roles a chat message may have (vLLM's and OpenAI's).
pub const ROLES: [&str; 6] = ["system", "developer", "user", "assistant", "tool", "function"];

/// Content part types read as text or images.
const READ_PARTS: [&str; 2] = ["text", "image_url"];

/// Content part and block types taken and not charged beyond their `text`:
/// OpenAI's refusal, Anthropic's blocks.
const OTHER_PARTS: [&str; 7] =
    ["refusal", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"];

/// A value as an error message names it: `-1`, `1.5`, `null`, `"abc"`,
/// `an object`, `a list`. Lists and objects are read past, not kept.
struct Shape(String);

struct ShapeVisitor;

fn quoted(s: &str) -> String {
    let mut short: String = s.chars().take(40).collect();
    if short.len() < s.len() {
        short.push('…');
    }
    format!("{short:?}")
}

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: Error>(self, v: bool) -> Result<Shape, E> {
        Ok(Shape(v.to_string()))
    }
    fn visit_i64<E: Error>(self, v: i64) -> Result<Shape, E> {
        Ok(Shape(v.to_string()))
    }
    fn visit_u64<E: Error>(self, v: u64) -> Result<Shape, E> {
        Ok(Shape(v.to_string()))
    }
    fn visit_f64<E: Error>(self, v: f64) -> Result<Shape, E> {
        Ok(Shape(v.to_string()))
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Shape, E> {
        Ok(Shape(quoted(v)))
    }
    fn visit_unit<E: Error>(self) -> Result<Shape, E> {
        Ok(Shape("null".into()))
    }
    fn visit_none<E: Error>(self) -> Result<Shape, E> {
        Ok(Shape("null".into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        let mut empty = true;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            empty = false;
        }
        Ok(Shape(if empty { "an empty list" } else { "a list" }.into()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut empty = true;
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            empty = false;
        }
        Ok(Shape(if empty { "an empty object" } else { "an object" }.into()))
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor)
    }
}

/// A string, or what else the value was.
enum Text {
    Str(String),
    Other(String),
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text::Str(v.to_owned()))
            }
            fn visit_string<E: Error>(self, v: String) -> Result<Text, E> {
                Ok(Text::Str(v))
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<Text, E> {
                ShapeVisitor.visit_bool(v).map(|s| Text::Other(s.0))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Text, E> {
                ShapeVisitor.visit_i64(v).map(|s| Text::Other(s.0))
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Text, E> {
                ShapeVisitor.visit_u64(v).map(|s| Text::Other(s.0))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Text, E> {
                ShapeVisitor.visit_f64(v).map(|s| Text::Other(s.0))
            }
            fn visit_unit<E: Error>(self) -> Result<Text, E> {
                Ok(Text::Other("null".into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text, A::Error> {
                ShapeVisitor.visit_seq(seq).map(|s| Text::Other(s.0))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text, A::Error> {
                ShapeVisitor.visit_map(map).map(|s| Text::Other(s.0))
            }
        }
        d.deserialize_any(V)
    }
}

/// What a token id must be, for error messages.
const AN_ID: &str = "a token id is a whole number from 0 to 4294967295";

/// One element of a list that may hold token ids, strings, lists of ids or
/// `{"text": …}` objects: read as what it is, or described.
enum Elem {
    Id(u32),
    Text(String),
    Ids(Ids),
    /// An object's `text`, when it has a string one.
    Object(Option<String>),
    Bad(String),
}

impl<'de> Deserialize<'de> for Elem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Elem;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token id, a string or a list")
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Elem, E> {
                Ok(u32::try_from(v).map_or_else(|_| Elem::Bad(v.to_string()), Elem::Id))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Elem, E> {
                Ok(u32::try_from(v).map_or_else(|_| Elem::Bad(v.to_string()), Elem::Id))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Elem, E> {
                Ok(Elem::Bad(v.to_string()))
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<Elem, E> {
                Ok(Elem::Bad(v.to_string()))
            }
            fn visit_unit<E: Error>(self) -> Result<Elem, E> {
                Ok(Elem::Bad("null".into()))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Elem, E> {
                Ok(Elem::Text(v.to_owned()))
            }
            fn visit_string<E: Error>(self, v: String) -> Result<Elem, E> {
                Ok(Elem::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Elem, A::Error> {
                IdsVisitor.visit_seq(seq).map(Elem::Ids)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Elem, A::Error> {
                let mut text = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "text" => {
                            if let Text::Str(s) = map.next_value::<Text>()? {
                                text = Some(s);
                            }
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Elem::Object(text))
            }
        }
        d.deserialize_any(V)
    }
}

/// A list of token ids: up to [`MAX_KEPT_IDS`] of them kept, all counted;
/// or where its first element that is not an id is, and what it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ids {
    pub kept: Vec<u32>,
    /// Every id of the list, kept or not.
    pub count: u64,
    /// `[j] is …`: the first element that is not an id.
    pub bad: Option<String>,
}

struct IdsVisitor;

impl<'de> Visitor<'de> for IdsVisitor {
    type Value = Ids;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of token ids")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ids, A::Error> {
        let mut ids = Ids::default();
        while let Some(id) = seq.next_element::<IdOrShape>()? {
            match id {
                IdOrShape::Id(id) => ids.push(id),
                IdOrShape::Bad(what) => {
                    ids.bad = Some(format!("[{}] is {what}", ids.count));
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    break;
                }
            }
        }
        Ok(ids)
    }
}

impl Ids {
    fn push(&mut self, id: u32) {
        if self.kept.len() < MAX_KEPT_IDS {
            self.kept.push(id);
        }
        self.count += 1;
    }
}

/// A token id, or what else the element was.
enum IdOrShape {
    Id(u32),
    Bad(String),
}

impl<'de> Deserialize<'de> for IdOrShape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IdOrShape;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token id")
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<IdOrShape, E> {
                Ok(u32::try_from(v).map_or_else(|_| IdOrShape::Bad(v.to_string()), IdOrShape::Id))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<IdOrShape, E> {
                Ok(u32::try_from(v).map_or_else(|_| IdOrShape::Bad(v.to_string()), IdOrShape::Id))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<IdOrShape, E> {
                Ok(IdOrShape::Bad(v.to_string()))
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<IdOrShape, E> {
                Ok(IdOrShape::Bad(v.to_string()))
            }
            fn visit_unit<E: Error>(self) -> Result<IdOrShape, E> {
                Ok(IdOrShape::Bad("null".into()))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<IdOrShape, E> {
                Ok(IdOrShape::Bad(quoted(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<IdOrShape, A::Error> {
                ShapeVisitor.visit_seq(seq).map(|s| IdOrShape::Bad(s.0))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<IdOrShape, A::Error> {
                ShapeVisitor.visit_map(map).map(|s| IdOrShape::Bad(s.0))
            }
        }
        d.deserialize_any(V)
    }
}

/// The simulator's tokens for token ids, appended to `out`: each id read
/// as its number, one word (so one token an id, equal ids equal tokens).
pub fn extend_id_tokens(ids: &[u32], out: &mut Vec<u32>) {
    let mut word = String::with_capacity(10);
    out.extend(ids.iter().map(|&id| {
        word.clear();
        let _ = write!(word, "{id}");
        crate::tokens::token_id(&word)
    }));
}

/// Token ids as the words the simulator reads them as, appended to `out`
/// after a space where it holds text already.
fn push_id_words(ids: &[u32], out: &mut String) {
    for &id in ids {
        if !out.is_empty() {
            out.push(' ');
        }
        let _ = write!(out, "{id}");
    }
}

/// One piece of a prompt: text, or token ids (a run of ids in the list, or
/// one list of them).
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    Ids(Vec<u32>),
}

/// A completion prompt as written: a string, a list of token ids, or a list
/// of strings or of lists of ids (llama.cpp mixes ids and strings in one).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    pub pieces: Vec<Piece>,
    /// Ids counted past [`MAX_KEPT_IDS`] and not kept.
    pub dropped: u64,
    /// A list's length, with how many of its elements are strings and how
    /// many lists (the rest are ids); `None` for a string.
    pub list: Option<ListKinds>,
    /// What is wrong with it: `[3] is -1: …`, or ` is an object: …`.
    pub bad: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ListKinds {
    pub len: u64,
    pub strings: u64,
    pub lists: u64,
}

const PROMPT_SHAPES: &str =
    "a prompt is a string, a list of token ids (whole numbers from 0 to 4294967295), or a list \
                             of strings or of lists of token ids";

impl Prompt {
    /// The prompt opens with token ids (no BOS is added to them).
    pub fn opens_with_ids(&self) -> bool {
        matches!(self.pieces.first(), Some(Piece::Ids(_)))
    }

    /// Its tokens as the simulator counts them: words of its text, one an id.
    pub fn tokens(&self) -> u64 {
        self.dropped
            + self
                .pieces
                .iter()
                .map(|p| match p {
                    Piece::Text(t) => crate::tokens::count_tokens(t),
                    Piece::Ids(ids) => ids.len() as u64,
                })
                .sum::<u64>()
    }

    /// Its token ids: each word's id, each token id's word's id.
    pub fn extend_ids(&self, out: &mut Vec<u32>) {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.extend(crate::tokens::token_ids(t)),
                Piece::Ids(ids) => extend_id_tokens(ids, out),
            }
        }
    }

    /// Its text: strings as written, ids as their numbers, joined by spaces.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) if !t.is_empty() => {
                    if !out.is_empty() {
                        out.push(' ');
                    }
                    out.push_str(t);
                }
                Piece::Text(_) => {}
                Piece::Ids(ids) => push_id_words(ids, &mut out),
            }
        }
        out
    }

    fn refused(what: impl fmt::Display) -> Prompt {
        Prompt { bad: Some(format!("{what}: {PROMPT_SHAPES}")), ..Prompt::default() }
    }
}

impl<'de> Deserialize<'de> for Prompt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Prompt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a prompt")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Prompt, E> {
                Ok(Prompt { pieces: vec![Piece::Text(v.to_owned())], ..Prompt::default() })
            }
            fn visit_string<E: Error>(self, v: String) -> Result<Prompt, E> {
                Ok(Prompt { pieces: vec![Piece::Text(v)], ..Prompt::default() })
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<Prompt, E> {
                Ok(Prompt::refused(format_args!(" is {v}")))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Prompt, E> {
                Ok(Prompt::refused(format_args!(" is the number {v}")))
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Prompt, E> {
                Ok(Prompt::refused(format_args!(" is the number {v}")))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Prompt, E> {
                Ok(Prompt::refused(format_args!(" is the number {v}")))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Prompt, A::Error> {
                let s = ShapeVisitor.visit_map(map)?;
                Ok(Prompt::refused(format_args!(" is {}", s.0)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Prompt, A::Error> {
                let mut p = Prompt { list: Some(ListKinds::default()), ..Prompt::default() };
                let mut kinds = ListKinds::default();
                let mut kept = 0usize;
                // The element before was an id: this one joins its run.
                let mut in_run = false;
                while let Some(e) = seq.next_element::<Elem>()? {
                    let i = kinds.len;
                    kinds.len += 1;
                    let was_in_run = std::mem::replace(&mut in_run, matches!(e, Elem::Id(_)));
                    let bad = match e {
                        Elem::Id(id) => {
                            if kept < MAX_KEPT_IDS {
                                kept += 1;
                                match p.pieces.last_mut() {
                                    Some(Piece::Ids(run)) if was_in_run => run.push(id),
                                    _ => p.pieces.push(Piece::Ids(vec![id])),
                                }
                            } else {
                                p.dropped += 1;
                            }
                            None
                        }
                        Elem::Text(t) => {
                            kinds.strings += 1;
                            p.pieces.push(Piece::Text(t));
                            None
                        }
                        Elem::Ids(ids) => {
                            kinds.lists += 1;
                            match ids.bad {
                                Some(b) => Some(format!("[{i}]{b}: {AN_ID}")),
                                None if ids.count == 0 => {
                                    Some(format!("[{i}] is an empty list: a list of token ids holds one at least"))
                                }
                                None => {
                                    kept += ids.kept.len();
                                    p.dropped += ids.count - ids.kept.len() as u64;
                                    p.pieces.push(Piece::Ids(ids.kept));
                                    None
                                }
                            }
                        }
                        Elem::Object(_) => Some(format!("[{i}] is an object: {PROMPT_SHAPES}")),
                        Elem::Bad(what) => Some(format!("[{i}] is {what}: {PROMPT_SHAPES}")),
                    };
                    if bad.is_some() {
                        p.bad = bad;
                        while seq.next_element::<IgnoredAny>()?.is_some() {}
                        break;
                    }
                }
                p.list = Some(kinds);
                Ok(p)
            }
        }
        d.deserialize_any(V)
    }
}

/// A message's content (or a system prompt): a string, or parts whose
/// texts are joined by spaces and whose images are kept as their URLs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Content {
    pub text: String,
    /// The `image_url` parts' URLs.
    pub images: Vec<String>,
    /// What is wrong with it, after its name: ` is an object: …`, `[2] has …`.
    pub bad: Option<String>,
}

const CONTENT_SHAPES: &str = "a message's content is a string or a list of content parts";

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content { text: v.to_owned(), ..Content::default() })
            }
            fn visit_string<E: Error>(self, v: String) -> Result<Content, E> {
                Ok(Content { text: v, ..Content::default() })
            }
            fn visit_unit<E: Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<Content, E> {
                Ok(Content { bad: Some(format!(" is {v}: {CONTENT_SHAPES}")), ..Content::default() })
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Content, E> {
                Ok(Content { bad: Some(format!(" is {v}: {CONTENT_SHAPES}")), ..Content::default() })
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Content, E> {
                Ok(Content { bad: Some(format!(" is {v}: {CONTENT_SHAPES}")), ..Content::default() })
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Content, E> {
                Ok(Content { bad: Some(format!(" is {v}: {CONTENT_SHAPES}")), ..Content::default() })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content, A::Error> {
                let s = ShapeVisitor.visit_map(map)?;
                Ok(Content { bad: Some(format!(" is {}: {CONTENT_SHAPES}", s.0)), ..Content::default() })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut c = Content::default();
                let mut j = 0u64;
                while let Some(part) = seq.next_element::<Part>()? {
                    let bad = match part {
                        Part::Text(t) => {
                            if !c.text.is_empty() {
                                c.text.push(' ');
                            }
                            c.text.push_str(&t);
                            None
                        }
                        Part::Image(url) => {
                            c.images.push(url);
                            None
                        }
                        Part::Bad(what) => Some(format!("[{j}]{what}")),
                    };
                    if bad.is_some() {
                        c.bad = bad;
                        while seq.next_element::<IgnoredAny>()?.is_some() {}
                        break;
                    }
                    j += 1;
                }
                Ok(c)
            }
        }
        d.deserialize_any(V)
    }
}

/// One content part: its text, an image's URL, or what is wrong with it.
enum Part {
    Text(String),
    Image(String),
    Bad(String),
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Part;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content part")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
                let (mut kind, mut text, mut url) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "type" => kind = Some(map.next_value::<Text>()?),
                        "text" => text = Some(map.next_value::<Text>()?),
                        "image_url" => url = Some(map.next_value::<ImageUrl>()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(match kind {
                    None => {
                        Part::Bad(" has no \"type\": a content part is an object with a type (text, image_url)".into())
                    }
                    Some(Text::Other(what)) => {
                        Part::Bad(format!(".type is {what}: a content part's type is a string (text, image_url)"))
                    }
                    Some(Text::Str(kind)) => match (kind.as_str(), text, url) {
                        ("text", Some(Text::Str(t)), _) => Part::Text(t),
                        ("text", Some(Text::Other(what)), _) => {
                            Part::Bad(format!(".text is {what}: a text part's text is a string"))
                        }
                        ("text", None, _) => Part::Bad(" is a text part with no \"text\"".into()),
                        ("image_url", _, Some(ImageUrl::Url(u))) => Part::Image(u),
                        ("image_url", _, Some(ImageUrl::Bad(what))) => Part::Bad(format!(
                            ".image_url is {what}: an image_url part holds {{\"url\": \"data:image/png;base64,…\"}}"
                        )),
                        ("image_url", _, None) => Part::Bad(" is an image_url part with no \"image_url\"".into()),
                        (k, t, _) if OTHER_PARTS.contains(&k) => match t {
                            Some(Text::Str(t)) => Part::Text(t),
                            _ => Part::Text(String::new()),
                        },
                        (k, _, _) => Part::Bad(format!(
                            " has type {}, which the simulated server does not read: it reads {} parts (and takes {})",
                            quoted(k),
                            READ_PARTS.join(" and "),
                            OTHER_PARTS.join(", ")
                        )),
                    },
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Part, A::Error> {
                let s = ShapeVisitor.visit_seq(seq)?;
                Ok(Part::Bad(format!(" is {}: a content part is an object with a type (text, image_url)", s.0)))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Part, E> {
                Ok(Part::Bad(format!(" is {}: a content part is an object with a type (text, image_url)", quoted(v))))
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<Part, E> {
                Ok(Part::Bad(format!(" is {v}: a content part is an object with a type (text, image_url)")))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Part, E> {
                Ok(Part::Bad(format!(" is {v}: a content part is an object with a type (text, image_url)")))
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Part, E> {
                Ok(Part::Bad(format!(" is {v}: a content part is an object with a type (text, image_url)")))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Part, E> {
                Ok(Part::Bad(format!(" is {v}: a content part is an object with a type (text, image_url)")))
            }
            fn visit_unit<E: Error>(self) -> Result<Part, E> {
                Ok(Part::Bad(" is null: a content part is an object with a type (text, image_url)".into()))
            }
        }
        d.deserialize_any(V)
    }
}

/// An `image_url` part's image: `{"url": …}`, or the URL itself.
enum ImageUrl {
    Url(String),
    Bad(String),
}

impl<'de> Deserialize<'de> for ImageUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ImageUrl;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an image URL")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<ImageUrl, E> {
                Ok(ImageUrl::Url(v.to_owned()))
            }
            fn visit_string<E: Error>(self, v: String) -> Result<ImageUrl, E> {
                Ok(ImageUrl::Url(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ImageUrl, A::Error> {
                let mut url = ImageUrl::Bad("an object with no \"url\"".into());
                while let Some(key) = map.next_key::<String>()? {
                    if key == "url" {
                        url = match map.next_value::<Text>()? {
                            Text::Str(s) => ImageUrl::Url(s),
                            Text::Other(what) => ImageUrl::Bad(format!("an object whose url is {what}")),
                        };
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(url)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ImageUrl, A::Error> {
                ShapeVisitor.visit_seq(seq).map(|s| ImageUrl::Bad(s.0))
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<ImageUrl, E> {
                Ok(ImageUrl::Bad(v.to_string()))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<ImageUrl, E> {
                Ok(ImageUrl::Bad(v.to_string()))
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<ImageUrl, E> {
                Ok(ImageUrl::Bad(v.to_string()))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<ImageUrl, E> {
                Ok(ImageUrl::Bad(v.to_string()))
            }
            fn visit_unit<E: Error>(self) -> Result<ImageUrl, E> {
                Ok(ImageUrl::Bad("null".into()))
            }
        }
        d.deserialize_any(V)
    }
}

/// One chat message: its role and content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatMessage {
    pub role: String,
    pub content: Content,
}

/// A chat's messages, or the first one that is wrong and what is wrong
/// with it (the rest read past).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Messages {
    pub list: Vec<ChatMessage>,
    /// `messages[2].role is "wizard": …`.
    pub bad: Option<String>,
}

/// One element of `messages`: a message, or what is wrong with it (after `messages[i]`).
enum MessageElem {
    Message(ChatMessage),
    Bad(String),
}

const A_MESSAGE: &str = "a message is an object with a role (system, developer, user, assistant, tool or function) \
                         and content";

impl<'de> Deserialize<'de> for MessageElem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageElem;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a message")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MessageElem, A::Error> {
                let (mut role, mut content) = (None, Content::default());
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "role" => role = Some(map.next_value::<Text>()?),
                        "content" => content = map.next_value::<Content>()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let role = match role {
                    None => return Ok(MessageElem::Bad(format!(" has no role: {A_MESSAGE}"))),
                    Some(Text::Other(what)) => return Ok(MessageElem::Bad(format!(".role is {what}: {A_MESSAGE}"))),
                    Some(Text::Str(r)) if !ROLES.contains(&r.as_str()) => {
                        return Ok(MessageElem::Bad(format!(".role is {}: {A_MESSAGE}", quoted(&r))))
                    }
                    Some(Text::Str(r)) => r,
                };
                if let Some(b) = content.bad.take() {
                    return Ok(MessageElem::Bad(format!(".content{b}")));
                }
                Ok(MessageElem::Message(ChatMessage { role, content }))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MessageElem, A::Error> {
                let s = ShapeVisitor.visit_seq(seq)?;
                Ok(MessageElem::Bad(format!(" is {}: {A_MESSAGE}", s.0)))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<MessageElem, E> {
                Ok(MessageElem::Bad(format!(" is {}: {A_MESSAGE}", quoted(v))))
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<MessageElem, E> {
                Ok(MessageElem::Bad(format!(" is {v}: {A_MESSAGE}")))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<MessageElem, E> {
                Ok(MessageElem::Bad(format!(" is {v}: {A_MESSAGE}")))
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<MessageElem, E> {
                Ok(MessageElem::Bad(format!(" is {v}: {A_MESSAGE}")))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<MessageElem, E> {
                Ok(MessageElem::Bad(format!(" is {v}: {A_MESSAGE}")))
            }
            fn visit_unit<E: Error>(self) -> Result<MessageElem, E> {
                Ok(MessageElem::Bad(format!(" is null: {A_MESSAGE}")))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Messages;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Messages, A::Error> {
                let mut m = Messages::default();
                while let Some(e) = seq.next_element::<MessageElem>()? {
                    match e {
                        MessageElem::Message(msg) => m.list.push(msg),
                        MessageElem::Bad(what) => {
                            m.bad = Some(format!("messages[{}]{what}", m.list.len()));
                            while seq.next_element::<IgnoredAny>()?.is_some() {}
                            break;
                        }
                    }
                }
                Ok(m)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Messages, A::Error> {
                let s = ShapeVisitor.visit_map(map)?;
                Ok(Messages {
                    bad: Some(format!("\"messages\" is {}: it must be a list of messages", s.0)),
                    ..Messages::default()
                })
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Messages, E> {
                Ok(Messages {
                    bad: Some(format!("\"messages\" is {}: it must be a list of messages", quoted(v))),
                    ..Messages::default()
                })
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<Messages, E> {
                Ok(Messages {
                    bad: Some(format!("\"messages\" is {v}: it must be a list of messages")),
                    ..Messages::default()
                })
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Messages, E> {
                Ok(Messages {
                    bad: Some(format!("\"messages\" is {v}: it must be a list of messages")),
                    ..Messages::default()
                })
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Messages, E> {
                Ok(Messages {
                    bad: Some(format!("\"messages\" is {v}: it must be a list of messages")),
                    ..Messages::default()
                })
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Messages, E> {
                Ok(Messages {
                    bad: Some(format!("\"messages\" is {v}: it must be a list of messages")),
                    ..Messages::default()
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A pooling route's text: a string (or a `{"text": …}` object's), or token ids.
#[derive(Debug, Clone, PartialEq)]
pub enum PoolText {
    Text(String),
    Ids(Vec<u32>),
}

impl PoolText {
    /// Its tokens as the simulator counts them.
    pub fn tokens(&self) -> u64 {
        match self {
            PoolText::Text(t) => crate::tokens::count_tokens(t),
            PoolText::Ids(ids) => ids.len() as u64,
        }
    }

    /// Its bytes, as the pairs' bound counts them (an id as four).
    pub fn bytes(&self) -> usize {
        match self {
            PoolText::Text(t) => t.len(),
            PoolText::Ids(ids) => ids.len().saturating_mul(4),
        }
    }

    /// Its token ids, appended to `out`.
    pub fn extend_ids(&self, out: &mut Vec<u32>) {
        match self {
            PoolText::Text(t) => out.extend(crate::tokens::token_ids(t)),
            PoolText::Ids(ids) => extend_id_tokens(ids, out),
        }
    }

    /// Its text: the string, or the ids' numbers.
    pub fn text(&self) -> String {
        match self {
            PoolText::Text(t) => t.clone(),
            PoolText::Ids(ids) => {
                let mut out = String::new();
                push_id_words(ids, &mut out);
                out
            }
        }
    }
}

/// A pooling route's list of texts (`input`, `documents`, `texts`): up to
/// `keep` of them kept, all counted; or what is wrong with it (after its name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolTexts {
    pub texts: Vec<PoolText>,
    pub count: u64,
    pub bad: Option<String>,
}

/// The most texts a pooling request keeps: one past the most it may carry
/// (`pooling::MAX_TEXTS`), so that more are counted and refused.
const KEEP_TEXTS: u64 = super::pooling::MAX_TEXTS as u64 + 1;

const POOL_SHAPES: &str = "it must be a string or a list of strings (or of token ids)";

impl<'de> Deserialize<'de> for PoolTexts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PoolTexts;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("texts")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<PoolTexts, E> {
                Ok(PoolTexts { texts: vec![PoolText::Text(v.to_owned())], count: 1, bad: None })
            }
            fn visit_string<E: Error>(self, v: String) -> Result<PoolTexts, E> {
                Ok(PoolTexts { texts: vec![PoolText::Text(v)], count: 1, bad: None })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PoolTexts, A::Error> {
                let mut t = PoolTexts::default();
                // A list of ids is one text: its ids, kept here.
                let mut ids: Option<Ids> = None;
                let mut i = 0u64;
                while let Some(e) = seq.next_element::<Elem>()? {
                    let bad = match (e, ids.as_mut()) {
                        (Elem::Id(id), Some(run)) => {
                            run.push(id);
                            None
                        }
                        (Elem::Id(id), None) if i == 0 => {
                            let mut run = Ids::default();
                            run.push(id);
                            ids = Some(run);
                            None
                        }
                        (Elem::Bad(what), Some(_)) => Some(format!("[{i}] is {what}: {AN_ID}")),
                        (_, Some(_)) | (Elem::Id(_), None) => Some(format!(
                            "[{i}] mixes token ids with other texts: a list of token ids is one text, and texts \
                             are strings or lists of token ids"
                        )),
                        (Elem::Text(s), None) | (Elem::Object(Some(s)), None) => {
                            t.keep(PoolText::Text(s));
                            None
                        }
                        (Elem::Ids(list), None) => match list.bad {
                            Some(b) => Some(format!("[{i}]{b}: {AN_ID}")),
                            None if list.count > list.kept.len() as u64 => {
                                Some(too_many_ids(&format!("[{i}]"), list.count))
                            }
                            None => {
                                t.keep(PoolText::Ids(list.kept));
                                None
                            }
                        },
                        (Elem::Object(None), None) => Some(format!("[{i}] is an object with no \"text\" string")),
                        (Elem::Bad(what), None) => Some(format!("[{i}] is {what}: {POOL_SHAPES}")),
                    };
                    if bad.is_some() {
                        t.bad = bad;
                        while seq.next_element::<IgnoredAny>()?.is_some() {}
                        break;
                    }
                    i += 1;
                }
                if let Some(run) = ids.filter(|_| t.bad.is_none()) {
                    if run.count > run.kept.len() as u64 {
                        t.bad = Some(too_many_ids("", run.count));
                    }
                    t.texts = vec![PoolText::Ids(run.kept)];
                    t.count = 1;
                }
                Ok(t)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PoolTexts, A::Error> {
                let s = ShapeVisitor.visit_map(map)?;
                Ok(PoolTexts { bad: Some(format!(" is {}: {POOL_SHAPES}", s.0)), ..PoolTexts::default() })
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<PoolTexts, E> {
                Ok(PoolTexts { bad: Some(format!(" is {v}: {POOL_SHAPES}")), ..PoolTexts::default() })
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<PoolTexts, E> {
                Ok(PoolTexts { bad: Some(format!(" is {v}: {POOL_SHAPES}")), ..PoolTexts::default() })
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<PoolTexts, E> {
                Ok(PoolTexts { bad: Some(format!(" is {v}: {POOL_SHAPES}")), ..PoolTexts::default() })
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<PoolTexts, E> {
                Ok(PoolTexts { bad: Some(format!(" is {v}: {POOL_SHAPES}")), ..PoolTexts::default() })
            }
            fn visit_unit<E: Error>(self) -> Result<PoolTexts, E> {
                Ok(PoolTexts { bad: Some(format!(" is null: {POOL_SHAPES}")), ..PoolTexts::default() })
            }
        }
        d.deserialize_any(V)
    }
}

/// A pooling text of more ids than are kept (see [`MAX_KEPT_IDS`]): no
/// model's context holds it, and its sequence would be counted short.
fn too_many_ids(at: &str, count: u64) -> String {
    format!(
        "{at} holds {count} token ids, more than any model's context (the simulator keeps {MAX_KEPT_IDS} of a text)"
    )
}

impl PoolTexts {
    fn keep(&mut self, text: PoolText) {
        if self.count < KEEP_TEXTS {
            self.texts.push(text);
        }
        self.count += 1;
    }
}

/// A rerank's query: a string, a `{"text": …}` object, or token ids.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolQuery(pub Result<PoolText, String>);

impl<'de> Deserialize<'de> for PoolQuery {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(PoolQuery(match Elem::deserialize(d)? {
            Elem::Text(s) | Elem::Object(Some(s)) => Ok(PoolText::Text(s)),
            Elem::Ids(ids) => match ids.bad {
                Some(b) => Err(format!("\"query\"{b}: {AN_ID}")),
                None if ids.count > ids.kept.len() as u64 => Err(format!("\"query\"{}", too_many_ids("", ids.count))),
                None => Ok(PoolText::Ids(ids.kept)),
            },
            Elem::Id(id) => Err(format!("\"query\" is {id}: it must be a string")),
            Elem::Object(None) => Err("\"query\" is an object with no \"text\" string".into()),
            Elem::Bad(what) => Err(format!("\"query\" is {what}: it must be a string")),
        }))
    }
}

/// A field that is read where it is a string and taken as absent otherwise
/// (`model`, `encoding_format`), as the pooling routes read them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loose<T>(pub Option<T>);

impl<'de> Deserialize<'de> for Loose<String> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Loose(match Text::deserialize(d)? {
            Text::Str(s) => Some(s),
            Text::Other(_) => None,
        }))
    }
}

impl<'de> Deserialize<'de> for Loose<u64> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Loose(match Elem::deserialize(d)? {
            Elem::Id(n) => Some(u64::from(n)),
            _ => None,
        }))
    }
}
