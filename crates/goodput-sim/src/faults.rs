//! Fault injection for testing clients: each request draws, from a seed and
//! its arrival number, whether it fails with HTTP 500, breaks mid-stream with
//! an error event or a dropped connection, or stalls once mid-stream.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Fault rates (0..=1 each) and the stall length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultConfig {
    /// Answer HTTP 500 before any byte of the stream.
    pub error_rate: f64,
    /// Send an `{"error": …}` event halfway through the output, then stop.
    pub stream_error_rate: f64,
    /// Drop the connection halfway through the output.
    pub disconnect_rate: f64,
    /// Pause once, halfway through the output, for `stall`.
    pub stall_rate: f64,
    pub stall: Duration,
    pub seed: u64,
}

/// What happens to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    HttpError,
    StreamError,
    Disconnect,
    Stall(Duration),
}

impl FaultConfig {
    pub fn validate(&self) -> Result<(), String> {
        for (name, r) in [
            ("--fault-error-rate", self.error_rate),
            ("--fault-stream-error-rate", self.stream_error_rate),
            ("--fault-disconnect-rate", self.disconnect_rate),
            ("--fault-stall-rate", self.stall_rate),
        ] {
            if !(0.0..=1.0).contains(&r) {
                return Err(format!("{name} must be between 0 and 1, not {r}"));
            }
        }
        Ok(())
    }

    pub fn is_active(&self) -> bool {
        self.error_rate > 0.0 || self.stream_error_rate > 0.0 || self.disconnect_rate > 0.0 || self.stall_rate > 0.0
    }

    /// The fault for the `n`-th request (0-based, in arrival order).
    pub fn draw(&self, n: u64) -> Fault {
        if !self.is_active() {
            return Fault::None;
        }
        // One uniform draw per request, compared against cumulative rates.
        let u = unit(self.seed, n);
        let mut edge = self.error_rate;
        if u < edge {
            return Fault::HttpError;
        }
        edge += self.stream_error_rate;
        if u < edge {
            return Fault::StreamError;
        }
        edge += self.disconnect_rate;
        if u < edge {
            return Fault::Disconnect;
        }
        edge += self.stall_rate;
        if u < edge {
            return Fault::Stall(self.stall);
        }
        Fault::None
    }
}

fn unit(seed: u64, n: u64) -> f64 {
    let mut z = seed ^ n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Counts of requests and of each fault injected, for tests and `/metrics`.
#[derive(Debug, Default)]
pub struct FaultCounters {
    pub requests: AtomicU64,
    pub http_errors: AtomicU64,
    pub stream_errors: AtomicU64,
    pub disconnects: AtomicU64,
    pub stalls: AtomicU64,
}

impl FaultCounters {
    /// Takes the next arrival number and counts the fault drawn for it.
    pub fn next(&self, cfg: &FaultConfig) -> (u64, Fault) {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let f = cfg.draw(n);
        let c = match f {
            Fault::None => None,
            Fault::HttpError => Some(&self.http_errors),
            Fault::StreamError => Some(&self.stream_errors),
            Fault::Disconnect => Some(&self.disconnects),
            Fault::Stall(_) => Some(&self.stalls),
        };
        if let Some(c) = c {
            c.fetch_add(1, Ordering::Relaxed);
        }
        (n, f)
    }

    /// Prometheus text for these counters.
    pub fn prometheus(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "# HELP goodput_sim_requests_total Requests received.\n# TYPE goodput_sim_requests_total counter\n\
             goodput_sim_requests_total {}\n\
             # HELP goodput_sim_faults_injected_total Faults injected, by kind.\n# TYPE goodput_sim_faults_injected_total counter\n\
             goodput_sim_faults_injected_total{{kind=\"http_error\"}} {}\n\
             goodput_sim_faults_injected_total{{kind=\"stream_error\"}} {}\n\
             goodput_sim_faults_injected_total{{kind=\"disconnect\"}} {}\n\
             goodput_sim_faults_injected_total{{kind=\"stall\"}} {}\n",
            g(&self.requests),
            g(&self.http_errors),
            g(&self.stream_errors),
            g(&self.disconnects),
            g(&self.stalls)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_honoured_and_seeded() {
        let cfg = FaultConfig {
            error_rate: 0.1,
            stream_error_rate: 0.2,
            disconnect_rate: 0.05,
            stall_rate: 0.1,
            stall: Duration::from_secs(1),
            seed: 5,
        };
        let n = 100_000;
        let draws: Vec<Fault> = (0..n).map(|i| cfg.draw(i)).collect();
        let share = |f: Fault| draws.iter().filter(|&&d| d == f).count() as f64 / n as f64;
        assert!((share(Fault::HttpError) - 0.1).abs() < 0.01);
        assert!((share(Fault::StreamError) - 0.2).abs() < 0.01);
        assert!((share(Fault::Disconnect) - 0.05).abs() < 0.01);
        assert!((share(Fault::Stall(Duration::from_secs(1))) - 0.1).abs() < 0.01);
        assert_eq!(draws, (0..n).map(|i| cfg.draw(i)).collect::<Vec<_>>());
        assert!(FaultConfig { error_rate: 1.5, ..Default::default() }.validate().is_err());
        assert_eq!(FaultConfig::default().draw(3), Fault::None);
    }
}
