//! Runs split over several client processes (`bench --shard I/N`) and put
//! back together (`goodput merge`): what each shard's result says of the
//! run it is part of, the checks before a merge, and the records of every
//! shard placed on one clock. The merged result is then assembled from
//! those records exactly as one process's would be (docs/shards.md).

use crate::doc::config::{ClientSettings, LoadConfig, RunConfig, WorkloadConfig};
use crate::doc::record::RequestRecord;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a shard's result says of the run it is part of (`shard`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ShardInfo {
    /// Names the run: a digest of what every shard of it shares (the seed,
    /// the load and workload settings, the number of shards and the start
    /// instant), the same in every shard's result. `merge` refuses shards
    /// whose `run` differs.
    pub run: String,
    /// This shard's index, 0 ≤ index < count.
    pub index: u32,
    /// How many shards the run was split into.
    pub count: u32,
    /// `--start-at`: the wall-clock instant, in seconds since the Unix
    /// epoch, that every shard waited for before its first send. The
    /// result's `started_unix_s` is when this shard's clock actually began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_s: Option<f64>,
    /// The records file this shard wrote (`--records`), as it was given;
    /// `merge` reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<String>,
}

/// How a merged result was made from its shards (`merge`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct MergeInfo {
    /// The run the shards were of (their `shard.run`).
    pub run: String,
    /// How many shards the run was split into.
    pub count: u32,
    /// The instant every shard waited for (`--start-at`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_s: Option<f64>,
    /// The shards merged, by index.
    pub shards: Vec<MergedShard>,
    /// Indexes of shards that were not there (`merge --allow-partial`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<u32>,
    /// How far apart the shards' clocks began: the latest start less the
    /// earliest, in seconds. Each shard's records are placed on the merged
    /// clock by its own wall-clock start, so a time in one shard and a
    /// time in another are known apart to within this, plus whatever
    /// difference NTP leaves between the machines' clocks.
    pub clock_uncertainty_s: f64,
    /// The shard whose scrapes of the server's metrics the result's
    /// `server_signals` are drawn from (by default only shard 0 scrapes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrapes_from: Option<u32>,
}

/// One shard of a merged run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct MergedShard {
    pub index: u32,
    /// The shard's result file and records file, as they were read.
    pub result: String,
    pub records: String,
    /// The shard's own `run_id`.
    pub run_id: String,
    /// When the shard's clock began, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// Its start less the start instant (`--start-at`), or less the
    /// earliest shard's start without one: how late it began, in seconds.
    pub start_offset_s: f64,
    /// Records it contributed (warm-up included).
    pub requests: u64,
    /// The shard was stopped early (Ctrl-C, SIGTERM).
    #[serde(default)]
    pub interrupted: bool,
}

/// The run identity of a shard: what every shard of one run shares, digested.
pub fn run_identity(
    load: Option<&LoadConfig>,
    workload: Option<&WorkloadConfig>,
    count: u32,
    start_at: Option<f64>,
) -> String {
    #[derive(Serialize)]
    struct Shared<'a> {
        load: Option<LoadConfig>,
        workload: Option<&'a WorkloadConfig>,
        count: u32,
        start_at: Option<f64>,
    }
    // The grace after a stop is each process's own affair.
    let load = load.map(|l| LoadConfig { grace: None, ..l.clone() });
    let text = serde_json::to_string(&Shared { load, workload, count, start_at }).unwrap_or_default();
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// FNV-1a, 64 bits: a digest of a few hundred bytes of settings, to tell
/// runs apart (not to resist anyone who would forge one).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Why two shards' results cannot be of one run: the first setting they
/// differ in, in words; `None` when they agree. Each is its `shard` block
/// and the `config` of its result.
pub fn difference(a: (&ShardInfo, &RunConfig), b: (&ShardInfo, &RunConfig)) -> Option<String> {
    let ((sa, a), (sb, b)) = (a, b);
    if sa.count != sb.count {
        return Some(format!("one was split into {} shards, the other into {}", sa.count, sb.count));
    }
    if sa.start_at_unix_s != sb.start_at_unix_s {
        // As written, unless past what a clock says (1e308 had been 309 digits).
        let t = |s: Option<f64>| {
            s.map_or("none".to_string(), |t| if t.abs() < 1e12 { t.to_string() } else { crate::util::number_text(t) })
        };
        return Some(format!("their --start-at differ ({} and {})", t(sa.start_at_unix_s), t(sb.start_at_unix_s)));
    }
    let (la, lb) = (a.load.as_ref(), b.load.as_ref());
    let seed = |l: Option<&LoadConfig>| l.and_then(|l| l.seed);
    if seed(la) != seed(lb) {
        let said = |s: Option<u64>| s.map_or("none".to_string(), |s| s.to_string());
        return Some(format!("their --seed differ ({} and {})", said(seed(la)), said(seed(lb))));
    }
    if json(&la) != json(&lb) {
        return Some(format!("their load settings differ ({})", first_difference(&la, &lb)));
    }
    let (wa, wb) = (a.workload.as_ref(), b.workload.as_ref());
    if json(&wa) != json(&wb) {
        return Some(format!("their workload settings differ ({})", first_difference(&wa, &wb)));
    }
    if let Some(why) = client_difference(a.client.as_ref(), b.client.as_ref()) {
        return Some(why);
    }
    (sa.run != sb.run).then(|| format!("their run identities differ ({} and {})", sa.run, sb.run))
}

