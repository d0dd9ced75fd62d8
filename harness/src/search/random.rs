//! Random schedules, shrunk: draws workloads and fault schedules, runs each against a runtime with
//! the real driver and checker, and when one fails, shrinks it (proptest) to a small schedule that
//! still fails and writes it as a scenario file, with the command that reruns it.
//!
//! A drawn case carries the outcome a correct runtime must reach for its schedule ([`expect`]):
//! the reference runtime passes every case, which is what keeps the strategy honest. Shapes whose
//! outcome a correct runtime may legitimately choose (a kill landing on an unrelated operation of
//! the same wave while a tool without lookup is in flight, …) are not drawn.
//!
//! Cases are drawn as genes (numbers and flags) and read into a schedule by walking each
//! operation's flow, so every fault names a boundary occurrence the operation is bound to reach
//! and every shrunk gene still reads into a valid schedule.

use crate::judge::run_scenario;
use crate::model::boundary::Boundary;
use crate::model::invariant::Invariant;
use crate::report::evidence::shell_word;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::{Action, ConsumerFault, Fault, Operation, Outcome, Revoke, RuntimeSettings, Scenario};
use fake_tool::ToolKind;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Tenants operations are drawn from: two, so that a revocation sometimes reaches another
/// operation and sometimes does not.
pub const TENANTS: [&str; 2] = ["acme", "globex"];
/// Consumers operations deliver to.
pub const DESTINATIONS: [&str; 3] = ["ledger", "mailer", "audit"];
/// A schedule has at most this many faults (kills, provider faults, consumer faults).
pub const MAX_FAULTS: usize = 4;
/// How late a `delay` provider fault answers: far below any runtime's timeout.
const DELAY_MS: u64 = 30;

/// What to search and how long.
#[derive(Debug, Clone)]
pub struct RandomOptions {
    /// Cases to draw before the search stops finding nothing.
    pub cases: u32,
    /// The seed of the search; the same seed draws the same cases and shrinks them the same way.
    pub seed: u64,
    /// Where a failing case's file is written.
    pub out: PathBuf,
    /// Runs to spend shrinking a failing case.
    pub max_shrink_iters: u32,
    /// Let operations share waves (in flight at once). A failure that needs a particular
    /// interleaving may not come back when a case is run again, so it shrinks poorly; without
    /// waves every drawn case runs the same way each time.
    pub waves: bool,
    pub run: RunOptions,
}

impl RandomOptions {
    /// `KILLPOINT_RANDOM_CASES` cases (default `cases`), from seed `KILLPOINT_RANDOM_SEED` (default
    /// a new one), a failing case written to `out`.
    pub fn from_env(cases: u32, out: impl Into<PathBuf>) -> Result<RandomOptions, String> {
        let number = |name: &str| match std::env::var(name) {
            Ok(v) => v.trim().parse::<u64>().map(Some).map_err(|_| format!("{name} expects a number, found `{v}`")),
            Err(_) => Ok(None),
        };
        let cases = match number("KILLPOINT_RANDOM_CASES")? {
            Some(n) => u32::try_from(n).map_err(|_| format!("KILLPOINT_RANDOM_CASES is too large: {n}"))?,
            None => cases,
        };
        Ok(RandomOptions {
            cases,
            seed: number("KILLPOINT_RANDOM_SEED")?.unwrap_or_else(new_seed),
            out: out.into(),
            max_shrink_iters: 64,
            waves: true,
            run: RunOptions::default(),
        })
    }
}

/// A seed nobody chose: the clock's nanoseconds and the process id, mixed (SplitMix64's
/// finaliser) so that seeds drawn a second apart do not share their leading digits.
pub fn new_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut z = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a search found.
#[derive(Debug)]
pub struct RandomOutcome {
    pub seed: u64,
    /// Runs made: drawn cases and shrinking steps.
    pub runs: u32,
    pub elapsed: Duration,
    /// The smallest failing case, if a case failed.
    pub failure: Option<Failure>,
}

