//! Our chunked-transfer decoder, driven as the client drives it (the bytes
//! it did not take are kept and offered again with the next read): any body,
//! in any pieces, decodes without panicking and to the same payload, state
//! and refusal as when it comes whole.
#![no_main]
use goodput_fuzz::{pieces, split};
use goodput_load::http1::Chunked;
use libfuzzer_sys::fuzz_target;

fn decode<'a>(parts: impl Iterator<Item = &'a [u8]>) -> (Vec<u8>, Chunked, Result<usize, String>) {
    let mut c = Chunked::Size;
    let mut pending = Vec::new();
    let mut payload = Vec::new();
    for p in parts {
        pending.extend_from_slice(p);
        match c.decode(&pending, &mut |d| payload.extend_from_slice(d)) {
            Ok(n) => {
                assert!(n <= pending.len());
                pending.drain(..n);
            }
            Err(e) => return (payload, c, Err(e)),
        }
    }
    (payload, c, Ok(pending.len()))
}

fuzz_target!(|data: &[u8]| {
    let (payload, cuts) = split(data);
    let whole = decode(std::iter::once(payload));
    let split = decode(pieces(payload, &cuts));
    assert_eq!(whole.2.is_err(), split.2.is_err(), "{whole:?} / {split:?}");
    if whole.2.is_ok() {
        assert_eq!(whole, split);
    }
});
