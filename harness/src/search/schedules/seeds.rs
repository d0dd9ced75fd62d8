//! The seeds of a budget run `jobs` at a time, their runs handed on in seed order.
//!
//! A seed's run is whole and independent (its own world, data dir and tracer), and the schedule,
//! not timing, orders it: runs beside each other change none of them. What an exploration does
//! with a run — keeping its evidence unless an earlier seed went the same order, telling it,
//! stopping at the first failure — depends on the seeds before it, so that part is done one run at
//! a time, in seed order, on the caller's thread: a later seed that ends first waits for the
//! earlier ones.

use crate::judge::{Verdict, run_scenario};
use crate::run::driver::{Run, RunOptions};
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::tracer::Schedule;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

use super::Budget;

/// A seed's run: its schedule, the scenario pinned to it, the verdict and the run.
type Ran = (Schedule, Scenario, Verdict, Run);

/// Runs `scenario` under the seeds of `budget`, `budget.jobs` at once, and hands each run to `each`
/// in seed order. `each` returning false starts no further seed (the runs already started end, and
/// are not handed on); so does a run that cannot start, whose error is returned.
pub(super) fn in_order(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
    budget: Budget,
    each: &mut dyn FnMut(Schedule, Scenario, Verdict, Run) -> bool,
) -> std::io::Result<()> {
    let next = AtomicU64::new(1);
    let stop = AtomicBool::new(false);
    let (sender, ran) = mpsc::channel::<(u64, std::io::Result<Ran>)>();
    let workers = usize::try_from(budget.seeds).unwrap_or(usize::MAX).min(budget.jobs).max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed > budget.seeds {
                        break;
                    }
                    let schedule = Schedule { depth: budget.depth, ..Schedule::seeded(seed) };
                    let pinned = Scenario { schedule: Some(schedule), ..scenario.clone() };
                    let ran = run_scenario(&pinned, target, options).map(|(v, run)| (schedule, pinned, v, run));
                    if sender.send((seed, ran)).is_err() {
                        break;
                    }
                }
            });
        }
        // The workers hold the only senders left: `ran` ends when the last of them is done.
        drop(sender);
        let handed =
            hand_on_in_order(ran, &mut |(schedule, pinned, verdict, run)| each(schedule, pinned, verdict, run));
        stop.store(true, Ordering::Relaxed);
        handed
    })
}

/// Hands what `ran` gives, each item numbered by its seed, to `each` in seed order (1, 2, …), until
/// `each` says stop or an item is an error (returned).
fn hand_on_in_order<T>(
    ran: mpsc::Receiver<(u64, std::io::Result<T>)>,
    each: &mut dyn FnMut(T) -> bool,
) -> std::io::Result<()> {
    let mut waiting = BTreeMap::new();
    let mut due = 1;
    for (seed, item) in ran {
        waiting.insert(seed, item);
        while let Some(item) = waiting.remove(&due) {
            due += 1;
            if !each(item?) {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeds sent in `order`, the items handed on by `hand_on_in_order`, and what it returned.
    fn handed(order: &[u64], failing: Option<u64>, stop_at: Option<u64>) -> (Vec<u64>, std::io::Result<()>) {
        let (sender, ran) = mpsc::channel();
        for &seed in order {
            let item = match failing == Some(seed) {
                true => Err(std::io::Error::other(format!("seed {seed} could not start"))),
                false => Ok(seed),
            };
            sender.send((seed, item)).unwrap();
        }
        drop(sender);
        let mut seen = Vec::new();
        let result = hand_on_in_order(ran, &mut |seed| {
            seen.push(seed);
            stop_at != Some(seed)
        });
        (seen, result)
    }

    #[test]
    fn runs_that_end_out_of_order_are_handed_on_in_seed_order() {
        let (seen, result) = handed(&[3, 1, 4, 2, 6, 5], None, None);
        assert_eq!(seen, [1, 2, 3, 4, 5, 6]);
        assert!(result.is_ok());
    }

    #[test]
    fn a_stop_hands_on_no_later_seed_even_one_that_ended_first() {
        let (seen, result) = handed(&[3, 1, 2, 4], None, Some(2));
        assert_eq!(seen, [1, 2]);
        assert!(result.is_ok());
    }

    #[test]
    fn a_run_that_could_not_start_ends_the_seeds_with_its_error_after_the_earlier_ones() {
        let (seen, result) = handed(&[2, 3, 1], Some(2), None);
        assert_eq!(seen, [1]);
        assert!(result.unwrap_err().to_string().contains("seed 2"));
    }
}
