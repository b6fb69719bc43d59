//! A request's output chunks, packed. A long run holds millions of chunks
//! (a 300k-request soak of 64-token answers, 19 million): held as one
//! 24-byte object each they were most of `report`'s memory, and written as
//! one JSON object each most of the records file. Here each chunk is its
//! time as a delta from the chunk before (the first from the run's origin),
//! zigzag LEB128, then its tokens and channel in one LEB128 varint: about
//! 5 bytes a chunk of 1 token 8 ms apart.
//!
//! In a records file (`--records`, each record written through
//! [`PackedRecord`]; the chunks alone through [`Packed`]) a request's
//! chunks are
//!
//! ```json
//! {"t_ns": "<base64 of the time deltas>", "tokens": 1, "channel": "content"}
//! ```
//!
//! `t_ns` the chunks' times (ns from the run's origin) as zigzag LEB128
//! deltas, the first from 0, in standard base64; `tokens` one number when
//! every chunk carries as many, else one number per chunk; `channel`
//! absent when every chunk is `content`, the channel's name when all share
//! another, else runs `[["reasoning", 40], ["content", 24]]`. Everywhere
//! else (a result's `requests`, whose form `goodput/v1` keeps) they are an
//! array of `{"t_ns", "tokens", "channel"}` objects. Both forms read
//! anywhere.

use crate::doc::record::RequestRecord;
use base64::Engine;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// A chunk that carried generated output, stamped when its bytes were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct OutputChunk {
    #[serde(rename = "t_ns", with = "crate::util::serde_ns")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub t: Duration,
    /// Tokens attributed to this chunk (`k_i`).
    pub tokens: u32,
    pub channel: Channel,
}

/// Which output channel a chunk carried. A chunk with visible content counts
/// as `content` even when it also carries reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Content,
    Reasoning,
    ToolCalls,
}

/// A request's output-bearing chunks in arrival order, packed (see the
/// module's docs). Read them with [`Chunks::iter`], [`Chunks::first`],
/// [`Chunks::last`] and [`Chunks::pairs`]; each comes out as an
/// [`OutputChunk`] value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Chunks {
    /// Per chunk: zigzag LEB128 of `t` less the previous chunk's `t` (ns),
    /// then LEB128 of `tokens << 2 | channel`.
    packed: Vec<u8>,
    len: u32,
    /// The last chunk pushed, for `last()` and the next delta.
    last: Option<OutputChunk>,
    /// The longest gap between neighbouring chunks (ns), kept as they are
    /// pushed: [`Chunks::max_gap`] without walking them (the summary and the
    /// intervals each read every request's).
    max_gap: u64,
}

fn channel_code(c: Channel) -> u64 {
    match c {
        Channel::Content => 0,
        Channel::Reasoning => 1,
        Channel::ToolCalls => 2,
    }
}

fn channel_of(code: u64) -> Channel {
    match code & 3 {
        1 => Channel::Reasoning,
        2 => Channel::ToolCalls,
        _ => Channel::Content,
    }
}

/// `t` in ns, `u64::MAX` past it; in 64-bit arithmetic (`as_nanos` is a
/// 128-bit product, paid on every chunk pushed).
#[inline]
fn nanos(t: Duration) -> u64 {
    t.as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(u64::from(t.subsec_nanos())))
        .unwrap_or(u64::MAX)
}