/// The first request setting two shards' `config.client` differ in, in
/// words, by its flag: what is sent (the API, streaming, usage, the body's
/// extra fields, the headers, the key), how it is timed and measured (the
/// timeout, the HTTP client, where a chunk's time is taken) and the embedded
/// server's settings. Shards had been merged across `--no-stream` and
/// streaming, their TTFTs mixing first tokens with whole responses. The URL
/// may differ (one server under two names), and the model is the target's
/// check. `--header` values are never saved (they may be secrets): their
/// names are compared, case aside, and only names are ever said.
fn client_difference(a: Option<&ClientSettings>, b: Option<&ClientSettings>) -> Option<String> {
    let (a, b) = match (a, b) {
        (None, None) => return None,
        (Some(a), Some(b)) => (a, b),
        (a, _) => {
            let which = if a.is_some() { "the first" } else { "the second" };
            return Some(format!("only {which} says how its requests were sent (config.client)"));
        }
    };
    let differ = |what: &str, x: String, y: String| (x != y).then(|| format!("their {what} differ ({x} and {y})"));
    let opt = |n: Option<u32>| n.map_or("none".to_string(), |n| n.to_string());
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let names = |c: &ClientSettings| {
        let mut v: Vec<String> = c.headers.iter().map(|h| h.to_ascii_lowercase()).collect();
        v.sort();
        v.dedup();
        v
    };
    let listed = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    let (ha, hb) = (names(a), names(b));
    let headers = (ha != hb).then(|| {
        let only = |x: &[String], y: &[String]| x.iter().filter(|h| !y.contains(h)).cloned().collect::<Vec<_>>();
        format!(
            "their --header names differ (one sends {}, the other {}; {} only in one)",
            listed(&ha),
            listed(&hb),
            listed(&[only(&ha, &hb), only(&hb, &ha)].concat())
        )
    });
    let stream = (a.stream != b.stream).then(|| {
        "one streamed its responses and the other did not (--no-stream): their TTFTs would mix first tokens \
         with whole responses"
            .to_string()
    });
    let extra = (a.extra_body != b.extra_body)
        .then(|| format!("their --extra-body differ ({})", first_difference(&a.extra_body, &b.extra_body)));
    let key = |c: &ClientSettings| if c.api_key.is_some() { "a key" } else { "no key" }.to_string();
    stream
        .or_else(|| differ("--api", a.api.clone(), b.api.clone()))
        .or_else(|| differ("--embed-batch", opt(a.embed_batch), opt(b.embed_batch)))
        .or_else(|| differ("--rerank-docs", opt(a.rerank_docs), opt(b.rerank_docs)))
        .or_else(|| differ("usage requests (--no-usage)", yes(a.include_usage), yes(b.include_usage)))
        .or(extra)
        .or(headers)
        .or_else(|| differ("API keys (--api-key)", key(a), key(b)))
        .or_else(|| differ("key headers (--key-header)", a.key_header.clone(), b.key_header.clone()))
        .or_else(|| differ("--timeout", a.timeout.clone(), b.timeout.clone()))
        .or_else(|| {
            differ(
                "HTTP clients (--transport, or what auto chose for the URL and proxy)",
                a.transport.clone(),
                b.transport.clone(),
            )
        })
        .or_else(|| {
            differ("chunk stamps (--stamp, or what auto chose for the transport)", a.stamp.clone(), b.stamp.clone())
        })
        .or_else(|| {
            (a.embedded != b.embedded)
                .then(|| format!("their embedded servers differ ({})", first_difference(&a.embedded, &b.embedded)))
        })
}

