//! A whole certification: every scenario run and judged (side by side, `jobs` at a time), each
//! failure's evidence kept with its own `report.html` and `rerun.sh`.
//!
//! The one reporter that runs things: the others only read outcomes.

use crate::judge::run_scenario;
use crate::report::outcome::ScenarioOutcome;
use crate::report::story::story;
use crate::report::timeline::Timeline;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;

/// Runs every scenario against `target`, keeping artifacts of failures (and of passes when
/// `keep` is set).
pub fn certify(
    scenarios: &[Scenario],
    target: &Target,
    options: &RunOptions,
    keep: bool,
    jobs: usize,
) -> Vec<ScenarioOutcome> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Each scenario has its own data dir, fake world and ports: they run side by side, `jobs` at a
    // time, and come back in file order.
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<(usize, ScenarioOutcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, scenarios.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(scenario) = scenarios.get(index) else { return };
                    let outcome = certify_one(scenario, target, options, keep);
                    outcomes.lock().unwrap_or_else(|p| p.into_inner()).push((index, outcome));
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());
    outcomes.sort_by_key(|(i, _)| *i);
    outcomes.into_iter().map(|(_, o)| o).collect()
}

fn certify_one(scenario: &Scenario, target: &Target, options: &RunOptions, keep: bool) -> ScenarioOutcome {
    let started = std::time::Instant::now();
    match run_scenario(scenario, target, options) {
        Ok((verdict, run)) => {
            let duration = started.elapsed();
            let story = (!verdict.passed()).then(|| story(scenario, &verdict, &run));
            let timeline = Timeline::of(&run);
            let mut outcome = ScenarioOutcome {
                name: scenario.name.clone(),
                file: scenario.path.clone(),
                verdict: Ok(verdict),
                duration,
                story,
                artifacts: None,
                timeline: Some(timeline),
                rerun: None,
            };
            if outcome.verdict.as_ref().is_ok_and(|v| !v.passed()) || keep {
                crate::report::evidence::keep(&mut outcome, scenario, run, target, options);
            }
            outcome
        }
        Err(e) => ScenarioOutcome {
            name: scenario.name.clone(),
            file: scenario.path.clone(),
            verdict: Err(format!("could not run: {e}")),
            duration: started.elapsed(),
            story: None,
            artifacts: None,
            timeline: None,
            rerun: None,
        },
    }
}