/// A failing case, shrunk and written.
#[derive(Debug)]
pub struct Failure {
    pub scenario: Scenario,
    /// The scenario file written.
    pub file: PathBuf,
    /// The one line that reruns it.
    pub command: String,
    /// The invariants the shrunk case violated when it was run again after the search.
    pub violated: BTreeSet<Invariant>,
    /// The failure report of the shrunk case's failing run during the search.
    pub story: String,
}

impl Failure {
    /// Faults of every kind in the schedule.
    pub fn fault_count(&self) -> usize {
        fault_count(&self.scenario)
    }
}

/// Faults of every kind in a scenario's schedule.
pub fn fault_count(s: &Scenario) -> usize {
    s.faults.len() + s.consumer_faults.len() + s.lookup_faults.len() + s.policy_faults.len()
}

/// Draws `options.cases` schedules and runs each against `target`; stops at the first that fails,
/// shrinks it, writes it to `options.out` and says how to rerun it.
pub fn search(target: &Target, options: &RandomOptions) -> std::io::Result<RandomOutcome> {
    let config = Config {
        cases: options.cases,
        // The seed is the record: a failure is replayed with it, or rerun from its file.
        failure_persistence: None,
        max_shrink_iters: options.max_shrink_iters,
        // Every case must be drawn; the strategy itself never rejects, so this only bounds a bug.
        max_global_rejects: 10 * options.cases.max(1),
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(options.seed)));
    let runs = AtomicU32::new(0);
    let started = Instant::now();
    // The report of the last failing run. Proptest returns the last value that failed while it
    // shrank, so this is the report of the case it returns.
    let last = Mutex::new((String::new(), BTreeSet::new()));
    let result = runner.run(&cases(options.waves, options.run.probe), |scenario| {
        runs.fetch_add(1, Ordering::Relaxed);
        let (failed, violated) = match run_scenario(&scenario, target, &options.run) {
            Ok((verdict, _)) if verdict.passed() => return Ok(()),
            Ok((verdict, run)) => (crate::report::story::story(&scenario, &verdict, &run), verdict.failed_invariants()),
            Err(e) => (format!("could not run: {e}"), BTreeSet::new()),
        };
        *last.lock().unwrap_or_else(|e| e.into_inner()) = (failed.clone(), violated);
        Err(TestCaseError::fail(failed))
    });
    let elapsed = started.elapsed();
    let runs = runs.into_inner();
    let minimal = match result {
        Ok(()) => return Ok(RandomOutcome { seed: options.seed, runs, elapsed, failure: None }),
        Err(TestError::Fail(_, minimal)) => minimal,
        Err(TestError::Abort(why)) => {
            return Err(std::io::Error::other(format!("the random search stopped: {why}")));
        }
    };

    let file = options.out.join(format!("random-{}.toml", options.seed));
    let command = rerun_command(&file, target, options.run.probe);
    let replay = format!(
        "killpoint random --seed {} --cases {}{}{}",
        options.seed,
        options.cases,
        if options.run.probe { "" } else { " --no-probe" },
        runtime_flags(target)
    );
    let (story, violated_then) = last.into_inner().unwrap_or_else(|e| e.into_inner());
    let names: Vec<&str> = violated_then.iter().map(|i| i.as_str()).collect();
    let mut scenario = minimal;
    scenario.name = format!("random-{}", options.seed);
    scenario.path = file.clone();
    scenario.description = format!(
        "Found by `killpoint random` (seed {}, {} cases at most) against {}: a drawn schedule, shrunk by \
         proptest to this one, which violated {}.\nThe search: `{replay}`\nThis case: `{command}`",
        options.seed,
        options.cases,
        target_words(target),
        if names.is_empty() { "nothing the checker names (it could not run)".to_owned() } else { names.join(", ") },
    );
    std::fs::create_dir_all(&options.out)?;
    std::fs::write(&file, scenario.to_toml())?;
    // Run once more: the file is what a person reruns, so what it violates is said from it.
    let violated = match run_scenario(&scenario, target, &options.run) {
        Ok((verdict, _)) => verdict.failed_invariants(),
        Err(_) => BTreeSet::new(),
    };
    Ok(RandomOutcome {
        seed: options.seed,
        runs,
        elapsed,
        failure: Some(Failure { scenario, file, command, violated, story }),
    })
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&seed.to_le_bytes());
    }
    bytes
}

