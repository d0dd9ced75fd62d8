//! `killpoint explore`: every crash point of a workload, not only those a scenario author chose.
//!
//! 1. **Record.** The workload runs once with no kill (the scenario's hand-placed kills are
//!    dropped; its world faults — provider answers, lookups, policy, consumers — are kept, they are
//!    how the world behaves). Every boundary occurrence it passes is a crash point: each probe
//!    announcement, each call the provider receives, each `202` the client receives, and without
//!    the probe each answer the fake world gives that it can stop at.
//! 2. **Depth 1.** For each point, the workload runs again with a SIGKILL exactly there (a
//!    `[[fault]]` addressing that occurrence, so the case is an ordinary scenario), and every
//!    invariant is checked.
//! 3. **Depth 2.** For each depth-1 case, each occurrence of its *recovery* (what operations in
//!    flight at the kill did after the restart) is killed too: a crash while reconciling a crash.
//!
//! A point is **pruned** when it provably leaves the same crash state as the point before it in
//! the same run: no byte under the data dir changed and the fake world saw nothing between them
//! ([`Fingerprint`], taken while the runtime is blocked on the probe). A SIGKILL at either leaves
//! the next incarnation the same disk and the same world.
//!
//! Every failing case is a scenario: [`Case::scenario`] is written out as a ready-to-commit file
//! that `killpoint run` replays.

use crate::judge::{Status, Verdict};
use crate::model::boundary::{Boundary, Site};
use crate::run::driver::{Fingerprint, Happening, Run, RunOptions};
use crate::run::incarnation::Target;
use crate::scenario::SyscallFault;
use crate::scenario::{Action, Fault, Outcome, Revoke, Scenario};
use fake_tool::{Event, Response, ToolKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

/// One boundary occurrence of a run: where a kill can land.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    pub at: Boundary,
    pub operation: String,
    /// The n-th time the operation reached this boundary (per destination for deliveries),
    /// counted across restarts, as a `[[fault]]`'s `occurrence` counts.
    pub occurrence: u32,
    pub destination: Option<String>,
}

impl Point {
    /// A kill here, as a scenario fault.
    pub fn kill(&self) -> Fault {
        Fault {
            at: self.at,
            operation: self.operation.clone(),
            occurrence: self.occurrence,
            attempt: None,
            destination: self.destination.clone(),
            effect: true,
            action: Action::Kill,
            delay_ms: 0,
            status: None,
            revoke: Vec::new(),
        }
    }

