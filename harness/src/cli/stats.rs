//! The timing figures `bench` prints: milliseconds, and a sample's median, p90 and max.

use std::time::Duration;

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `n=…, median …, p90 …, max …` in milliseconds.
pub(super) fn stats(samples: &mut [Duration]) -> String {
    if samples.is_empty() {
        return "no samples".into();
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    format!(
        "n={}, median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        samples.len(),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(samples[samples.len() - 1])
    )
}