/// ` --runtime PATH -- ARGS…` for a command line.
fn runtime_flags(target: &Target) -> String {
    let mut line = format!(" --runtime {}", shell_word(&target.program.display().to_string()));
    if !target.args.is_empty() {
        line.push_str(" --");
        for a in &target.args {
            line.push(' ');
            line.push_str(&shell_word(a));
        }
    }
    line
}

fn target_words(target: &Target) -> String {
    let mut words = target.program.display().to_string();
    for a in &target.args {
        words.push(' ');
        words.push_str(a);
    }
    words
}

/// `killpoint run FILE [--no-probe] --runtime PATH -- ARGS…`
pub fn rerun_command(file: &Path, target: &Target, probe: bool) -> String {
    let black_box = if probe { "" } else { " --no-probe" };
    format!("killpoint run {}{black_box}{}", shell_word(&file.display().to_string()), runtime_flags(target))
}

// ---- genes ---------------------------------------------------------------------------------

/// What a fault gene does where it lands. Only `after_dispatch` has provider faults; anywhere
/// else every blow is a kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blow {
    Kill,
    Fail,
    Drop,
    Delay,
}

#[derive(Debug, Clone)]
struct FaultGene {
    /// Which of the boundary occurrences still ahead of the operation (modulo their number).
    point: usize,
    blow: Blow,
    /// Withdraw the operation's tool for its tenant as the kill lands.
    revoke: bool,
}

#[derive(Debug, Clone)]
struct OperationGene {
    kind: ToolKind,
    destinations: Vec<&'static str>,
    tenant: usize,
    /// Run in the previous operation's wave, when that is safe to judge.
    join: bool,
    faults: Vec<FaultGene>,
}

#[derive(Debug, Clone)]
struct Genes {
    operations: Vec<OperationGene>,
    /// (destination pick, times)
    consumer_faults: Vec<(usize, u32)>,
}

fn genes() -> impl Strategy<Value = Genes> {
    let blow = prop_oneof![4 => Just(Blow::Kill), 1 => Just(Blow::Fail), 1 => Just(Blow::Drop), 1 => Just(Blow::Delay)];
    let fault = (0usize..8, blow, prop::bool::weighted(0.2)).prop_map(|(point, blow, revoke)| FaultGene {
        point,
        blow,
        revoke,
    });
    let operation = (
        prop::sample::select(ToolKind::ALL.to_vec()),
        prop::sample::subsequence(DESTINATIONS.to_vec(), 0..=2),
        0..TENANTS.len(),
        any::<bool>(),
        prop::collection::vec(fault, 0..=2),
    )
        .prop_map(|(kind, destinations, tenant, join, faults)| OperationGene {
            kind,
            destinations,
            tenant,
            join,
            faults,
        });
    (prop::collection::vec(operation, 2..=5), prop::collection::vec((0..DESTINATIONS.len(), 1u32..=2), 0..=1))
        .prop_map(|(operations, consumer_faults)| Genes { operations, consumer_faults })
}

/// The strategy: scenarios built from genes, each read back through the scenario parser, so that
/// only what a scenario file may say is ever run.
///
/// `probe`: the runtime implements the boundary probe. Without it, faults are drawn only where
/// the harness stops the runtime exactly from outside (`after_submit`, `after_dispatch`), which
/// count their occurrences as the probe would.
pub fn cases(waves: bool, probe: bool) -> impl Strategy<Value = Scenario> {
    genes().prop_filter_map("a drawn schedule that a scenario file would refuse", move |g| {
        let drawn = schedule(&g, waves, probe);
        Scenario::parse(&drawn.path, &drawn.to_toml()).ok()
    })
}