/// `v` as LEB128: its bytes are the first `.1` of the array.
fn varint(mut v: u64) -> ([u8; 10], usize) {
    let (mut bytes, mut n) = ([0; 10], 0);
    while v >= 0x80 {
        bytes[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    bytes[n] = v as u8;
    (bytes, n + 1)
}

/// `v` as LEB128 onto `out`, a byte at a time: a chunk's two varints are one
/// to three bytes each, and copying them from [`varint`]'s array called
/// `memcpy` for each (a tenth of `plan`'s time, simulating).
#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint at `*at`, moving past it; `None` at the end or on a varint
/// that runs off the end or past 64 bits.
#[inline(always)]
fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let (mut v, mut shift) = (0u64, 0u32);
    while shift < 64 {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
    }
    None
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

impl Chunks {
    pub fn new() -> Self {
        Chunks::default()
    }

    /// Room for `n` more chunks of the usual size without reallocating.
    pub fn reserve_exact(&mut self, n: usize) {
        self.packed.reserve_exact(n * 5);
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, c: OutputChunk) {
        let (now, prev) = (nanos(c.t), self.last.map_or(0, |l| nanos(l.t)));
        put_varint(&mut self.packed, zigzag(now.wrapping_sub(prev) as i64));
        put_varint(&mut self.packed, (u64::from(c.tokens) << 2) | channel_code(c.channel));
        if let Some(l) = self.last {
            // Below u64::MAX ns both times are exact, and the gap is their
            // difference (0 where the last came later).
            let gap = if now < u64::MAX { now.saturating_sub(prev) } else { nanos(c.t.saturating_sub(l.t)) };
            self.max_gap = self.max_gap.max(gap);
        }
        self.len += 1;
        self.last = Some(c);
    }

    /// The longest gap between neighbouring chunks: none under two chunks.
    pub fn max_gap(&self) -> Option<Duration> {
        (self.len >= 2).then(|| Duration::from_nanos(self.max_gap))
    }

    pub fn first(&self) -> Option<OutputChunk> {
        self.iter().next()
    }

    pub fn last(&self) -> Option<OutputChunk> {
        self.last
    }

    /// The `i`th chunk (0-based); walks the chunks before it.
    pub fn get(&self, i: usize) -> Option<OutputChunk> {
        self.iter().nth(i)
    }

    /// The `i`th chunk (0-based), as `slice[i]`: panics past the end.
    pub fn at(&self, i: usize) -> OutputChunk {
        self.get(i).unwrap_or_else(|| panic!("chunk {i} of {}", self.len))
    }

    /// Gives the chunks `ks`' token counts in turn, keeping the first
    /// `ks.len()` chunks (as `zip`ping them would): in place where each new
    /// count packs into as many bytes as the old, as counts under 32 do over
    /// the 0 a reader packs first; else packed anew.
    pub fn set_tokens(&mut self, ks: &[u32]) {
        self.truncate(ks.len());
        let mut at = 0;
        for &k in &ks[..self.len()] {
            // The bytes were packed by `push`: both varints are there.
            let (Some(_), start) = (get_varint(&self.packed, &mut at), at) else { break };
            let Some(old) = get_varint(&self.packed, &mut at) else { break };
            let (bytes, len) = varint((u64::from(k) << 2) | (old & 3));
            if len != at - start {
                *self = self.iter().zip(ks).map(|(c, &tokens)| OutputChunk { tokens, ..c }).collect();
                return;
            }
            self.packed[start..at].copy_from_slice(&bytes[..len]);
        }
        if let Some(last) = self.last.as_mut() {
            last.tokens = ks[self.len as usize - 1];
        }
    }

    /// Keeps the first `n` chunks.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len() {
            return;
        }
        self.max_gap = self.gaps_ns().take(n.saturating_sub(1)).max().unwrap_or(0);
        let mut it = self.iter();
        let last = it.by_ref().take(n).last();
        let at = it.at;
        self.packed.truncate(at);
        self.len = n as u32;
        self.last = last;
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter { bytes: &self.packed, at: 0, t: 0, left: self.len as usize }
    }

    /// Each chunk with the one after it, in order (`windows(2)` of a slice).
    /// Each chunk is unpacked once.
    pub fn pairs(&self) -> impl Iterator<Item = (OutputChunk, OutputChunk)> + '_ {
        let mut it = self.iter();
        let mut prev = it.next();
        it.map(move |c| (prev.replace(c).unwrap_or(c), c))
    }

    /// Each gap between neighbouring chunks in ns, in order: `pairs()`'
    /// `b.t − a.t` (0 where a time goes back), read off the packed times
    /// without unpacking the chunks (the summary's ITL takes every gap of
    /// every request).
    pub fn gaps_ns(&self) -> impl Iterator<Item = u64> + '_ {
        let (mut at, mut t, mut prev) = (0, 0u64, None::<u64>);
        (0..self.len)
            .map_while(move |_| {
                // The bytes were packed by `push`: both varints are there.
                let d = get_varint(&self.packed, &mut at)?;
                get_varint(&self.packed, &mut at)?;
                t = t.wrapping_add(unzigzag(d) as u64);
                Some(prev.replace(t).map(|p| t.saturating_sub(p)))
            })
            .flatten()
    }

    pub fn to_vec(&self) -> Vec<OutputChunk> {
        self.iter().collect()
    }

    /// Gives back the room left over from pushing.
    pub fn shrink_to_fit(&mut self) {
        self.packed.shrink_to_fit();
    }

    /// Bytes the packed chunks take (their heap part).
    pub fn packed_len(&self) -> usize {
        self.packed.len()
    }
}

/// The chunks of a [`Chunks`], unpacked one at a time.
#[derive(Clone)]
pub struct Iter<'a> {
    bytes: &'a [u8],
    at: usize,
    t: u64,
    left: usize,
}

