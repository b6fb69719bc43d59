//! Our HTTP/1.1 response-head parser: any bytes parse without panicking, and
//! a prefix of them is either not yet a head or already the same head (or the
//! same refusal) as the whole.
#![no_main]
use goodput_fuzz::split;
use goodput_load::http1::{parse_head, HeadError};
use libfuzzer_sys::fuzz_target;

type Parsed = Result<Option<(usize, u16, Option<String>, Option<String>, Option<String>, bool)>, &'static str>;

fn head_of(buf: &[u8]) -> Parsed {
    match parse_head(buf) {
        Ok(Some((len, h))) => {
            assert!(len <= buf.len());
            Ok(Some((len, h.status, h.server.clone(), h.content_type.clone(), h.retry_after.clone(), h.reusable())))
        }
        Ok(None) => Ok(None),
        Err(HeadError::Invalid(_)) => Err("invalid"),
        Err(HeadError::ClosedBeforeResponse(_)) => Err("closed"),
    }
}

fuzz_target!(|data: &[u8]| {
    let (payload, cuts) = split(data);
    let whole = head_of(payload);
    for &k in &cuts {
        let at = head_of(&payload[..k]);
        if at != Ok(None) {
            assert_eq!(at, whole, "prefix of {k} bytes");
        }
    }
});