// ---- one operation's flow ------------------------------------------------------------------

/// Where an operation is in its flow: the next boundary it reaches, or how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Submit,
    /// The next attempt; `unknown`: an earlier attempt's outcome is still unknown.
    Dispatch {
        unknown: bool,
    },
    Call,
    Success,
    Write,
    /// Deliveries still to be acknowledged, in the order the walk takes them.
    Deliver(Vec<String>),
    Ended(Outcome),
}

impl Phase {
    fn boundary(&self) -> Option<(Boundary, Option<String>)> {
        Some(match self {
            Phase::Submit => (Boundary::AfterSubmit, None),
            Phase::Dispatch { .. } => (Boundary::BeforeDispatch, None),
            Phase::Call => (Boundary::AfterDispatch, None),
            Phase::Success => (Boundary::AfterProviderSuccess, None),
            Phase::Write => (Boundary::AfterResultWrite, None),
            Phase::Deliver(left) => (Boundary::AfterDeliverySend, Some(left[0].clone())),
            Phase::Ended(_) => return None,
        })
    }

    /// Where the operation goes when nothing happens here.
    fn passed(&self, destinations: &[String]) -> Phase {
        let delivering = |left: &[String]| {
            if left.is_empty() { Phase::Ended(Outcome::Succeeded) } else { Phase::Deliver(left.to_vec()) }
        };
        match self {
            Phase::Submit => Phase::Dispatch { unknown: false },
            Phase::Dispatch { .. } => Phase::Call,
            Phase::Call => Phase::Success,
            Phase::Success => Phase::Write,
            Phase::Write => delivering(destinations),
            Phase::Deliver(left) => delivering(&left[1..]),
            Phase::Ended(o) => Phase::Ended(*o),
        }
    }
}

/// Where an operation of `kind` goes after the blow at `phase` — the recovery the contract owes
/// (CONTRACT.md section 4), and so the outcome a correct runtime reaches. `revoked`: the tool was
/// withdrawn for the operation's tenant as the kill landed.
fn after_blow(kind: ToolKind, phase: &Phase, blow: Blow, revoked: bool, destinations: &[String]) -> Phase {
    // The outcome of the call is unknown (§4-8, §4-10): a lookup finds the effect (every drawn
    // call applies it); a tool without lookup is paused (§4-13); a repeatable one is attempted
    // again, which needs the policy: refused with the outcome unknown, it is paused (§4-3).
    let unknown = || match kind {
        ToolKind::IdempotentByKey | ToolKind::NonIdempotentWithLookup => Phase::Success,
        ToolKind::NonIdempotentNoLookup => Phase::Ended(Outcome::Paused),
        ToolKind::SafelyRepeatable if revoked => Phase::Ended(Outcome::Paused),
        ToolKind::SafelyRepeatable => Phase::Dispatch { unknown: true },
    };
    match phase {
        // The next attempt asks the policy again (§4-1): a revocation refuses it (§4-2), or
        // pauses it when an earlier attempt's outcome is unknown (§4-3).
        Phase::Submit | Phase::Dispatch { unknown: false } if revoked => Phase::Ended(Outcome::Refused),
        Phase::Dispatch { unknown: true } if revoked => Phase::Ended(Outcome::Paused),
        // Killed before the call: the attempt is made again, from the start.
        Phase::Submit => Phase::Dispatch { unknown: false },
        Phase::Dispatch { unknown } => Phase::Dispatch { unknown: *unknown },
        Phase::Call if blow == Blow::Delay => Phase::Success,
        Phase::Call | Phase::Success => unknown(),
        // The success and its outbox are written: only the deliveries are left (§4-6), and a
        // delivery killed after its send is sent again (§6).
        Phase::Write => phase.passed(destinations),
        Phase::Deliver(left) => Phase::Deliver(left.clone()),
        Phase::Ended(o) => Phase::Ended(*o),
    }
}

