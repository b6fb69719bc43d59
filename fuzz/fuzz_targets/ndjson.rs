//! The NDJSON line reader: any bytes, in any pieces, read without panicking
//! and to the same lines as when they come whole.
#![no_main]
use goodput_fuzz::{pieces, split};
use goodput_load::ndjson::LineReader;
use libfuzzer_sys::fuzz_target;

fn read<'a>(parts: impl Iterator<Item = &'a [u8]>) -> Vec<String> {
    let mut r = LineReader::default();
    let mut out = Vec::new();
    for p in parts {
        r.feed(p, &mut |l| out.push(l.to_owned()));
    }
    r.finish(&mut |l| out.push(l.to_owned()));
    out
}

fuzz_target!(|data: &[u8]| {
    let (payload, cuts) = split(data);
    let whole = read(std::iter::once(payload));
    assert_eq!(whole, read(pieces(payload, &cuts)));
});