impl Iterator for Iter<'_> {
    type Item = OutputChunk;

    fn next(&mut self) -> Option<OutputChunk> {
        if self.left == 0 {
            return None;
        }
        // The bytes were packed by `push`: both varints are there.
        let d = get_varint(self.bytes, &mut self.at)?;
        let k = get_varint(self.bytes, &mut self.at)?;
        self.left -= 1;
        self.t = self.t.wrapping_add(unzigzag(d) as u64);
        Some(OutputChunk { t: Duration::from_nanos(self.t), tokens: (k >> 2) as u32, channel: channel_of(k) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Chunks {
    type Item = OutputChunk;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<OutputChunk> for Chunks {
    fn from_iter<I: IntoIterator<Item = OutputChunk>>(it: I) -> Self {
        let mut c = Chunks::new();
        c.extend(it);
        c
    }
}

impl Extend<OutputChunk> for Chunks {
    fn extend<I: IntoIterator<Item = OutputChunk>>(&mut self, it: I) {
        for chunk in it {
            self.push(chunk);
        }
    }
}

impl From<Vec<OutputChunk>> for Chunks {
    fn from(v: Vec<OutputChunk>) -> Self {
        v.into_iter().collect()
    }
}

impl From<&[OutputChunk]> for Chunks {
    fn from(v: &[OutputChunk]) -> Self {
        v.iter().copied().collect()
    }
}

impl fmt::Debug for Chunks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The chunks' times alone, packed as in [`Chunks`] (the JSON `t_ns`).
fn packed_times(chunks: &Chunks) -> Vec<u8> {
    let mut out = Vec::with_capacity(chunks.packed.len());
    let mut prev = 0u64;
    for c in chunks {
        let t = nanos(c.t);
        put_varint(&mut out, zigzag(t.wrapping_sub(prev) as i64));
        prev = t;
    }
    out
}

/// Runs of equal channels, in order.
fn channel_runs(chunks: &Chunks) -> Vec<(Channel, u32)> {
    let mut runs: Vec<(Channel, u32)> = Vec::new();
    for c in chunks {
        match runs.last_mut() {
            Some((ch, n)) if *ch == c.channel => *n += 1,
            _ => runs.push((c.channel, 1)),
        }
    }
    runs
}

/// Chunks are written as the array of chunk objects that `goodput/v1`
/// documents (a result's `requests`); [`Packed`] writes the records file's
/// packed form.
impl Serialize for Chunks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// Chunks written in their packed form (see the module's docs), as a
/// records file holds them. Both forms read back as [`Chunks`].
pub struct Packed<'a>(pub &'a Chunks);

impl Serialize for Packed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let chunks = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("t_ns", &base64::engine::general_purpose::STANDARD.encode(packed_times(chunks)))?;
        let first = chunks.first().map_or(0, |c| c.tokens);
        if chunks.iter().all(|c| c.tokens == first) {
            m.serialize_entry("tokens", &first)?;
        } else {
            m.serialize_entry("tokens", &chunks.iter().map(|c| c.tokens).collect::<Vec<_>>())?;
        }
        match channel_runs(chunks).as_slice() {
            [] | [(Channel::Content, _)] => {}
            [(one, _)] => m.serialize_entry("channel", one)?,
            runs => m.serialize_entry("channel", runs)?,
        }
        m.end()
    }
}

/// A record as a records file (`--records`) writes it: its chunks
/// [`Packed`], every other field as [`RequestRecord`]'s own `Serialize`
/// writes it, in the same order. The record's derived `Serialize` is run
/// through a serializer that swaps the value of its `chunks` field, so
/// that a field added to the record is written here too.
pub struct PackedRecord<'a>(pub &'a RequestRecord);

impl Serialize for PackedRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(packing::ChunksPacked { inner: s, chunks: &self.0.chunks })
    }
}

/// The serializer behind [`PackedRecord`]: the record's own struct, with
/// the value of its `chunks` field replaced by [`Packed`]. A record is a
/// struct; anything else given to it is an error.
mod packing {
    use super::{Chunks, Packed};
    use serde::ser::{Error, Impossible, SerializeStruct};
    use serde::{Serialize, Serializer};

