//! The Prometheus text-format parser: any text parses without panicking,
//! families are unique and own their samples, and every family's histograms
//! read, and the signals goodput looks for are detected in it.
#![no_main]
use goodput_core::prometheus::scrape::{detect, parse};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let s = parse(&text);
    let mut names = HashSet::new();
    for f in &s.families {
        assert!(names.insert(f.name.clone()), "family {} twice", f.name);
        let _ = s.histograms(&f.name);
        let _ = s.samples(&f.name).count();
    }
    let _ = detect(&s);
});
