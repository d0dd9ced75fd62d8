//! What a `boundary!` costs when the runtime is not under killpoint: run on a release build,
//! `cargo run --release -p killpoint-probe --example disabled_bench`.
//!
//! Each sample times a loop of calls to the disabled macro and the same loop without it; the
//! medians over the samples are printed in nanoseconds per call. No probe is connected, so every
//! call is the one relaxed load and the branch that skips the announcement.

use std::hint::black_box;
use std::time::Instant;

const CALLS: u32 = 20_000_000;
const SAMPLES: usize = 15;

fn main() {
    let op_id = black_box("op-1");
    let mut with = Vec::with_capacity(SAMPLES);
    let mut without = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        for attempt in 0..CALLS {
            killpoint_probe::boundary!("after_provider_success", op_id, attempt);
            black_box(attempt);
        }
        with.push(started.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS));

        let started = Instant::now();
        for attempt in 0..CALLS {
            black_box(attempt);
        }
        without.push(started.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS));
    }
    let (with, without) = (median(with), median(without));
    println!(
        "disabled boundary!: median {with:.2} ns/call over {SAMPLES} samples of {CALLS} calls (the empty loop: {without:.2} ns/iteration; difference {:.2} ns)",
        with - without
    );
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}
