//! Open-loop arrival schedules: absolute send offsets from the run's origin,
//! drawn ahead from a seed. Offsets accumulate in f64 seconds and are never
//! re-derived from a sleep, so a late send never delays the next one.

use crate::error::ScheduleError;
use goodput_core::HORIZON;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Gamma};
use std::str::FromStr;
use std::time::Duration;

/// How inter-arrival gaps are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Exponential gaps with mean 1/rate.
    Poisson,
    /// Gamma gaps with shape = burstiness and scale = 1/(rate·burstiness);
    /// burstiness 1 is Poisson, below 1 burstier, above 1 more regular.
    Gamma { burstiness: f64 },
    /// Exactly 1/rate apart.
    Constant,
}

impl Arrival {
    /// The process's name, as `--arrival` takes it.
    pub fn name(&self) -> &'static str {
        match self {
            Arrival::Poisson => "poisson",
            Arrival::Gamma { .. } => "gamma",
            Arrival::Constant => "constant",
        }
    }
}

impl FromStr for Arrival {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, ScheduleError> {
        match s {
            "poisson" => Ok(Arrival::Poisson),
            "gamma" => Ok(Arrival::Gamma { burstiness: 1.0 }),
            "constant" => Ok(Arrival::Constant),
            other => Err(ScheduleError::UnknownArrival(other.to_owned())),
        }
    }
}

/// An endless, deterministic sequence of absolute send offsets. The first
/// request goes at 0.
pub struct ArrivalSchedule {
    gaps: Gaps,
    rng: StdRng,
    next_s: f64,
}

enum Gaps {
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
    Constant(f64),
}

impl ArrivalSchedule {
    /// `rate` may be infinite: every request is due at once (vLLM's
    /// `--request-rate inf`), whatever the arrival process.
    pub fn new(rate: f64, arrival: Arrival, seed: u64) -> Result<Self, ScheduleError> {
        if rate.is_nan() || rate <= 0.0 {
            return Err(ScheduleError::Rate(rate));
        }
        if 1.0 / rate > HORIZON.as_secs_f64() {
            return Err(ScheduleError::RateTooLow(rate));
        }
        let refused = |e: &dyn std::fmt::Display| ScheduleError::Distribution(e.to_string());
        let gaps = match arrival {
            _ if rate.is_infinite() => Gaps::Constant(0.0),
            Arrival::Poisson => Gaps::Exp(Exp::new(rate).map_err(|e| refused(&e))?),
            Arrival::Gamma { burstiness } => {
                if !(burstiness.is_finite() && burstiness > 0.0) {
                    return Err(ScheduleError::Burstiness(burstiness));
                }
                Gaps::Gamma(Gamma::new(burstiness, 1.0 / (rate * burstiness)).map_err(|e| refused(&e))?)
            }
            Arrival::Constant => Gaps::Constant(1.0 / rate),
        };
        Ok(ArrivalSchedule { gaps, rng: StdRng::seed_from_u64(seed), next_s: 0.0 })
    }
}

/// The lowest rate a schedule takes: one request in [`HORIZON`].
pub fn min_rate() -> f64 {
    1.0 / HORIZON.as_secs_f64()
}