    /// The part of a trial name that names this point: `after_dispatch.charge.1`,
    /// `after_delivery_send.charge.ledger.2`.
    pub fn slug(&self) -> String {
        match &self.destination {
            Some(d) => format!("{}.{}.{d}.{}", self.at, self.operation, self.occurrence),
            None => format!("{}.{}.{}", self.at, self.operation, self.occurrence),
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` of `{}`", self.at, self.operation)?;
        if let Some(d) = &self.destination {
            write!(f, " to `{d}`")?;
        }
        write!(f, ", occurrence {}", self.occurrence)
    }
}

/// A point as found in a run: its place in the run's order and, for probe points taken with
/// fingerprints, the crash state a kill there leaves.
#[derive(Debug, Clone)]
struct Seen {
    point: Point,
    seq: u64,
    fingerprint: Option<Fingerprint>,
}

/// One crash schedule: a kill at each point, in order (depth 1: one; depth 2: a point of the
/// recovery after the first), optionally withdrawing a permission with the first kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub kills: Vec<Point>,
    /// Permissions withdrawn at the first kill (`kill+revoke` cases).
    pub revoke: Vec<Revoke>,
    /// The first point freezes the runtime (SIGSTOP, a replacement takes over, then the frozen one
    /// is resumed: CONTRACT.md §9) instead of killing it.
    pub freeze: bool,
    /// Kills at system-call crash points (`--points syscalls`), instead of boundary kills.
    pub syscalls: Vec<crate::scenario::SyscallFault>,
}

impl Case {
    /// A stable name: `after_dispatch.charge.1`, `before_dispatch.charge.1+revoke_operation`,
    /// `after_dispatch.charge.1/after_provider_success.charge.2`.
    pub fn name(&self) -> String {
        let syscalls = self.syscalls.iter().map(|f| {
            let from = match &f.since {
                Some(a) => format!("{}.{}.{}", a.boundary, a.operation, a.occurrence),
                None => f.incarnation().to_string(),
            };
            format!("syscall.{from}.{}.{}.{}", f.kind.name(), f.occurrence, f.when.name())
        });
        if self.kills.is_empty() && self.syscalls.is_empty() {
            return "no_kill".to_owned();
        }
        // A boundary kill first, then the system-call kill of its recovery (depth 2), or kills at
        // system calls only.
        let mut name = self.kills.iter().map(Point::slug).chain(syscalls).collect::<Vec<_>>().join("/");
        if self.freeze {
            name.push_str("+freeze");
        }
        for r in &self.revoke {
            name.push_str(&match r {
                Revoke::Tool => "+revoke_tool".to_owned(),
                Revoke::Operation => "+revoke_operation".to_owned(),
                Revoke::Destination(d) => format!("+revoke_{d}"),
            });
        }
        name
    }

    /// The workload with this schedule's kills: a scenario like any other, which `killpoint run`
    /// replays. Expectations follow the kills: a tool with no lookup killed after its call may
    /// have acted, so it must pause; an operation cancelled before its first call must be refused.
    pub fn scenario(&self, workload: &Workload) -> Scenario {
        let mut scenario = workload.base.clone();
        scenario.syscall_faults.extend(self.syscalls.iter().cloned());
        for (i, point) in self.kills.iter().enumerate() {
            let mut fault = point.kill();
            if i == 0 {
                fault.revoke = self.revoke.clone();
                if self.freeze {
                    fault.action = Action::Freeze;
                }
            }
            scenario.faults.push(fault);
        }
        // Operations in flight beside a killed one: a kill lands wherever they are, possibly
        // between a write-ahead and its request, so a tool with no lookup may have to pause.
        let waves = workload.base.waves();
        let beside: Vec<String> = waves
            .iter()
            .filter(|w| w.len() > 1 && w.iter().any(|o| self.kills.iter().any(|p| p.operation == o.id)))
            .flat_map(|w| w.iter().map(|o| o.id.clone()))
            .collect();
        for op in &mut scenario.operations {
            // A system-call kill can land anywhere, between any operation's write-ahead and its
            // request too: a tool without lookup may have to pause.
            if !self.syscalls.is_empty()
                && op.tool == ToolKind::NonIdempotentNoLookup
                && op.expect == Outcome::Succeeded
            {
                op.expect = Outcome::SucceededOrPaused;
            }
            let killed_after_call = self.kills.iter().any(|p| {
                p.operation == op.id && matches!(p.at, Boundary::AfterDispatch | Boundary::AfterProviderSuccess)
            });
            if op.tool == ToolKind::NonIdempotentNoLookup && op.expect == Outcome::Succeeded {
                if killed_after_call {
                    op.expect = Outcome::Paused;
                } else if beside.contains(&op.id) {
                    op.expect = Outcome::SucceededOrPaused;
                }
            }
            if self.revoke.contains(&Revoke::Operation) && self.kills[0].operation == op.id {
                op.expect = Outcome::Refused;
            }
        }
        scenario.name = format!("{}.{}", workload.base.name, self.name().replace(['/', '+'], "."));
        scenario
    }
}

/// A workload ready to explore: the scenario without its hand-placed kills.
#[derive(Debug, Clone)]
pub struct Workload {
    pub base: Scenario,
    /// Hand-placed kills (and freezes) that were dropped.
    pub dropped: usize,
    /// World faults kept (provider answers, lookups, policy, consumers).
    pub kept: usize,
}

impl Workload {
    pub fn of(scenario: &Scenario) -> Workload {
        let mut base = scenario.clone();
        let before = base.faults.len();
        let (dropped_kills, kept): (Vec<Fault>, Vec<Fault>) =
            base.faults.iter().cloned().partition(|f| matches!(f.action, Action::Kill | Action::Freeze));
        base.faults = kept;
        base.catches.clear();
        // An expectation that only a dropped kill explains goes back to `succeeded`: without it,
        // the SMS is not left unknown, the revoked tool is not refused.
        for op in &mut base.operations {
            let touched_by_kept = base.faults.iter().any(|f| f.operation == op.id || !f.revoke.is_empty());
            let killed = dropped_kills.iter().any(|f| f.operation == op.id);
            let refused_by_kill = dropped_kills.iter().any(|f| {
                let killed = scenario.operation(&f.operation).expect("faults name the scenario's operations");
                killed.tenant == op.tenant
                    && f.revoke.iter().any(|r| match r {
                        Revoke::Tool => killed.tool == op.tool,
                        Revoke::Operation => killed.id == op.id,
                        Revoke::Destination(_) => false,
                    })
            });
            let explained = match op.expect {
                Outcome::Paused => killed,
                Outcome::Refused => refused_by_kill,
                _ => false,
            };
            if explained && !touched_by_kept {
                op.expect = Outcome::Succeeded;
            }
        }
        let dropped = before - base.faults.len();
        let kept = base.faults.len() + base.lookup_faults.len() + base.policy_faults.len() + base.consumer_faults.len();
        Workload { base, dropped, kept }
    }
}

/// Why a point was not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pruned {
    /// A kill there leaves the same disk and world as a kill at `earlier`.
    SameState { earlier: Point },
    /// A kept world fault already answers the provider's call there.
    Occupied,
}

/// The points of `run` in order: every occurrence of every boundary the run passed (with the
/// probe), or that the fake world saw (without). With `after`, only those after that timeline
/// `seq` whose operation is in `only`: the recovery of a kill.
fn points(scenario: &Scenario, run: &Run, after: Option<(u64, &BTreeSet<String>)>) -> Vec<Seen> {
    let fingerprints: HashMap<u64, Fingerprint> = run.fingerprints.iter().copied().collect();
    let mut found: Vec<Seen> = Vec::new();
    let mut counts: HashMap<(Boundary, String, Option<String>), u32> = HashMap::new();
    let mut count = |at: Boundary, op: &str, destination: Option<String>| {
        let n = counts.entry((at, op.to_owned(), destination.clone())).or_default();
        *n += 1;
        Point { at, operation: op.to_owned(), occurrence: *n, destination }
    };
    for mark in &run.timeline {
        match &mark.happening {
            Happening::Boundary { message, .. } => {
                let point = count(message.boundary, &message.operation_id, message.destination.clone());
                found.push(Seen { point, seq: mark.seq, fingerprint: fingerprints.get(&mark.seq).copied() });
            }
            Happening::Answered { operation, status: 202 } => {
                let point = count(Boundary::AfterSubmit, operation, None);
                found.push(Seen { point, seq: mark.seq, fingerprint: None });
            }
            _ => {}
        }
    }
    for entry in &run.ledger {
        match &entry.event {
            Event::ProviderCall { operation: Some(op), call, response, .. } => {
                let point =
                    Point { at: Boundary::AfterDispatch, operation: op.clone(), occurrence: *call, destination: None };
                found.push(Seen { point, seq: entry.seq, fingerprint: None });
                // Without the probe, the provider's success answer is where an approximate
                // `after_provider_success` kill lands.
                if !run.probe && matches!(response, Response::Sent(200..=299)) {
                    let point = count(Boundary::AfterProviderSuccess, op, None);
                    found.push(Seen { point, seq: entry.seq, fingerprint: None });
                }
            }
            Event::ConsumerReceipt { operation: Some(op), destination, status, .. }
                if !run.probe && (200..300).contains(status) =>
            {
                let point = count(Boundary::AfterDeliverySend, op, Some(destination.clone()));
                found.push(Seen { point, seq: entry.seq, fingerprint: None });
            }
            _ => {}
        }
    }
    found.sort_by_key(|s| s.seq);
    found.retain(|s| scenario.operation(&s.point.operation).is_some());
    if let Some((after, only)) = after {
        found.retain(|s| s.seq > after && only.contains(&s.point.operation));
    }
    found
}

/// Whether a kept world fault already answers the provider's call at `point`: a kill there
/// would replace the fault the workload is about, so it is never a case (pruning or not).
fn occupied(scenario: &Scenario, point: &Point) -> bool {
    point.at == Boundary::AfterDispatch
        && scenario.faults.iter().any(|f| {
            f.at == Boundary::AfterDispatch && f.operation == point.operation && f.occurrence == point.occurrence
        })
}

/// Splits `seen` into points to run and points pruned (with why).
fn prune(seen: Vec<Seen>) -> (Vec<Point>, Vec<(Point, Pruned)>) {
    let mut run = Vec::new();
    let mut pruned = Vec::new();
    let mut previous: Option<&Seen> = None;
    for s in &seen {
        let same = match (previous, s.fingerprint) {
            (Some(p), Some(now)) if p.fingerprint == Some(now) => Some(p.point.clone()),
            _ => None,
        };
        if let Some(earlier) = same {
            pruned.push((s.point.clone(), Pruned::SameState { earlier }));
        } else {
            run.push(s.point.clone());
        }
        previous = Some(s);
    }
    (run, pruned)
}

/// The schedules of depth 1 for `points`: a kill at each, a freeze where one is allowed, plus, where a withdrawn permission has a
/// certain outcome, the same kill with the operation cancelled (before its first call) or a
/// destination revoked (with the result written, nothing delivered).
fn schedules(scenario: &Scenario, points: &[Point], probe: bool) -> Vec<Case> {
    let mut cases = Vec::new();
    for p in points {
        cases.push(Case { kills: vec![p.clone()], revoke: Vec::new(), freeze: false, syscalls: Vec::new() });
        // A freeze where the contract says a commit follows (§9): the outlived incarnation must
        // find itself fenced there. Only the probe can stop a runtime at these points, and only an
        // operation alone in its wave (scenario.rs says why).
        let alone = scenario.waves().iter().any(|w| w.len() == 1 && w[0].id == p.operation);
        if matches!(p.at, Boundary::BeforeDispatch | Boundary::AfterProviderSuccess | Boundary::AfterDeliverySend)
            && probe
            && alone
        {
            cases.push(Case { kills: vec![p.clone()], revoke: Vec::new(), freeze: true, syscalls: Vec::new() });
        }
        let op = scenario.operation(&p.operation).expect("points are the scenario's operations");
        let first_call = !scenario.faults.iter().any(|f| f.operation == p.operation);
        if p.at == Boundary::BeforeDispatch && p.occurrence == 1 && first_call && op.expect == Outcome::Succeeded {
            cases.push(Case {
                kills: vec![p.clone()],
                revoke: vec![Revoke::Operation],
                freeze: false,
                syscalls: Vec::new(),
            });
        }
        if p.at == Boundary::AfterResultWrite && p.occurrence == 1 && op.expect == Outcome::Succeeded {
            for d in &op.destinations {
                cases.push(Case {
                    kills: vec![p.clone()],
                    revoke: vec![Revoke::Destination(d.clone())],
                    freeze: false,
                    syscalls: Vec::new(),
                });
            }
        }
    }
    cases
}

/// Where an exploration looks for crash points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Points {
    /// Every occurrence of every named boundary (probe announcements, provider calls, `202`s).
    Boundaries,
    /// System calls, seen by `killpoint-tracer` (Linux x86_64): every sync, rename and unlink under
    /// the data dir, before and after; every request to the fake world, before; every answer
    /// from it, after. Plain writes between two of them are not explored yet.
    Syscalls,
}

/// How an exploration is run.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// 1: every point of the workload; 2: also every point of each recovery.
    pub depth: u8,
    pub run: RunOptions,
    /// Cases run at once, each with its own data dir, fake world and ports.
    pub jobs: usize,
    /// Only the cases whose name hashes into shard `k` of `n` (1-based): the same split as
    /// `cargo nextest run --partition hash:k/n` gives the trials.
    pub shard: Option<(u64, u64)>,
    /// Stop at the first failing case.
    pub first_failure: bool,
    /// Where the crash points are: the named boundaries, or system calls (`killpoint-tracer`).
    pub points: Points,
    /// Keep the data dir and logs of each failing case (the report says where). Off where failures
    /// are expected (a test that explores a broken runtime), so nothing is left behind.
    pub keep_failures: bool,
    /// Skip points with the same crash state as the one before. With operations in flight
    /// together, which points share a state varies from run to run; trial lists, which must name
    /// the same cases in every process (nextest lists, then runs each trial in a process of its
    /// own), turn it off.
    pub prune: bool,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            depth: 1,
            run: RunOptions::default(),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            shard: None,
            first_failure: false,
            points: Points::Boundaries,
            keep_failures: true,
            prune: true,
        }
    }
}

/// One case that ran, and how it ended.
#[derive(Debug)]
pub struct Finding {
    pub case: Case,
    pub scenario: Scenario,
    pub verdict: Verdict,
    /// Kept for a failing case: its data dir and logs.
    pub artifacts: Option<std::path::PathBuf>,
    pub story: Option<String>,
}

/// What an exploration did.
#[derive(Debug, Default)]
pub struct Exploration {
    /// The record run's verdict. A workload that fails with no kill at all is also the first of
    /// `failures`, as the case with no kill (`no_kill`).
    pub record: Option<Verdict>,
    /// Crash points found, per depth (index 0: depth 1).
    pub points: Vec<usize>,
    pub pruned: Vec<(Point, Pruned)>,
    /// Cases run, per depth.
    pub ran: Vec<usize>,
    /// Cases outside this shard.
    pub other_shards: usize,
    pub failures: Vec<Finding>,
    pub passed: usize,
    /// Cases whose kill point the run did not pass again (another interleaving, a path the kill
    /// changed): nothing was tested there, nothing is held against the runtime.
    pub not_reached: usize,
    /// Cases that passed only in part (a fault the runtime could not show without the probe).
    pub partial: usize,
    /// Boundaries a black-box exploration could not see.
    pub unseen: Vec<Boundary>,
    /// See [`Plan::exact`].
    pub exact: Vec<(Boundary, usize)>,
    /// See [`Plan::same_state`].
    pub same_state: Vec<(SyscallFault, SyscallFault)>,
}

/// Stable shard of a case name (FNV-1a, so every machine and every version agrees).
pub fn shard_of(name: &str, shards: u64) -> u64 {
    let mut hash: u64 = 0xcbf29ce484222325;
    for b in name.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x100000001b3);
    }
    hash % shards + 1
}

/// The record run and the depth-1 cases of `workload`, without running them: what the trials list.
pub fn plan(workload: &Workload, target: &Target, options: &ExploreOptions) -> std::io::Result<Plan> {
    let syscalls = options.points == Points::Syscalls;
    let record_options = RunOptions { fingerprints: !syscalls, syscalls, ..options.run.clone() };
    let (verdict, run) = crate::judge::run_scenario(&workload.base, target, &record_options)?;
    let failed = case_status(&verdict) == CaseStatus::Fail;
    let story = failed.then(|| crate::report::story::story(&workload.base, &verdict, &run));
    let mut exact = Vec::new();
    let mut same_state = Vec::new();
    let (points, pruned, cases, probe) = if syscalls {
        let explored: Vec<&crate::run::traced::SyscallPoint> =
            run.syscall_points.iter().filter(|p| p.incarnation == 1 && explored(p)).collect();
        let found = explored.len();
        let (kept, pruned) = if options.prune { prune_syscalls(explored) } else { (explored, Vec::new()) };
        same_state = pruned;
        let mut cases: Vec<Case> = kept
            .iter()
            .map(|p| Case { kills: Vec::new(), revoke: Vec::new(), freeze: false, syscalls: vec![p.fault()] })
            .collect();
        let syscall_cases = cases.len();
        // Without the probe, the boundaries the world and the harness's client hold exactly are
        // crash points too; the tracer's are among the system-call points.
        if !run.probe {
            let held: Vec<Point> = points(&workload.base, &run, None)
                .into_iter()
                .map(|s| s.point)
                .filter(|p| {
                    matches!(p.at, Boundary::AfterSubmit | Boundary::AfterDispatch | Boundary::AfterDeliverySend)
                })
                .filter(|p| !occupied(&workload.base, p))
                .collect();
            cases.extend(schedules(&workload.base, &held, false));
            exact = Boundary::ALL
                .into_iter()
                .map(|b| {
                    let n = if b.at_syscall() {
                        run.syscall_points.iter().flat_map(|p| &p.boundaries).filter(|a| a.boundary == b).count()
                    } else {
                        held.iter().filter(|p| p.at == b).count()
                    };
                    (b, n)
                })
                .collect();
        }
        // The tracer sees every point with or without the probe: no boundary goes unseen.
        (found + cases.len() - syscall_cases, Vec::new(), cases, true)
    } else {
        let seen = points(&workload.base, &run, None);
        let found = seen.len();
        let (to_run, pruned) = select(&workload.base, seen, options.prune);
        (found, pruned, schedules(&workload.base, &to_run, run.probe), run.probe)
    };
    let record_artifacts = (failed && options.keep_failures).then(|| run.keep_artifacts());
    Ok(Plan { record: verdict, record_story: story, record_artifacts, points, pruned, same_state, cases, probe, exact })
}

/// The points to run, and those pruned (with why) when pruning is on.
fn select(scenario: &Scenario, seen: Vec<Seen>, pruning: bool) -> (Vec<Point>, Vec<(Point, Pruned)>) {
    let (taken, seen): (Vec<Seen>, Vec<Seen>) = seen.into_iter().partition(|s| occupied(scenario, &s.point));
    let (run, mut pruned) =
        if pruning { prune(seen) } else { (seen.into_iter().map(|s| s.point).collect(), Vec::new()) };
    pruned.extend(taken.into_iter().map(|s| (s.point, Pruned::Occupied)));
    (run, pruned)
}

/// Splits system-call points into those to run and those that leave the same crash state as
/// the point run before them (see [`crate::run::traced::CrashState`]: no durable change and no send
/// to the world completed in between), each with that earlier point. A point where a boundary is
/// reached is always run: it is the exact case the certificate names.
fn prune_syscalls(
    points: Vec<&crate::run::traced::SyscallPoint>,
) -> (Vec<&crate::run::traced::SyscallPoint>, Vec<(SyscallFault, SyscallFault)>) {
    let mut kept: Vec<&crate::run::traced::SyscallPoint> = Vec::new();
    let mut pruned = Vec::new();
    for point in points {
        match kept.last() {
            Some(earlier) if earlier.state == point.state && point.boundaries.is_empty() => {
                pruned.push((point.fault(), earlier.fault()));
            }
            _ => kept.push(point),
        }
    }
    (kept, pruned)
}

/// The system-call points explored: syncs, renames and unlinks (before and after), requests
/// (before), answers (after).
fn explored(point: &crate::run::traced::SyscallPoint) -> bool {
    use crate::tracer::{PointKind, When};
    match point.kind {
        PointKind::Sync | PointKind::Rename | PointKind::Unlink => true,
        PointKind::Request => point.when == When::Before,
        PointKind::Answer => point.when == When::After,
        PointKind::Durable | PointKind::Connect => false,
    }
}

/// The depth-1 plan of a workload.
#[derive(Debug)]
pub struct Plan {
    pub record: Verdict,
    pub record_story: Option<String>,
    /// The record run's data dir and logs, kept when it failed.
    pub record_artifacts: Option<std::path::PathBuf>,
    pub points: usize,
    pub pruned: Vec<(Point, Pruned)>,
    pub cases: Vec<Case>,
    /// Whether every kind of point explored could be seen: the runtime spoke the probe in the
    /// record run, or the points are system calls (the tracer sees them either way).
    pub probe: bool,
    /// System-call points not run because the point before them leaves the same crash state:
    /// (the point, that earlier one).
    pub same_state: Vec<(SyscallFault, SyscallFault)>,
    /// System-call points without the probe: each boundary of the seed's table with how many of
    /// its occurrences the workload passed, every one a case hit exactly (at a system call, a
    /// held answer or the harness's client).
    pub exact: Vec<(Boundary, usize)>,
}

/// Runs one case; the run is returned for depth 2.
pub fn run_case(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &RunOptions,
) -> std::io::Result<(Finding, Run)> {
    let scenario = case.scenario(workload);
    let (verdict, run) = crate::judge::run_scenario(&scenario, target, options)?;
    let failed = case_status(&verdict) == CaseStatus::Fail;
    let story = failed.then(|| crate::report::story::story(&scenario, &verdict, &run));
    Ok((Finding { case: case.clone(), scenario, verdict, artifacts: None, story }, run))
}

/// Explores `scenario`'s workload against `target`; `progress` is told of each case as it ends
/// (done, total so far, failures so far).
pub fn explore(
    scenario: &Scenario,
    target: &Target,
    options: &ExploreOptions,
    progress: &(dyn Fn(&Finding, usize, usize, usize) + Sync),
) -> std::io::Result<Exploration> {
    let workload = Workload::of(scenario);
    let plan = plan(&workload, target, options)?;
    let mut result = Exploration {
        record: Some(plan.record.clone()),
        points: vec![plan.points],
        pruned: plan.pruned.clone(),
        exact: plan.exact.clone(),
        same_state: plan.same_state.clone(),
        ..Exploration::default()
    };
    if !plan.probe {
        result.unseen = Boundary::ALL
            .into_iter()
            .filter(|b| {
                b.site() == Site::Probe && *b != Boundary::AfterProviderSuccess && *b != Boundary::AfterDeliverySend
            })
            .collect();
    }
    if let Some(story) = &plan.record_story {
        let case = Case { kills: Vec::new(), revoke: Vec::new(), freeze: false, syscalls: Vec::new() };
        let scenario = case.scenario(&workload);
        result.failures.push(Finding {
            case,
            scenario,
            verdict: plan.record.clone(),
            artifacts: plan.record_artifacts.clone(),
            story: Some(story.clone()),
        });
        if options.first_failure {
            return Ok(result);
        }
    }
    let syscalls = options.points == Points::Syscalls;
    // Over system calls, every case is traced: its recovery's calls are the points of depth 2.
    let traced_options;
    let options = if syscalls {
        traced_options =
            ExploreOptions { run: RunOptions { syscalls: true, ..options.run.clone() }, ..options.clone() };
        &traced_options
    } else {
        options
    };
    let depth2 = options.depth >= 2;
    let mut level: Vec<Case> = plan.cases;
    let mut depth = 1;
    loop {
        let (mine, others): (Vec<Case>, Vec<Case>) = match options.shard {
            Some((k, n)) => {
                level.into_iter().partition(|c| shard_of(&format!("{}/{}", scenario.name, c.name()), n) == k)
            }
            None => (level, Vec::new()),
        };
        result.other_shards += others.len();
        // Depth 2 needs every depth-1 run, in this shard or not: their recoveries are the points.
        let to_run: Vec<Case> =
            if depth == 1 && depth2 { mine.iter().chain(others.iter()).cloned().collect() } else { mine.clone() };
        let judged: BTreeSet<String> = mine.iter().map(Case::name).collect();
        let keep_runs = depth == 1 && depth2;
        let outcomes =
            run_all(&workload, &to_run, target, options, keep_runs, &judged, progress, result.failures.len())?;
        result.ran.push(outcomes.iter().filter(|(f, _)| judged.contains(&f.case.name())).count());
        let mut next = Vec::new();
        for (finding, run) in outcomes {
            if judged.contains(&finding.case.name()) {
                match finding.status() {
                    CaseStatus::Pass => result.passed += 1,
                    CaseStatus::Partial => result.partial += 1,
                    CaseStatus::NotReached => result.not_reached += 1,
                    CaseStatus::Fail => result.failures.push(finding.clone_without_run()),
                }
            }
            if let Some(run) = run {
                // The recovery: what the operations in flight at the kill did after it.
                let Some(kill_seq) =
                    run.timeline.iter().find(|m| matches!(m.happening, Happening::Killed { .. })).map(|m| m.seq)
                else {
                    continue;
                };
                if syscalls {
                    // The recovery's system calls: every explored point of the next incarnation.
                    let killed = run.timeline.iter().find_map(|m| match m.happening {
                        Happening::Killed { incarnation } => Some(incarnation),
                        _ => None,
                    });
                    let recovery: Vec<&crate::run::traced::SyscallPoint> = run
                        .syscall_points
                        .iter()
                        .filter(|p| Some(p.incarnation) == killed.map(|k| k + 1) && explored(p))
                        .collect();
                    result.points.resize(2, 0);
                    result.points[1] += recovery.len();
                    let (kept, pruned) = if options.prune { prune_syscalls(recovery) } else { (recovery, Vec::new()) };
                    result.same_state.extend(pruned);
                    for q in kept {
                        let mut syscalls = finding.case.syscalls.clone();
                        syscalls.push(q.fault());
                        next.push(Case { syscalls, ..finding.case.clone() });
                    }
                    continue;
                }
                let in_flight = in_flight_at(&finding.scenario, &run, kill_seq);
                let seen = points(&finding.scenario, &run, Some((kill_seq, &in_flight)));
                result.points.resize(2, 0);
                result.points[1] += seen.len();
                let (to_run, pruned) = select(&finding.scenario, seen, options.prune);
                result.pruned.extend(pruned);
                for q in to_run {
                    let mut kills = finding.case.kills.clone();
                    kills.push(q);
                    next.push(Case { kills, revoke: finding.case.revoke.clone(), freeze: false, syscalls: Vec::new() });
                }
            }
        }
        if next.is_empty() || (options.first_failure && !result.failures.is_empty()) {
            break;
        }
        level = next;
        depth += 1;
    }
    Ok(result)
}

/// How one explored case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseStatus {
    Pass,
    Partial,
    /// The only complaint is a fault not reached: the case's kill, or a kept world fault the kill
    /// made unnecessary (a lookup fault with no unknown outcome left to look up).
    NotReached,
    Fail,
}

impl Finding {
    pub fn status(&self) -> CaseStatus {
        case_status(&self.verdict)
    }

    fn clone_without_run(&self) -> Finding {
        Finding {
            case: self.case.clone(),
            scenario: self.scenario.clone(),
            verdict: self.verdict.clone(),
            artifacts: self.artifacts.clone(),
            story: self.story.clone(),
        }
    }
}

fn case_status(verdict: &Verdict) -> CaseStatus {
    match verdict.status() {
        Status::Pass => CaseStatus::Pass,
        Status::Partial => CaseStatus::Partial,
        Status::Error => CaseStatus::Fail,
        Status::Fail
            if verdict.violations.iter().all(|v| v.invariant == crate::model::invariant::Invariant::FaultsReached) =>
        {
            CaseStatus::NotReached
        }
        Status::Fail => CaseStatus::Fail,
    }
}

/// Operations accepted before `seq` that had not settled: those whose recovery follows a kill.
fn in_flight_at(scenario: &Scenario, run: &Run, seq: u64) -> BTreeSet<String> {
    let accepted: BTreeSet<String> = run
        .timeline
        .iter()
        .filter(|m| m.seq < seq)
        .filter_map(|m| match &m.happening {
            Happening::Answered { operation, .. } => Some(operation.clone()),
            _ => None,
        })
        .collect();
    // Settled before the kill: its wave ended before the kill's wave began. Waves settle whole, so
    // an operation of an earlier wave than the killed one is done.
    let waves = scenario.waves();
    let killed_wave = run
        .timeline
        .iter()
        .filter(|m| m.seq <= seq)
        .filter_map(|m| match &m.happening {
            Happening::Submitted { operation } => waves.iter().position(|w| w.iter().any(|o| o.id == *operation)),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    accepted
        .into_iter()
        .filter(|id| waves.iter().position(|w| w.iter().any(|o| o.id == *id)) == Some(killed_wave))
        .collect()
}

/// Runs `cases` on `options.jobs` threads; keeps each run only when asked (depth 2 reads them).
#[allow(clippy::too_many_arguments)]
fn run_all(
    workload: &Workload,
    cases: &[Case],
    target: &Target,
    options: &ExploreOptions,
    keep_runs: bool,
    judged: &BTreeSet<String>,
    progress: &(dyn Fn(&Finding, usize, usize, usize) + Sync),
    failures_so_far: usize,
) -> std::io::Result<Vec<(Finding, Option<Run>)>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failures = AtomicUsize::new(failures_so_far);
    let done = AtomicUsize::new(0);
    let total = judged.len();
    let out: Mutex<Vec<(usize, std::io::Result<(Finding, Option<Run>)>)>> = Mutex::new(Vec::new());
    // Runs whose recoveries become depth-2 points take fingerprints, so those points can be pruned.
    let run_options = RunOptions { fingerprints: keep_runs, ..options.run.clone() };
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            scope.spawn(|| {
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { return };
                    // Cases of other shards run only for their recoveries (depth 2): not judged here.
                    let judged = judged.contains(&case.name());
                    let outcome = run_case(workload, case, target, &run_options).map(|(mut finding, run)| {
                        let failed = judged && finding.status() == CaseStatus::Fail;
                        if failed {
                            failures.fetch_add(1, Ordering::Relaxed);
                            if options.first_failure {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                        if judged {
                            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                            progress(&finding, n, total, failures.load(Ordering::Relaxed));
                        }
                        let keep = failed && options.keep_failures;
                        let run = if keep {
                            let path = run.keep_artifacts();
                            finding.artifacts = Some(path);
                            None
                        } else if keep_runs {
                            Some(run)
                        } else {
                            None
                        };
                        (finding, run)
                    });
                    out.lock().unwrap_or_else(|p| p.into_inner()).push((i, outcome));
                }
            });
        }
    });
    let mut out = out.into_inner().unwrap_or_else(|p| p.into_inner());
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// Groups pruned points by reason, for the summary line.
pub fn pruned_summary(pruned: &[(Point, Pruned)]) -> BTreeMap<&'static str, usize> {
    let mut by = BTreeMap::new();
    for (_, why) in pruned {
        *by.entry(match why {
            Pruned::SameState { .. } => "same crash state as the point before",
            Pruned::Occupied => "the provider's answer there is a kept world fault",
        })
        .or_default() += 1;
    }
    by
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn workload(text: &str) -> Workload {
        Workload::of(&Scenario::parse(Path::new("scenarios/w.toml"), text).expect("valid scenario"))
    }

    const TWO: &str = r#"
description = "two at once"
[[operation]]
id = "sms"
tool = "send_sms"
destinations = ["mailer"]
expect = "succeeded"
wave = 1
[[operation]]
id = "charge"
tool = "charge_card"
expect = "paused"
wave = 1
[[fault]]
at = "after_dispatch"
operation = "charge"
revoke = ["tool"]
"#;

    fn point(at: Boundary, operation: &str, occurrence: u32) -> Point {
        Point { at, operation: operation.into(), occurrence, destination: None }
    }

    #[test]
    fn a_workload_drops_kills_and_the_expectations_only_they_explain() {
        let w = workload(TWO);
        assert_eq!((w.dropped, w.kept), (1, 0));
        assert!(w.base.faults.is_empty());
        // `paused` came from the dropped kill: without it the charge succeeds.
        assert_eq!(w.base.operation("charge").map(|o| o.expect), Some(Outcome::Succeeded));
    }

    #[test]
    fn expectations_follow_the_kills() {
        let w = workload(TWO);
        let at_sms = Case {
            kills: vec![point(Boundary::AfterDispatch, "sms", 1)],
            revoke: Vec::new(),
            freeze: false,
            syscalls: Vec::new(),
        };
        let s = at_sms.scenario(&w);
        assert_eq!(s.operation("sms").map(|o| o.expect), Some(Outcome::Paused));
        assert_eq!(s.faults.len(), 1);
        // A kill beside the SMS may cut its request off: succeeded, or paused.
        let beside = Case {
            kills: vec![point(Boundary::BeforeDispatch, "charge", 1)],
            revoke: Vec::new(),
            freeze: false,
            syscalls: Vec::new(),
        };
        assert_eq!(beside.scenario(&w).operation("sms").map(|o| o.expect), Some(Outcome::SucceededOrPaused));
        let cancelled = Case {
            kills: vec![point(Boundary::BeforeDispatch, "charge", 1)],
            revoke: vec![Revoke::Operation],
            freeze: false,
            syscalls: Vec::new(),
        };
        let s = cancelled.scenario(&w);
        assert_eq!(s.operation("charge").map(|o| o.expect), Some(Outcome::Refused));
        assert_eq!(s.faults[0].revoke, vec![Revoke::Operation]);
    }

    #[test]
    fn names_are_stable_and_say_the_schedule() {
        let case = Case {
            kills: vec![
                point(Boundary::AfterDispatch, "charge", 1),
                point(Boundary::AfterProviderSuccess, "charge", 2),
            ],
            revoke: Vec::new(),
            freeze: false,
            syscalls: Vec::new(),
        };
        assert_eq!(case.name(), "after_dispatch.charge.1/after_provider_success.charge.2");
        let none = Case { kills: Vec::new(), revoke: Vec::new(), freeze: false, syscalls: Vec::new() };
        assert_eq!(none.name(), "no_kill");
    }

    #[test]
    fn the_same_crash_state_twice_in_a_row_is_pruned() {
        let w = workload(TWO);
        let state = Fingerprint { data: 7, world: 3 };
        let seen = vec![
            Seen { point: point(Boundary::BeforeDispatch, "sms", 1), seq: 1, fingerprint: Some(state) },
            Seen { point: point(Boundary::BeforeDispatch, "charge", 1), seq: 2, fingerprint: Some(state) },
            Seen { point: point(Boundary::AfterDispatch, "charge", 1), seq: 3, fingerprint: None },
            Seen {
                point: point(Boundary::AfterProviderSuccess, "charge", 1),
                seq: 4,
                fingerprint: Some(Fingerprint { data: 8, world: 4 }),
            },
        ];
        let (run, pruned) = select(&w.base, seen, true);
        assert_eq!(run.len(), 3);
        assert_eq!(
            pruned,
            vec![(
                point(Boundary::BeforeDispatch, "charge", 1),
                Pruned::SameState { earlier: point(Boundary::BeforeDispatch, "sms", 1) }
            )]
        );
    }

    #[test]
    fn a_system_call_that_leaves_the_same_crash_state_is_pruned_unless_a_boundary_is_there() {
        use crate::run::traced::{CrashState, SyscallPoint};
        use crate::tracer::{PointKind, When};
        let at = |kind, when, occurrence, durable, sent, boundary: Option<Boundary>| SyscallPoint {
            incarnation: 1,
            kind,
            when,
            occurrence,
            since: None,
            boundaries: boundary
                .map(|b| crate::scenario::Anchor { boundary: b, operation: "charge".into(), occurrence: 1 })
                .into_iter()
                .collect(),
            state: CrashState { durable, sent },
            what: String::new(),
        };
        let points = [
            at(PointKind::Sync, When::Before, 1, 3, 0, None),
            // fsync changes nothing a process kill can tell: the same state as just before it.
            at(PointKind::Sync, When::After, 1, 3, 0, None),
            at(PointKind::Request, When::Before, 1, 3, 0, None),
            // The request went out: the world changed.
            at(PointKind::Answer, When::After, 1, 3, 1, Some(Boundary::AfterProviderSuccess)),
            // The same state as the answer, but a boundary: run, it is the case the table names.
            at(PointKind::Answer, When::After, 2, 3, 1, Some(Boundary::BeforeDispatch)),
            at(PointKind::Sync, When::Before, 2, 4, 1, None),
        ];
        let (kept, pruned) = prune_syscalls(points.iter().collect());
        assert_eq!(
            kept.iter().map(|p| (p.kind, p.when, p.occurrence)).collect::<Vec<_>>(),
            [
                (PointKind::Sync, When::Before, 1),
                (PointKind::Answer, When::After, 1),
                (PointKind::Answer, When::After, 2),
                (PointKind::Sync, When::Before, 2),
            ]
        );
        assert_eq!(pruned.len(), 2);
        assert_eq!(pruned[0].1, points[0].fault(), "pruned for the point before it");
        assert_eq!(pruned[1].0, points[2].fault());
    }

    #[test]
    fn shards_cover_every_name_once() {
        let names: Vec<String> = (0..200).map(|i| format!("w/after_dispatch.op{i}.1")).collect();
        let mut counts = [0usize; 3];
        for name in &names {
            let shard = shard_of(name, 3);
            assert!((1..=3).contains(&shard));
            counts[shard as usize - 1] += 1;
            assert_eq!(shard, shard_of(name, 3), "stable");
        }
        assert_eq!(counts.iter().sum::<usize>(), 200);
        assert!(counts.iter().all(|&c| c > 40), "{counts:?}");
    }
}
