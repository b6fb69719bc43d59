//! The whole response reader of each API (SSE or NDJSON framing, the API's
//! events, usage, finish, errors, into a request's record): any bytes, in any
//! pieces, read without panicking and to the same record as when they come
//! whole; the same bytes as a whole non-streamed body read too. The first
//! byte picks the API.
#![no_main]
use goodput_core::RequestRecord;
use goodput_fuzz::{pieces, split};
use goodput_load::http1::ReadStamp;
use goodput_load::reader::ResponseReader;
use goodput_load::{Api, PromptBody};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

fn read<'a>(api: Api, parts: impl Iterator<Item = &'a [u8]>) -> RequestRecord {
    let mut r = ResponseReader::new(true).for_api(api).limited(1 << 16);
    for p in parts {
        r.feed(p, ReadStamp { t: Duration::from_millis(1), ..Default::default() });
    }
    r.end_of_stream(Duration::from_millis(2));
    let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
    r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
    rec
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let api = Api::ALL[pick as usize % Api::ALL.len()];
    let (payload, cuts) = split(rest);
    let whole = read(api, std::iter::once(payload));
    assert_eq!(whole, read(api, pieces(payload, &cuts)), "{api:?}");
    let mut r = ResponseReader::new(false).for_api(api);
    r.whole_body(payload, Duration::from_millis(5));
    let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
    r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
});