/// One operation's faults and the outcome they lead to.
#[derive(Debug, Default)]
struct Plan {
    faults: Vec<Fault>,
    outcome: Option<Outcome>,
    /// A fault of this plan withdraws the operation's tool for its tenant.
    revokes: bool,
}

impl Plan {
    fn kills(&self) -> bool {
        self.faults.iter().any(|f| f.action == Action::Kill)
    }
}

/// Walks the flow of operation `id` through its fault genes (at most `budget` of them): each gene
/// picks one of the boundary occurrences still ahead and strikes there; the walk then goes on as
/// the runtime must. Returns the faults and the outcome a correct runtime reaches: the
/// expectation, derived from the schedule.
fn plan(id: &str, gene: &OperationGene, budget: usize, probe: bool) -> Plan {
    let destinations: Vec<String> = gene.destinations.iter().map(|d| (*d).to_owned()).collect();
    let mut seen: BTreeMap<(Boundary, Option<String>), u32> = BTreeMap::new();
    let mut phase = Phase::Submit;
    let mut plan = Plan::default();
    for g in &gene.faults {
        if plan.faults.len() == budget {
            break;
        }
        // The boundary occurrences ahead, each with the phase it is reached in.
        let mut ahead = Vec::new();
        let mut p = phase.clone();
        while let Some(point) = p.boundary() {
            let next = p.passed(&destinations);
            // Without deliveries the operation is settled the instant its success is written, and
            // the harness may read it so before the runtime announces `after_result_write`: a kill
            // there would race the harness moving on (scenarios/README.md, the last note).
            let outside = matches!(point.0, Boundary::AfterSubmit | Boundary::AfterDispatch);
            if !(point.0 == Boundary::AfterResultWrite && destinations.is_empty()) && (probe || outside) {
                ahead.push((point, p));
            }
            p = next;
        }
        if ahead.is_empty() {
            break;
        }
        let pick = g.point % ahead.len();
        for (point, _) in &ahead[..pick] {
            *seen.entry(point.clone()).or_default() += 1;
        }
        let ((at, destination), at_phase) = ahead.swap_remove(pick);
        let occurrence = {
            let n = seen.entry((at, destination.clone())).or_default();
            *n += 1;
            *n
        };
        let action = match (at, g.blow) {
            (Boundary::AfterDispatch, Blow::Fail) => Action::Fail,
            (Boundary::AfterDispatch, Blow::Drop) => Action::Drop,
            (Boundary::AfterDispatch, Blow::Delay) => Action::Delay,
            _ => Action::Kill,
        };
        let revoke = g.revoke && action == Action::Kill && !plan.revokes;
        plan.revokes |= revoke;
        let blow = if action == Action::Kill { Blow::Kill } else { g.blow };
        phase = after_blow(gene.kind, &at_phase, blow, revoke, &destinations);
        plan.faults.push(Fault {
            at,
            operation: id.to_owned(),
            occurrence,
            attempt: None,
            destination,
            effect: true,
            action,
            delay_ms: if action == Action::Delay { DELAY_MS } else { 0 },
            status: (action == Action::Fail).then_some(503),
            revoke: if revoke { vec![Revoke::Tool] } else { Vec::new() },
        });
    }
    plan.outcome = Some(match phase {
        Phase::Ended(o) => o,
        _ => Outcome::Succeeded,
    });
    plan
}

/// What a planned operation is, for deciding who may share its wave.
struct Member {
    key: (usize, ToolKind),
    kills: bool,
    revokes: bool,
    /// What is drawn for it could change if another operation's kill lands while it is in flight:
    /// a tool without lookup (paused where a correct runtime would have succeeded); an operation
    /// whose own revocation's outcome depends on what was in flight; a fault at
    /// `after_result_write`, which the runtime announces after its commit: a kill elsewhere
    /// before the harness reads the announcement leaves it never announced at all.
    fragile: bool,
}

