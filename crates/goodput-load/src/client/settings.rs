//! A client's settings: where and how it sends, and which requests it gives up on.

use crate::http1::Stamps;
use crate::protocol::{BodyOptions, KeyHeader};
use goodput_core::SessionTurn;
use std::time::Duration;

/// Client settings shared by every request of a run.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Server root, e.g. `http://127.0.0.1:8000` (a trailing `/v1` is accepted).
    pub base_url: String,
    pub api_key: Option<String>,
    pub body: BodyOptions,
    pub timeout: Duration,
    pub transport: Transport,
    /// When chunks are stamped: the kernel's receive time or the read's
    /// (kernel stamps need Linux and goodput's own HTTP/1.1 client; `Auto`
    /// takes them where they are to be had).
    pub stamps: Stamps,
    /// The header that carries `api_key`.
    pub key_header: KeyHeader,
    /// More request headers, sent as given (`--header`).
    pub headers: Vec<(String, String)>,
    /// Requests the client gives up on (`--cancel-rate`).
    pub cancel: Option<Cancellation>,
    /// The most bytes a server may make the client hold for one response
    /// at a time: an SSE line or event, an NDJSON line, a whole body
    /// (`--max-buffer`). Past it the request fails as `invalid_response`.
    pub max_buffer: usize,
}

impl ClientConfig {
    /// A client for the few plain requests made before a run (is the
    /// server up, which models it serves): no key, no extra headers, no
    /// give-ups, reqwest's stack and read stamps, the default buffer.
    pub fn probe(base_url: String, timeout: Duration) -> ClientConfig {
        ClientConfig {
            base_url,
            api_key: None,
            body: BodyOptions::default(),
            timeout,
            transport: Transport::Reqwest,
            stamps: Stamps::Read,
            key_header: KeyHeader::Bearer,
            headers: Vec::new(),
            cancel: None,
            max_buffer: MAX_BUFFER,
        }
    }
}

/// The default [`ClientConfig::max_buffer`]: 64 MiB, a thousand times the
/// largest streamed event of a real answer and room for any whole one.
pub const MAX_BUFFER: usize = 64 << 20;

/// Requests the client gives up on, as users who close the tab: a share of
/// them, picked by their number and a seed (so the same requests in every
/// run), disconnect this long after they were sent unless their response
/// has ended by then. The server has the whole request before it is
/// dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cancellation {
    /// Share of requests, 0..=1.
    pub rate: f64,
    pub after: Duration,
    pub seed: u64,
}

impl Cancellation {
    /// Whether request `id` is one given up on: a hash of the seed and the
    /// number, uniform on 0..1, under the rate.
    pub fn picks(&self, id: u64) -> bool {
        goodput_core::util::hash::unit(self.seed, id) < self.rate
    }

    /// Whether request `id` is one given up on: a lone request by its
    /// number, a turn of a session by its session and turn, which a live
    /// run and the engine's virtual one agree on (the order turns are sent
    /// in differs between them).
    pub fn picks_request(&self, id: u64, session: Option<SessionTurn>) -> bool {
        match session {
            None => self.picks(id),
            Some(s) => self.picks(s.id.rotate_left(24) ^ u64::from(s.turn) ^ TURN_SALT),
        }
    }
}

/// Keeps turns' keys apart from lone requests' numbers.
const TURN_SALT: u64 = 0x5e55_1011_0000_0000;

/// Which HTTP stack carries the requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Transport {
    /// goodput's own HTTP/1.1 client for http:// servers reached directly (one task per stream, no hop between tasks per chunk); reqwest for https and through a proxy.
    #[default]
    Auto,
    /// reqwest (hyper) for everything.
    Reqwest,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancellation_picks_its_share_of_requests_the_same_way_every_time() {
        let c = |rate, seed| Cancellation { rate, after: Duration::ZERO, seed };
        let share = |k: Cancellation| (0..20_000).filter(|&i| k.picks(i)).count() as f64 / 20_000.0;
        for rate in [0.01, 0.1, 0.5, 0.9] {
            assert!((share(c(rate, 7)) - rate).abs() < 0.01, "{rate}: {}", share(c(rate, 7)));
        }
        assert_eq!(share(c(0.0, 7)), 0.0);
        assert_eq!(share(c(1.0, 7)), 1.0);
        let picked = |k: Cancellation| (0..200).filter(|&i| k.picks(i)).collect::<Vec<_>>();
        assert_eq!(picked(c(0.2, 7)), picked(c(0.2, 7)), "the same requests for the same seed");
        assert_ne!(picked(c(0.2, 7)), picked(c(0.2, 8)), "others for another seed");
        // A higher rate keeps the requests a lower one picked.
        assert!(picked(c(0.1, 7)).iter().all(|i| picked(c(0.2, 7)).contains(i)));
    }
}