/// The first setting two config blocks differ in, as `name: a and b` (the
/// whole blocks had been quoted, hundreds of characters each).
fn first_difference<T: Serialize>(a: &T, b: &T) -> String {
    let (a, b) = (serde_json::to_value(a).unwrap_or_default(), serde_json::to_value(b).unwrap_or_default());
    let (Some(ma), Some(mb)) = (a.as_object(), b.as_object()) else {
        return format!("{a} and {b}");
    };
    let none = serde_json::Value::Null;
    let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .find_map(|k| {
            let (x, y) = (ma.get(k).unwrap_or(&none), mb.get(k).unwrap_or(&none));
            (x != y).then(|| format!("{k}: {x} and {y}"))
        })
        .unwrap_or_else(|| format!("{a} and {b}"))
}

/// A config block as compact JSON, to compare and to quote.
fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// `r` with every time moved `by` later: a shard's record placed on a clock
/// that began `by` before its own. `None` when a time would then lie past
/// [`crate::HORIZON`] (a start of 1e308 s had panicked here, "overflow when
/// adding durations"): no run's clock reaches so far.
pub fn shifted(mut r: RequestRecord, by: Duration) -> Option<RequestRecord> {
    let options = [r.first_byte, r.first_choice, r.last_choice, r.stream_end];
    let latest = [r.scheduled, r.sent, r.end]
        .into_iter()
        .chain(options.into_iter().flatten())
        .chain(r.chunks.iter().map(|c| c.t))
        .max()?;
    if latest.checked_add(by).is_none_or(|t| t > crate::HORIZON) {
        return None;
    }
    // Every time is at most `latest`, so none of these sums overflows.
    r.scheduled += by;
    r.sent += by;
    r.end += by;
    for t in [&mut r.first_byte, &mut r.first_choice, &mut r.last_choice, &mut r.stream_end] {
        if let Some(t) = t.as_mut() {
            *t += by;
        }
    }
    r.chunks = r
        .chunks
        .iter()
        .map(|mut c| {
            c.t += by;
            c
        })
        .collect();
    Some(r)
}