/// Reads genes into a scenario, expectations included.
fn schedule(genes: &Genes, waves_allowed: bool, probe: bool) -> Scenario {
    let mut operations = Vec::new();
    let mut faults = Vec::new();
    let mut revoked: HashSet<(usize, ToolKind)> = HashSet::new();
    let mut wave: Vec<Member> = Vec::new();
    let mut waves = Vec::new();
    let mut joined_any = false;
    for (i, gene) in genes.operations.iter().enumerate() {
        let id = format!("op{}", i + 1);
        let key = (gene.tenant, gene.kind);
        let budget = MAX_FAULTS - faults.len();
        // A tool withdrawn for this tenant by an earlier operation refuses this one's first
        // attempt: no fault of it could be reached past its submission, so it has none.
        let plan = if revoked.contains(&key) {
            Plan { faults: Vec::new(), outcome: Some(Outcome::Refused), revokes: false }
        } else {
            plan(&id, gene, budget, probe)
        };
        let member = Member {
            key,
            kills: plan.kills(),
            revokes: plan.revokes,
            fragile: gene.kind == ToolKind::NonIdempotentNoLookup
                || plan.revokes
                || plan.faults.iter().any(|f| f.at == Boundary::AfterResultWrite),
        };
        let joins = i > 0
            && waves_allowed
            && gene.join
            && wave.iter().all(|m| {
                !(m.fragile && member.kills)
                    && !(member.fragile && m.kills)
                    // A revocation must land on the same tool and tenant before, or after, never
                    // during: the refusal would depend on the interleaving.
                    && !((m.revokes || member.revokes) && m.key == member.key)
            });
        if joins {
            joined_any = true;
        } else {
            wave.clear();
        }
        waves.push(if waves.is_empty() {
            1
        } else if joins {
            waves[waves.len() - 1]
        } else {
            waves[waves.len() - 1] + 1
        });
        if plan.revokes {
            revoked.insert(key);
        }
        wave.push(member);
        faults.extend(plan.faults);
        operations.push(Operation {
            id,
            tool: gene.kind,
            destinations: gene.destinations.iter().map(|d| (*d).to_owned()).collect(),
            tenant: TENANTS[gene.tenant].to_owned(),
            actor: "agent-7".to_owned(),
            expect: plan.outcome.unwrap_or(Outcome::Succeeded),
            wave: None,
        });
    }
    if joined_any {
        for (op, w) in operations.iter_mut().zip(&waves) {
            op.wave = Some(*w);
        }
    }
    // Consumer faults only where a success is delivered, at most one per consumer.
    let delivered: Vec<&str> = DESTINATIONS
        .iter()
        .copied()
        .filter(|d| operations.iter().any(|o| o.expect == Outcome::Succeeded && o.destinations.iter().any(|x| x == d)))
        .collect();
    let mut consumer_faults: Vec<ConsumerFault> = Vec::new();
    for (pick, times) in &genes.consumer_faults {
        if delivered.is_empty() || faults.len() + consumer_faults.len() == MAX_FAULTS {
            break;
        }
        let destination = delivered[pick % delivered.len()].to_owned();
        if consumer_faults.iter().all(|c| c.destination != destination) {
            consumer_faults.push(ConsumerFault {
                destination,
                operation: None,
                tenant: None,
                times: Some(*times),
                status: 503,
                apply: false,
            });
        }
    }
    Scenario {
        name: "random".to_owned(),
        path: PathBuf::from("random.toml"),
        description: "A drawn schedule.".to_owned(),
        operations,
        faults,
        consumer_faults,
        syscall_faults: Vec::new(),
        lookup_faults: Vec::new(),
        policy_faults: Vec::new(),
        // Fast retries: a drawn case settles in a fraction of a second.
        runtime: RuntimeSettings { delivery_max_attempts: 5, retry_base_ms: 5 },
        // A hang bound, not a wait.
        deadline: Duration::from_secs(5),
        catches: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;

    #[test]
    fn every_drawn_schedule_is_a_valid_scenario_file() {
        let mut runner =
            TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(7)));
        let strategy = genes();
        let mut shapes = BTreeSet::new();
        for _ in 0..500 {
            let g = strategy.new_tree(&mut runner).unwrap().current();
            let drawn = schedule(&g, true, true);
            if let Err(e) = Scenario::parse(&drawn.path, &drawn.to_toml()) {
                panic!("{e}\n{}", drawn.to_toml());
            }
            assert!(fault_count(&drawn) <= MAX_FAULTS);
            for op in &drawn.operations {
                shapes.insert(op.expect.to_string());
            }
        }
        // Not every case ends `succeeded`: the expectation follows the schedule.
        for outcome in ["succeeded", "paused", "refused"] {
            assert!(shapes.contains(outcome), "no drawn operation is expected to end {outcome}: {shapes:?}");
        }
    }

    fn gene(kind: ToolKind, faults: Vec<FaultGene>) -> OperationGene {
        OperationGene { kind, destinations: vec!["ledger"], tenant: 0, join: false, faults }
    }

    fn strike(point: usize, blow: Blow, revoke: bool) -> FaultGene {
        FaultGene { point, blow, revoke }
    }

    #[test]
    fn the_expectation_follows_the_recovery_each_kind_owes() {
        // Point 2 from the submission is `after_dispatch`.
        let kill_after_dispatch = |kind, revoke| plan("op", &gene(kind, vec![strike(2, Blow::Kill, revoke)]), 4, true);
        assert_eq!(kill_after_dispatch(ToolKind::NonIdempotentWithLookup, false).outcome, Some(Outcome::Succeeded));
        assert_eq!(kill_after_dispatch(ToolKind::NonIdempotentNoLookup, false).outcome, Some(Outcome::Paused));
        assert_eq!(kill_after_dispatch(ToolKind::SafelyRepeatable, false).outcome, Some(Outcome::Succeeded));
        assert_eq!(kill_after_dispatch(ToolKind::SafelyRepeatable, true).outcome, Some(Outcome::Paused));
        assert_eq!(kill_after_dispatch(ToolKind::IdempotentByKey, true).outcome, Some(Outcome::Succeeded));
        // Killed and revoked before the first call: refused.
        let before = plan("op", &gene(ToolKind::SafelyRepeatable, vec![strike(1, Blow::Kill, true)]), 4, true);
        assert_eq!(before.outcome, Some(Outcome::Refused));
        // A second `before_dispatch` only after a kill at the first (then the first point ahead).
        let twice = plan(
            "op",
            &gene(ToolKind::IdempotentByKey, vec![strike(1, Blow::Kill, false), strike(0, Blow::Kill, false)]),
            4,
            true,
        );
        let occurrences: Vec<(Boundary, u32)> = twice.faults.iter().map(|f| (f.at, f.occurrence)).collect();
        assert_eq!(occurrences, [(Boundary::BeforeDispatch, 1), (Boundary::BeforeDispatch, 2)]);
        // A repeatable tool whose call failed is called again: its second call can be struck.
        let again = plan(
            "op",
            &gene(ToolKind::SafelyRepeatable, vec![strike(2, Blow::Fail, false), strike(1, Blow::Drop, false)]),
            4,
            true,
        );
        let calls: Vec<(Boundary, u32, Action)> = again.faults.iter().map(|f| (f.at, f.occurrence, f.action)).collect();
        assert_eq!(calls, [(Boundary::AfterDispatch, 1, Action::Fail), (Boundary::AfterDispatch, 2, Action::Drop)]);
        assert_eq!(again.outcome, Some(Outcome::Succeeded));
    }
}