    pub(super) struct ChunksPacked<'a, S> {
        pub(super) inner: S,
        pub(super) chunks: &'a Chunks,
    }

    pub(super) struct Fields<'a, F> {
        inner: F,
        chunks: &'a Chunks,
    }

    fn not_a_struct<E: Error>() -> E {
        E::custom("PackedRecord writes a record, which serialises as a struct")
    }

    macro_rules! refuse {
        ($($name:ident($($arg:ty),*)),* $(,)?) => {
            $(fn $name(self, $(_: $arg),*) -> Result<S::Ok, S::Error> {
                Err(not_a_struct())
            })*
        };
    }

    impl<'a, S: Serializer> Serializer for ChunksPacked<'a, S> {
        type Ok = S::Ok;
        type Error = S::Error;
        type SerializeSeq = Impossible<S::Ok, S::Error>;
        type SerializeTuple = Impossible<S::Ok, S::Error>;
        type SerializeTupleStruct = Impossible<S::Ok, S::Error>;
        type SerializeTupleVariant = Impossible<S::Ok, S::Error>;
        type SerializeMap = Impossible<S::Ok, S::Error>;
        type SerializeStruct = Fields<'a, S::SerializeStruct>;
        type SerializeStructVariant = Impossible<S::Ok, S::Error>;

        fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
            Ok(Fields { inner: self.inner.serialize_struct(name, len)?, chunks: self.chunks })
        }

        fn is_human_readable(&self) -> bool {
            self.inner.is_human_readable()
        }

        refuse!(
            serialize_bool(bool),
            serialize_i8(i8),
            serialize_i16(i16),
            serialize_i32(i32),
            serialize_i64(i64),
            serialize_u8(u8),
            serialize_u16(u16),
            serialize_u32(u32),
            serialize_u64(u64),
            serialize_f32(f32),
            serialize_f64(f64),
            serialize_char(char),
            serialize_str(&str),
            serialize_bytes(&[u8]),
            serialize_none(),
            serialize_unit(),
            serialize_unit_struct(&'static str),
            serialize_unit_variant(&'static str, u32, &'static str),
        );

        fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<S::Ok, S::Error> {
            Err(not_a_struct())
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, _: &T) -> Result<S::Ok, S::Error> {
            Err(not_a_struct())
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<S::Ok, S::Error> {
            Err(not_a_struct())
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
            Err(not_a_struct())
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, S::Error> {
            Err(not_a_struct())
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, S::Error> {
            Err(not_a_struct())
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, S::Error> {
            Err(not_a_struct())
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
            Err(not_a_struct())
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, S::Error> {
            Err(not_a_struct())
        }
    }

    impl<F: SerializeStruct> SerializeStruct for Fields<'_, F> {
        type Ok = F::Ok;
        type Error = F::Error;

        fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<(), F::Error> {
            if key == "chunks" {
                self.inner.serialize_field(key, &Packed(self.chunks))
            } else {
                self.inner.serialize_field(key, value)
            }
        }

        fn skip_field(&mut self, key: &'static str) -> Result<(), F::Error> {
            self.inner.skip_field(key)
        }

        fn end(self) -> Result<F::Ok, F::Error> {
            self.inner.end()
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TokensField {
    Each(Vec<u32>),
    All(u32),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ChannelField {
    Runs(Vec<(Channel, u32)>),
    All(Channel),
}

/// Why the packed JSON form of chunks does not unpack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum UnpackError {
    #[error("chunks.t_ns is not base64 ({0})")]
    NotBase64(String),
    #[error("chunks.t_ns ends inside a number")]
    CutNumber,
    /// A first delta below zero: chunks are stamped after the run's origin.
    #[error("chunks.t_ns puts the first chunk {back} ns before the run's origin; the line was damaged or edited")]
    BeforeOrigin { back: u64 },
    /// A delta that steps back: chunks are stamped as they arrive, so a
    /// chunk's time is never before the chunk before it's (chunks counted
    /// from 1).
    #[error(
        "chunks.t_ns puts chunk {chunk} {back} ns before chunk {}; chunk times never go back, so the line was \
         damaged or edited",
        .chunk - 1
    )]
    Backward { chunk: usize, back: u64 },
    /// A delta that takes a chunk's time past what a u64 of nanoseconds holds.
    #[error(
        "chunks.t_ns puts chunk {chunk} past 2^64 ns (584 years) after the run's origin; the line was damaged or \
         edited"
    )]
    PastRange { chunk: usize },
    #[error("chunks.tokens has {counts} counts for {chunks} chunks")]
    TokenCounts { counts: usize, chunks: usize },
    #[error("chunks.channel covers {covered} chunks of {chunks}")]
    Channels { covered: usize, chunks: usize },
}

/// Unpacks the JSON form's fields into chunks, or says what is wrong.
fn unpack(t_ns: &str, tokens: TokensField, channel: ChannelField) -> Result<Chunks, UnpackError> {
    let bytes =
        base64::engine::general_purpose::STANDARD.decode(t_ns).map_err(|e| UnpackError::NotBase64(e.to_string()))?;
    let mut times = Vec::new();
    let (mut at, mut t) = (0usize, 0u64);
    while at < bytes.len() {
        let d = unzigzag(get_varint(&bytes, &mut at).ok_or(UnpackError::CutNumber)?);
        // Counted from 1 in the errors.
        let chunk = times.len() + 1;
        t = match u64::try_from(d) {
            Ok(up) => t.checked_add(up).ok_or(UnpackError::PastRange { chunk })?,
            Err(_) if chunk == 1 => return Err(UnpackError::BeforeOrigin { back: d.unsigned_abs() }),
            Err(_) => return Err(UnpackError::Backward { chunk, back: d.unsigned_abs() }),
        };
        times.push(t);
    }
    let n = times.len();
    let tokens: Vec<u32> = match tokens {
        TokensField::All(k) => vec![k; n],
        TokensField::Each(ks) if ks.len() == n => ks,
        TokensField::Each(ks) => return Err(UnpackError::TokenCounts { counts: ks.len(), chunks: n }),
    };
    let channels: Vec<Channel> = match channel {
        ChannelField::All(c) => vec![c; n],
        ChannelField::Runs(runs) => {
            // Counted before they are written out: a damaged file's run of
            // four billion is refused, not allocated.
            let covered = runs.iter().fold(0usize, |s, r| s.saturating_add(r.1 as usize));
            if covered != n {
                return Err(UnpackError::Channels { covered, chunks: n });
            }
            runs.into_iter().flat_map(|(c, k)| std::iter::repeat_n(c, k as usize)).collect()
        }
    };
    let mut out = Chunks::new();
    out.packed.reserve_exact(bytes.len() + n);
    for ((t, k), c) in times.into_iter().zip(tokens).zip(channels) {
        out.push(OutputChunk { t: Duration::from_nanos(t), tokens: k, channel: c });
    }
    Ok(out)
}

impl<'de> Deserialize<'de> for Chunks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Chunks;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("output chunks: {\"t_ns\": base64, \"tokens\", \"channel\"}, or an array of chunks")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Chunks, A::Error> {
                let mut out = Chunks::new();
                while let Some(c) = seq.next_element::<OutputChunk>()? {
                    // Stamped as they arrive: a chunk before the one before
                    // it was damaged or edited.
                    if let Some(prev) = out.last().filter(|p| c.t < p.t) {
                        return Err(de::Error::custom(format!(
                            "chunk {} has t_ns {}, before chunk {}'s {}; chunk times never go back, so the chunks \
                             were damaged or edited",
                            out.len() + 1,
                            nanos(c.t),
                            out.len(),
                            nanos(prev.t)
                        )));
                    }
                    out.push(c);
                }
                out.shrink_to_fit();
                Ok(out)
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Chunks, A::Error> {
                let (mut t_ns, mut tokens, mut channel) = (None::<String>, None, None);
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "t_ns" => t_ns = Some(map.next_value()?),
                        "tokens" => tokens = Some(map.next_value()?),
                        "channel" => channel = Some(map.next_value()?),
                        other => return Err(de::Error::unknown_field(other, &["t_ns", "tokens", "channel"])),
                    }
                }
                let t_ns = t_ns.ok_or_else(|| de::Error::missing_field("t_ns"))?;
                let tokens = tokens.ok_or_else(|| de::Error::missing_field("tokens"))?;
                unpack(&t_ns, tokens, channel.unwrap_or(ChannelField::All(Channel::Content))).map_err(de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// The schema of both forms: the packed object `Serialize` writes, and the
/// array of chunk objects of older files.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Chunks {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Chunks".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let chunk = g.subschema_for::<OutputChunk>();
        let channel = g.subschema_for::<Channel>();
        schemars::json_schema!({
            "description": "A request's output-bearing chunks in arrival order: in a result document an \
                array of chunk objects; in a records file (`--records`) packed: `t_ns` the \
                chunks' times in ns from the run's origin as zigzag LEB128 varints of the difference from \
                the chunk before (the first from 0), in standard base64; `tokens` the tokens of every chunk \
                (`k_i`) when they are all equal, else one count per chunk; `channel` absent when every \
                chunk is `content`, one channel when all share it, else runs of `[channel, chunks]` in \
                order. Either form reads anywhere.",
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "t_ns": { "type": "string", "contentEncoding": "base64" },
                        "tokens": {
                            "oneOf": [
                                { "type": "integer", "minimum": 0 },
                                { "type": "array", "items": { "type": "integer", "minimum": 0 } },
                            ],
                        },
                        "channel": {
                            "oneOf": [
                                channel,
                                {
                                    "type": "array",
                                    "items": {
                                        "type": "array",
                                        "prefixItems": [channel, { "type": "integer", "minimum": 0 }],
                                        "minItems": 2,
                                        "maxItems": 2,
                                    },
                                },
                            ],
                        },
                    },
                    "required": ["t_ns", "tokens"],
                    "additionalProperties": false,
                },
                { "type": "array", "items": chunk },
            ],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chunk(t: u64, tokens: u32, channel: Channel) -> OutputChunk {
        OutputChunk { t: Duration::from_nanos(t), tokens, channel }
    }

    proptest! {
        /// Token counts set in place read back as the chunks given those
        /// counts one by one, whatever their sizes (a count of 32 or more
        /// over a 0 no longer packs in one byte) and however many.
        #[test]
        fn token_counts_set_in_place_read_as_counts_given_one_by_one(
            start in proptest::collection::vec((0u64..1 << 40, 0u32..40, 0u8..3), 0..40),
            ks in proptest::collection::vec(prop_oneof![0u32..32, 0u32..100_000], 0..45),
        ) {
            let channels = [Channel::Content, Channel::Reasoning, Channel::ToolCalls];
            let mut t = 0;
            let v: Vec<OutputChunk> = start.iter().map(|&(d, k, c)| { t += d; chunk(t, k, channels[c as usize]) }).collect();
            let want: Chunks = v.iter().zip(&ks).map(|(c, &tokens)| OutputChunk { tokens, ..*c }).collect();
            let mut got = Chunks::from(v);
            got.set_tokens(&ks);
            prop_assert_eq!(got.to_vec(), want.to_vec());
            prop_assert_eq!((got.len(), got.last()), (want.len(), want.last()));
            prop_assert_eq!(got, want);
        }

        /// The longest gap kept as chunks are pushed is the one their pairs
        /// give, kept or cut (times that go back count a gap of 0, as
        /// `pairs` saturates them), and none under two chunks.
        #[test]
        fn the_longest_gap_kept_is_the_pairs_longest(
            ts in proptest::collection::vec(0u64..1 << 40, 0..40),
            keep in 0usize..45,
        ) {
            let longest = |c: &Chunks| c.pairs().map(|(a, b)| b.t.saturating_sub(a.t)).max();
            let mut c: Chunks = ts.iter().map(|&t| chunk(t, 1, Channel::Content)).collect();
            prop_assert_eq!(c.max_gap(), longest(&c));
            let pairs: Vec<u64> = c.pairs().map(|(a, b)| nanos(b.t.saturating_sub(a.t))).collect();
            prop_assert_eq!(c.gaps_ns().collect::<Vec<_>>(), pairs);
            c.truncate(keep);
            prop_assert_eq!(c.max_gap(), longest(&c));
            // Read back (a file's times never go back: sorted).
            let mut sorted = ts.clone();
            sorted.sort_unstable();
            let c: Chunks = sorted.iter().map(|&t| chunk(t, 1, Channel::Content)).collect();
            let back: Chunks = serde_json::from_value(serde_json::to_value(Packed(&c)).unwrap()).unwrap();
            prop_assert_eq!(back.max_gap(), longest(&c));
        }
    }

    #[test]
    fn packs_reads_back_and_writes_the_documented_json() {
        let v = vec![
            chunk(26_464_742, 1, Channel::Reasoning),
            chunk(34_675_985, 1, Channel::Reasoning),
            chunk(42_874_160, 3, Channel::Content),
            chunk(42_874_160, 0, Channel::ToolCalls),
        ];
        let c = Chunks::from(v.clone());
        assert_eq!((c.len(), c.first(), c.last(), c.get(2)), (4, Some(v[0]), Some(v[3]), Some(v[2])));
        assert_eq!(c.to_vec(), v);
        assert_eq!(c.at(1), v[1]);
        let mut cut = c.clone();
        cut.truncate(2);
        assert_eq!((cut.to_vec(), cut.last()), (v[..2].to_vec(), Some(v[1])));
        cut.push(v[2]);
        assert_eq!(cut.to_vec(), v[..3]);
        assert_eq!(c.pairs().map(|(a, b)| b.t - a.t).collect::<Vec<_>>()[..2], [v[1].t - v[0].t, v[2].t - v[1].t]);
        let json = serde_json::to_value(Packed(&c)).unwrap();
        assert_eq!(json["tokens"], serde_json::json!([1, 1, 3, 0]));
        assert_eq!(json["channel"], serde_json::json!([["reasoning", 2], ["content", 1], ["tool_calls", 1]]));
        // The times: zigzag varints of 26464742, then of each difference.
        let bytes = base64::engine::general_purpose::STANDARD.decode(json["t_ns"].as_str().unwrap()).unwrap();
        let mut expect = Vec::new();
        for d in [26_464_742i64, 8_211_243, 8_198_175, 0] {
            put_varint(&mut expect, zigzag(d));
        }
        assert_eq!(bytes, expect);
        assert_eq!(serde_json::from_value::<Chunks>(json).unwrap(), c);
        // Without `Packed`, an array of chunk objects, as a slice of them is; it reads to the same.
        let array = serde_json::to_string(&c).unwrap();
        assert_eq!(array, serde_json::to_string(&v).unwrap());
        assert_eq!(serde_json::from_str::<Chunks>(&array).unwrap(), c);
    }

    #[test]
    fn uniform_chunks_write_one_count_and_no_channel() {
        let c: Chunks = (0..64).map(|i| chunk(1_000_000_000 + i * 8_000_000, 1, Channel::Content)).collect();
        let text = serde_json::to_string(&Packed(&c)).unwrap();
        assert!(text.ends_with(r#","tokens":1}"#), "{text}");
        assert!(!text.contains("channel"), "{text}");
        assert!(text.len() < 64 * 6, "{} bytes", text.len());
        assert_eq!(serde_json::from_str::<Chunks>(&text).unwrap(), c);
        let empty = serde_json::to_string(&Packed(&Chunks::new())).unwrap();
        assert_eq!(serde_json::from_str::<Chunks>(&empty).unwrap(), Chunks::new());
        assert_eq!(serde_json::from_str::<Chunks>("[]").unwrap(), Chunks::new());
        let all_reasoning: Chunks = (0..3).map(|i| chunk(i, 2, Channel::Reasoning)).collect();
        let text = serde_json::to_string(&Packed(&all_reasoning)).unwrap();
        assert!(text.contains(r#""channel":"reasoning""#), "{text}");
        assert_eq!(serde_json::from_str::<Chunks>(&text).unwrap(), all_reasoning);
    }

    #[test]
    fn packed_applies_to_what_it_wraps_only() {
        let c: Chunks = vec![chunk(5, 1, Channel::Content)].into();
        assert_eq!(serde_json::to_string(&Packed(&c)).unwrap(), r#"{"t_ns":"Cg==","tokens":1}"#);
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"[{"t_ns":5,"tokens":1,"channel":"content"}]"#);
        // A record through PackedRecord: its chunks packed, in their place,
        // every other field as the record writes it; the record itself keeps the array.
        let mut r = RequestRecord::new(3, Duration::from_millis(1), Duration::from_millis(2));
        r.chunks = c.clone();
        r.finish_reason = Some("stop".into());
        let plain = serde_json::to_string(&r).unwrap();
        let array = r#""chunks":[{"t_ns":5,"tokens":1,"channel":"content"}]"#;
        assert!(plain.contains(array), "{plain}");
        let line = serde_json::to_string(&PackedRecord(&r)).unwrap();
        assert_eq!(line, plain.replace(array, r#""chunks":{"t_ns":"Cg==","tokens":1}"#));
        assert_eq!(serde_json::from_str::<RequestRecord>(&line).unwrap(), r);
        // Only a record's struct is taken.
        let e = c.serialize(packing::ChunksPacked { inner: &mut serde_json::Serializer::new(Vec::new()), chunks: &c });
        assert!(e.unwrap_err().to_string().contains("serialises as a struct"));
    }

    #[test]
    fn bad_packed_chunks_are_errors_that_say_what_is_wrong() {
        let e = |s: &str| serde_json::from_str::<Chunks>(s).unwrap_err().to_string();
        assert!(e(r#"{"t_ns":"!!","tokens":1}"#).contains("chunks.t_ns is not base64"));
        assert!(e(r#"{"t_ns":"gA==","tokens":1}"#).contains("chunks.t_ns ends inside a number"));
        assert!(e(r#"{"t_ns":"AgI=","tokens":[1]}"#).contains("chunks.tokens has 1 counts for 2 chunks"));
        assert!(e(r#"{"t_ns":"AgI=","tokens":1,"channel":[["content",3]]}"#)
            .contains("chunks.channel covers 3 chunks of 2"));
        // A run claiming four billion chunks is refused before it is written out.
        assert!(e(r#"{"t_ns":"AgI=","tokens":1,"channel":[["content",4294967295]]}"#)
            .contains("chunks.channel covers 4294967295 chunks of 2"));
        assert!(e(r#"{"t_ns":"AgI=","when":1}"#).contains("unknown field `when`"));
        assert!(e(r#"{"t_ns":"AgI="}"#).contains("missing field `tokens`"));
    }

    /// `t_ns` of the zigzag varints of `deltas`, as a packed chunks object.
    fn packed_deltas(deltas: &[i64]) -> String {
        let mut bytes = Vec::new();
        for &d in deltas {
            put_varint(&mut bytes, zigzag(d));
        }
        format!(r#"{{"t_ns":"{}","tokens":1}}"#, base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    #[test]
    fn packed_times_that_wrap_or_step_back_are_refused() {
        let e = |s: &str| serde_json::from_str::<Chunks>(s).unwrap_err().to_string();
        // An edited line, t_ns of bytes 01 02 03: deltas -1, 1, -2 ns. Read
        // with wrapping it put the first chunk 2^64 - 1 ns after the origin.
        let edited = e(r#"{"t_ns":"AQID","tokens":1}"#);
        assert!(edited.contains("chunks.t_ns puts the first chunk 1 ns before the run's origin"), "{edited}");
        let back = e(&packed_deltas(&[5_000, 1_000, -1_001]));
        assert!(back.contains("chunks.t_ns puts chunk 3 1001 ns before chunk 2; chunk times never go back"), "{back}");
        // Past what a u64 of nanoseconds holds: refused, not wrapped to a small time.
        let past = e(&packed_deltas(&[i64::MAX, i64::MAX, 2]));
        assert!(past.contains("chunks.t_ns puts chunk 3 past 2^64 ns"), "{past}");
        // The most a u64 holds, and equal times, still read.
        let top: Chunks = serde_json::from_str(&packed_deltas(&[i64::MAX, i64::MAX, 1, 0])).unwrap();
        assert_eq!(
            top.to_vec().iter().map(|c| nanos(c.t)).collect::<Vec<_>>(),
            [i64::MAX as u64, u64::MAX - 1, u64::MAX, u64::MAX]
        );
    }

    #[test]
    fn array_chunks_out_of_order_are_refused() {
        let e = serde_json::from_str::<Chunks>(
            r#"[{"t_ns":10,"tokens":1,"channel":"content"},{"t_ns":30,"tokens":1,"channel":"content"},
                {"t_ns":20,"tokens":1,"channel":"content"}]"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("chunk 3 has t_ns 20, before chunk 2's 30; chunk times never go back"), "{e}");
        let same: Chunks = serde_json::from_str(
            r#"[{"t_ns":10,"tokens":1,"channel":"content"},{"t_ns":10,"tokens":2,"channel":"content"}]"#,
        )
        .unwrap();
        assert_eq!(same.len(), 2);
    }

    #[test]
    fn a_packed_record_line_with_times_that_step_back_is_refused() {
        let mut r = RequestRecord::new(3, Duration::from_millis(1), Duration::from_millis(2));
        r.chunks = vec![chunk(5, 1, Channel::Content), chunk(9, 1, Channel::Content)].into();
        let line = serde_json::to_string(&PackedRecord(&r)).unwrap();
        assert_eq!(serde_json::from_str::<RequestRecord>(&line).unwrap(), r);
        let damaged = line.replace(&packed_deltas(&[5, 4])[..], &packed_deltas(&[5, -6]));
        assert_ne!(damaged, line);
        let e = serde_json::from_str::<RequestRecord>(&damaged).unwrap_err().to_string();
        assert!(e.contains("chunks.t_ns puts chunk 2 6 ns before chunk 1"), "{e}");
    }

    proptest! {
        #[test]
        fn any_chunks_round_trip_through_json_and_packing(
            v in prop::collection::vec((0u64..u64::MAX / 2, 0u32..5000, 0u64..3), 0..80)
        ) {
            // In memory, times in any order pack and read back.
            let mut v: Vec<OutputChunk> = v.into_iter().map(|(t, k, c)| chunk(t, k, channel_of(c))).collect();
            let c = Chunks::from(v.clone());
            prop_assert_eq!(c.to_vec(), v.clone());
            let pairs: Vec<_> = v.windows(2).map(|w| (w[0], w[1])).collect();
            prop_assert_eq!(c.pairs().collect::<Vec<_>>(), pairs);
            // Through JSON, as goodput stamps them: in order (equal times too).
            v.sort_by_key(|c| c.t);
            let c = Chunks::from(v.clone());
            let back: Chunks = serde_json::from_str(&serde_json::to_string(&Packed(&c)).unwrap()).unwrap();
            prop_assert_eq!(back.to_vec(), v.clone());
            let back: Chunks = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
            prop_assert_eq!(back.to_vec(), v);
        }
    }
}
