use super::config::EngineServerConfig;
use super::metrics::{escape_label, Histogram, TTFT_BUCKETS};
use super::server::EngineServer;
use crate::engine::EngineConfig;
use crate::faults::FaultConfig;
use std::time::Duration;

#[test]
fn histograms_are_cumulative_with_vllm_bounds() {
    let mut h = Histogram::new(TTFT_BUCKETS);
    for ms in [0.5, 1.0, 3.0, 50.0, 5_000_000.0] {
        h.observe(Duration::from_secs_f64(ms / 1e3));
    }
    let mut s = String::new();
    h.render_series(&mut s, "x", "a=\"1\"");
    // A value on a bound falls in that bucket (le is inclusive).
    assert!(s.contains("x_bucket{a=\"1\",le=\"0.001\"} 2\n"), "{s}");
    assert!(s.contains("x_bucket{a=\"1\",le=\"0.005\"} 3\n"), "{s}");
    assert!(s.contains("x_bucket{a=\"1\",le=\"0.06\"} 4\n"), "{s}");
    assert!(s.contains("x_bucket{a=\"1\",le=\"2560.0\"} 4\n"), "{s}");
    assert!(s.contains("x_bucket{a=\"1\",le=\"+Inf\"} 5\n"), "{s}");
    assert!(s.contains("x_count{a=\"1\"} 5\n"), "{s}");
    assert_eq!(s.lines().filter(|l| l.starts_with("x_bucket")).count(), TTFT_BUCKETS.len() + 1);
}

#[test]
fn label_values_are_escaped() {
    assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

#[test]
fn bad_settings_are_errors() {
    let engine = EngineConfig::from_names("llama-3.1-8b", "h100", crate::engine::Precision::Bf16).unwrap();
    let ok = EngineServerConfig::new(engine);
    assert!(ok.validate().is_ok());
    for bad in [
        EngineServerConfig { speed: 0.0, ..ok.clone() },
        EngineServerConfig { speed: f64::NAN, ..ok.clone() },
        EngineServerConfig { speed: 1e-300, ..ok.clone() },
        EngineServerConfig { default_max_tokens: 0, ..ok.clone() },
        EngineServerConfig { faults: FaultConfig { error_rate: 2.0, ..Default::default() }, ..ok.clone() },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
    // The hostile cases are the fixed profile's.
    let hostile = FaultConfig { hostile: vec![(crate::faults::Hostile::Trickle, 0.1)], ..Default::default() };
    let err = EngineServerConfig { faults: hostile, ..ok.clone() }.validate().unwrap_err().to_string();
    assert!(err.contains("--fault trickle") && err.contains("--profile fixed"), "{err}");
    // No runtime: an error, not a panic.
    assert!(EngineServer::start(ok).is_err());
}
