//! The SSE reader: any bytes, in any pieces, read without panicking and to
//! the same events as when they come whole.
#![no_main]
use goodput_fuzz::{pieces, split};
use goodput_load::sse::{SseEvent, SseReader};
use libfuzzer_sys::fuzz_target;

fn read<'a>(parts: impl Iterator<Item = &'a [u8]>) -> Vec<SseEvent> {
    let mut r = SseReader::new();
    let mut out = Vec::new();
    for p in parts {
        r.feed(p, &mut out);
    }
    r.finish(&mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let (payload, cuts) = split(data);
    let whole = read(std::iter::once(payload));
    assert_eq!(whole, read(pieces(payload, &cuts)));
});