/// A number as people write it: `0.25`, `1e300`, `3.17e-10` (Rust writes
/// 1e300 with all its 301 digits).
pub fn shown(x: f64) -> String {
    if x != 0.0 && !(1e-3..1e9).contains(&x.abs()) {
        let s = format!("{x:.2e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exp}");
    }
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A send time `at` of a schedule at full rate, moved so that the rate
/// climbs linearly from 0 to full over `ramp` (the arrival process warped in
/// time: its cumulative intensity R·t²/2D during the ramp, R·(t − D/2)
/// after it). After the ramp every gap is as it was; the whole schedule
/// ends `ramp`/2 later.
pub fn ramped(at: Duration, ramp: Duration) -> Duration {
    let (s, d) = (at.as_secs_f64(), ramp.as_secs_f64());
    if d <= 0.0 {
        return at;
    }
    goodput_core::clamped_secs(if s < d / 2.0 { (2.0 * d * s).sqrt() } else { s + d / 2.0 })
}

impl Iterator for ArrivalSchedule {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let at = self.next_s;
        self.next_s += match &self.gaps {
            Gaps::Exp(d) => d.sample(&mut self.rng),
            Gaps::Gamma(d) => d.sample(&mut self.rng),
            Gaps::Constant(g) => *g,
        };
        // A long draw (a gamma of small shape has a heavy tail) or many of
        // them add up past any run: the schedule ends at the horizon (sends
        // clamped there had piled up into one burst, a century on).
        (at <= HORIZON.as_secs_f64()).then(|| Duration::from_secs_f64(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(rate: f64, arrival: Arrival, n: usize) -> Vec<f64> {
        let times: Vec<f64> =
            ArrivalSchedule::new(rate, arrival, 42).unwrap().take(n + 1).map(|d| d.as_secs_f64()).collect();
        times.windows(2).map(|w| w[1] - w[0]).collect()
    }

    fn mean_cv(g: &[f64]) -> (f64, f64) {
        let m = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|x| (x - m).powi(2)).sum::<f64>() / g.len() as f64;
        (m, var.sqrt() / m)
    }

    #[test]
    fn an_infinite_rate_sends_everything_at_once() {
        for arrival in [Arrival::Poisson, Arrival::Gamma { burstiness: 0.5 }, Arrival::Constant] {
            let s = ArrivalSchedule::new(f64::INFINITY, arrival, 1).unwrap();
            assert!(s.take(100).all(|t| t.is_zero()));
        }
        assert!(ArrivalSchedule::new(f64::NAN, Arrival::Poisson, 1).is_err());
        assert!(ArrivalSchedule::new(0.0, Arrival::Poisson, 1).is_err());
    }

    #[test]
    fn poisson_has_the_rate_and_unit_cv() {
        let (m, cv) = mean_cv(&gaps(20.0, Arrival::Poisson, 50_000));
        assert!((m - 0.05).abs() / 0.05 < 0.02, "mean gap {m}");
        assert!((cv - 1.0).abs() < 0.03, "cv {cv}");
    }

    #[test]
    fn gamma_shape_sets_the_burstiness() {
        // CV of a gamma gap is 1/sqrt(shape).
        for b in [0.25, 1.0, 4.0] {
            let (m, cv) = mean_cv(&gaps(10.0, Arrival::Gamma { burstiness: b }, 50_000));
            assert!((m - 0.1).abs() / 0.1 < 0.03, "b={b} mean gap {m}");
            let want = 1.0 / f64::sqrt(b);
            assert!((cv - want).abs() / want < 0.05, "b={b} cv {cv} want {want}");
        }
    }

    #[test]
    fn constant_is_exact_and_absolute() {
        let times: Vec<Duration> = ArrivalSchedule::new(4.0, Arrival::Constant, 0).unwrap().take(1001).collect();
        assert_eq!(times[0], Duration::ZERO);
        assert_eq!(times[1], Duration::from_millis(250));
        // No drift after a thousand gaps.
        assert_eq!(times[1000], Duration::from_secs(250));
    }

    #[test]
    fn same_seed_same_schedule_and_bad_inputs_are_errors() {
        let a: Vec<_> = ArrivalSchedule::new(5.0, Arrival::Poisson, 7).unwrap().take(10).collect();
        let b: Vec<_> = ArrivalSchedule::new(5.0, Arrival::Poisson, 7).unwrap().take(10).collect();
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        assert!(ArrivalSchedule::new(0.0, Arrival::Poisson, 0).is_err());
        assert!(ArrivalSchedule::new(1.0, Arrival::Gamma { burstiness: 0.0 }, 0).is_err());
        assert!("weird".parse::<Arrival>().unwrap_err().to_string().contains("poisson"));
    }

    #[test]
    fn rates_too_low_for_any_clock_are_refused_and_long_draws_are_clamped() {
        let err = ArrivalSchedule::new(1e-300, Arrival::Poisson, 0).err().unwrap().to_string();
        assert!(err.contains("--rate 1e-300 means one request every 1e300 s: give at least 3.17e-10"), "{err}");
        assert!(ArrivalSchedule::new(min_rate(), Arrival::Constant, 0).is_ok());
        // The heaviest tail there is, at the lowest rate: no panic, and every
        // send within the horizon.
        let far = ArrivalSchedule::new(min_rate(), Arrival::Gamma { burstiness: 1e-300 }, 3).unwrap();
        assert!(far.take(1000).all(|t| t <= HORIZON));
        let many = ArrivalSchedule::new(min_rate(), Arrival::Constant, 0).unwrap();
        let sends: Vec<Duration> = many.take(6).collect();
        assert!(
            (1..=2).contains(&sends.len()) && sends.iter().all(|&t| t <= HORIZON),
            "ends at the horizon: {sends:?}"
        );
        assert_eq!(
            (shown(1e300), shown(0.25), shown(3.0), shown(1.0 / 3e9)),
            ("1e300".into(), "0.25".into(), "3".into(), "3.33e-10".into())
        );
    }

    #[test]
    fn a_ramp_climbs_linearly_then_keeps_the_gaps() {
        let d = Duration::from_secs(1);
        let ms = |x: u64| Duration::from_millis(x);
        // 10/s constant: the first sends spread out, then 100 ms apart again.
        let t: Vec<f64> = (0..10).map(|i| ramped(ms(i * 100), d).as_secs_f64()).collect();
        assert_eq!(t[0], 0.0);
        assert!((t[1] - 0.2f64.sqrt()).abs() < 1e-9 && (t[2] - 0.4f64.sqrt()).abs() < 1e-9);
        assert!((t[5] - 1.0).abs() < 1e-9 && (t[9] - 1.4).abs() < 1e-9);
        // 100/s: sends per 0.25 s during the ramp grow like t (about 3, 9, 16, 22 of a full 25).
        let sched = ArrivalSchedule::new(100.0, Arrival::Constant, 0).unwrap();
        let times: Vec<f64> = sched.take(200).map(|a| ramped(a, d).as_secs_f64()).collect();
        let in_q = |q: f64| times.iter().filter(|t| **t >= q && **t < q + 0.25).count() as f64;
        assert!(in_q(0.0) < in_q(0.25) && in_q(0.25) < in_q(0.5) && in_q(0.5) < in_q(0.75));
        assert!((in_q(1.0) - 25.0).abs() <= 1.0, "full rate after the ramp");
        assert_eq!(ramped(ms(300), Duration::ZERO), ms(300));
    }
}