/// The offsets that put each shard's clock on the merged one, which begins
/// at the earliest shard's start: each start less that earliest one. Starts
/// are checked when a result is read ([`crate::doc::result::plausible_start`]);
/// one that is not a number gives an offset of zero, never a panic.
pub fn offsets(started_unix_s: &[f64]) -> Vec<Duration> {
    let first = started_unix_s.iter().copied().filter(|s| s.is_finite()).fold(f64::INFINITY, f64::min);
    started_unix_s.iter().map(|s| crate::clamped_secs(s - first)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::{Channel, OutputChunk};

    #[test]
    fn the_identity_is_what_shards_share() {
        let load = LoadConfig { rate: Some(crate::doc::config::Rate(30.0)), seed: Some(1), ..LoadConfig::default() };
        let id = |l: &LoadConfig, n, t| run_identity(Some(l), None, n, t);
        let base = id(&load, 3, Some(1.7e9));
        assert_eq!(base.len(), 16);
        assert_eq!(base, id(&LoadConfig { grace: Some("9s".into()), ..load.clone() }, 3, Some(1.7e9)));
        assert_ne!(base, id(&LoadConfig { seed: Some(2), ..load.clone() }, 3, Some(1.7e9)));
        assert_ne!(base, id(&load, 4, Some(1.7e9)));
        assert_ne!(base, id(&load, 3, None));
    }

    /// Load settings that differ are named by their first differing setting,
    /// not quoted whole.
    #[test]
    fn the_first_differing_setting_is_named() {
        let a = LoadConfig { rate: Some(crate::doc::config::Rate(30.0)), seed: Some(1), ..LoadConfig::default() };
        let b = LoadConfig { rate: Some(crate::doc::config::Rate(20.0)), ..a.clone() };
        assert_eq!(first_difference(&a, &b), "rate: 30.0 and 20.0");
        let c = LoadConfig { seed: None, ..a.clone() };
        assert_eq!(first_difference(&a, &c), "seed: 1 and null");
    }

    /// Shards whose requests were sent differently are of different runs:
    /// `--no-stream` against streaming had been merged in silence, its
    /// TTFTs whole responses among first tokens. Headers are named, never
    /// valued; the URL may differ.
    #[test]
    fn shards_that_sent_their_requests_differently_are_told_apart() {
        let client = ClientSettings {
            api: "chat".into(),
            stream: true,
            include_usage: true,
            headers: vec!["X-Team".into()],
            key_header: "bearer".into(),
            timeout: "5m".into(),
            transport: "goodput http/1.1".into(),
            stamp: "kernel".into(),
            url: "http://127.0.0.1:8000".into(),
            ..ClientSettings::default()
        };
        let info =
            ShardInfo { run: "0123456789abcdef".into(), index: 0, count: 2, start_at_unix_s: None, records: None };
        let config = |c: ClientSettings| RunConfig { client: Some(c), ..RunConfig::default() };
        let why = |b: ClientSettings| difference((&info, &config(client.clone())), (&info, &config(b)));
        assert_eq!(why(client.clone()), None);
        // Another name for the server, and the header's name in another case.
        let same =
            ClientSettings { url: "http://localhost:8000".into(), headers: vec!["x-team".into()], ..client.clone() };
        assert_eq!(why(same), None);
        let cases = [
            (ClientSettings { stream: false, ..client.clone() }, "--no-stream"),
            (ClientSettings { timeout: "1s".into(), ..client.clone() }, "their --timeout differ (5m and 1s)"),
            (
                ClientSettings { api: "completions".into(), ..client.clone() },
                "their --api differ (chat and completions)",
            ),
            (ClientSettings { include_usage: false, ..client.clone() }, "--no-usage"),
            (ClientSettings { stamp: "read".into(), ..client.clone() }, "--stamp"),
            (ClientSettings { transport: "reqwest".into(), ..client.clone() }, "--transport"),
            (ClientSettings { api_key: Some("<redacted>".into()), ..client.clone() }, "(no key and a key)"),
            (
                ClientSettings { headers: vec!["X-Team".into(), "Authorization".into()], ..client.clone() },
                "their --header names differ (one sends x-team, the other authorization, x-team; authorization",
            ),
        ];
        for (b, want) in cases {
            let got = why(b).unwrap_or_default();
            assert!(got.contains(want), "{got}");
        }
        let mut extra = serde_json::Map::new();
        extra.insert("temperature".into(), 0.into());
        let got = why(ClientSettings { extra_body: extra, ..client.clone() }).unwrap_or_default();
        assert_eq!(got, "their --extra-body differ (temperature: null and 0)");
        let got = difference((&info, &config(client.clone())), (&info, &RunConfig::default())).unwrap_or_default();
        assert!(got.contains("only the first says how its requests were sent"), "{got}");
    }

    #[test]
    fn a_shards_records_move_onto_the_merged_clock() {
        let ms = Duration::from_millis;
        let mut r = RequestRecord::new(3, ms(10), ms(11));
        r.first_byte = Some(ms(20));
        r.chunks.push(OutputChunk { t: ms(25), tokens: 1, channel: Channel::Content });
        r.end = ms(30);
        let s = shifted(r.clone(), ms(5)).unwrap();
        assert_eq!(
            (s.scheduled, s.sent, s.first_byte, s.chunks.at(0).t, s.end),
            (ms(15), ms(16), Some(ms(25)), ms(30), ms(35))
        );
        assert_eq!(s.stream_end, None);
        assert_eq!(offsets(&[100.25, 100.0, 100.5]), [ms(250), ms(0), ms(500)]);
        // Past the clock's horizon, or past what a duration holds: refused, not a panic.
        assert_eq!(shifted(r.clone(), crate::HORIZON), None);
        assert_eq!(shifted(r, Duration::MAX), None);
        assert_eq!(offsets(&[1e308, 0.0]), [Duration::MAX, ms(0)]);
    }
}
