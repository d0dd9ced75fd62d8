//! Genes read into a schedule: each operation's faults walked from its flow, the waves they may
//! share, the consumer faults, and the scenario with the expectations they lead to; and the
//! strategy that draws them.

use super::flow::{Plan, genes_for, plan};
use super::genes::{DESTINATIONS, Genes, MAX_FAULTS, TENANTS, genes, genes_with_services};
use crate::model::boundary::Boundary;
use crate::scenario::{ConsumerFault, Fault, Operation, Outcome, RuntimeSettings, Scenario, ServiceFault};
use fake_tool::ToolKind;
use proptest::prelude::*;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

/// The strategy: scenarios built from genes, each read back through the scenario parser, so that
/// only what a scenario file may say is ever run.
///
/// `probe`: the runtime implements the boundary probe. Without it, faults are drawn only where
/// the harness stops the runtime exactly from outside (`after_submit`, `after_dispatch`), which
/// count their occurrences as the probe would. `services`: the names of the services the runtime
/// declares (`--services`); with any, a case may also act on them (`services.rs`).
pub fn cases(waves: bool, probe: bool, services: &[String]) -> impl Strategy<Value = Scenario> {
    draws(waves, probe, services).prop_map(|(_, scenario)| scenario)
}

/// [`cases`] with the genes each scenario was read from: what a shrink past proptest's needs.
pub(super) fn draws(waves: bool, probe: bool, services: &[String]) -> BoxedStrategy<(Genes, Scenario)> {
    let services = services.to_vec();
    // Without services, exactly the strategy of before they existed: the same seed, the same cases.
    let strategy = match services.is_empty() {
        true => genes().boxed(),
        false => genes_with_services().boxed(),
    };
    strategy
        .prop_filter_map("a drawn schedule that a scenario file would refuse", move |g| {
            let scenario = read(&g, waves, probe, &services)?;
            Some((g, scenario))
        })
        .boxed()
}

/// The genes read into a scenario, and back through the parser: `None` when a scenario file
/// would refuse it.
fn read(genes: &Genes, waves: bool, probe: bool, services: &[String]) -> Option<Scenario> {
    let drawn = schedule(genes, waves, probe, services);
    Scenario::parse(&drawn.path, &drawn.to_toml()).ok()
}

/// Faults of every kind in a scenario's schedule.
pub fn fault_count(s: &Scenario) -> usize {
    s.faults.len() + s.consumer_faults.len() + s.lookup_faults.len() + s.policy_faults.len() + s.service_faults.len()
}

/// The id of the `i`-th drawn operation (from 0).
fn operation_id(i: usize) -> String {
    format!("op{}", i + 1)
}

/// Every case with fewer faults than `drawn` (which `genes` read into) by dropping one: each
/// fault in turn, the operation's other faults kept where they land (their genes found again),
/// the consumer faults all at once. Genes that drew nothing are dropped first, so that a budget
/// freed by the drop draws no new fault. Each case's expectations are derived again, as a drawn
/// case's are.
pub(super) fn one_fault_fewer(
    genes: &Genes,
    drawn: &Scenario,
    waves: bool,
    probe: bool,
    services: &[String],
) -> Vec<(Genes, Scenario)> {
    let faults_of = |i: usize| -> Vec<Fault> {
        let id = operation_id(i);
        drawn.faults.iter().filter(|f| f.operation == id).cloned().collect()
    };
    // Each gene walked draws one fault until the walk stops: the first ones drew them all.
    let mut used = genes.clone();
    for (i, op) in used.operations.iter_mut().enumerate() {
        op.faults.truncate(faults_of(i).len());
    }
    used.consumer_faults.truncate(drawn.consumer_faults.len());
    // At most one service gene: it landed (a fault) or it did not (nothing to keep).
    used.services.truncate(drawn.service_faults.len());
    let mut fewer = Vec::new();
    for (i, op) in used.operations.iter().enumerate() {
        let faults = faults_of(i);
        for dropped in 0..faults.len() {
            let mut rest = faults.clone();
            rest.remove(dropped);
            if let Some(kept) = genes_for(&operation_id(i), op, &rest, probe) {
                let mut g = used.clone();
                g.operations[i].faults = kept;
                fewer.push(g);
            }
        }
    }
    if !used.consumer_faults.is_empty() {
        fewer.push(Genes { consumer_faults: Vec::new(), ..used.clone() });
    }
    if !used.services.is_empty() {
        fewer.push(Genes { services: Vec::new(), ..used.clone() });
    }
    fewer
        .into_iter()
        .filter_map(|g| read(&g, waves, probe, services).map(|s| (g, s)))
        .filter(|(_, s)| fault_count(s) < fault_count(drawn))
        .collect()
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

impl Member {
    fn of(key: (usize, ToolKind), plan: &Plan) -> Member {
        Member {
            key,
            kills: plan.kills(),
            revokes: plan.revokes,
            fragile: key.1 == ToolKind::NonIdempotentNoLookup
                || plan.revokes
                || plan.faults.iter().any(|f| f.at == Boundary::AfterResultWrite),
        }
    }

    /// Whether this operation may run in a wave that `m` is in.
    fn may_share(&self, m: &Member) -> bool {
        // A kill beside an operation whose drawn outcome it could change.
        let kill_beside_fragile = (m.fragile && self.kills) || (self.fragile && m.kills);
        // A revocation must land on the same tool and tenant before, or after, never
        // during: the refusal would depend on the interleaving.
        let revocation_during = (m.revokes || self.revokes) && m.key == self.key;
        !kill_beside_fragile && !revocation_during
    }
}

/// The waves of the operations read so far.
#[derive(Default)]
struct Waves {
    /// Tools withdrawn (for a tenant) by an operation read so far.
    revoked: HashSet<(usize, ToolKind)>,
    /// The operations of the current wave.
    wave: Vec<Member>,
    /// Each operation's wave.
    numbers: Vec<u32>,
    /// Some operation shares a wave with the one before it.
    joined_any: bool,
}

impl Waves {
    /// Puts the next operation in the current wave when it `may_join` and shares it safely with
    /// every operation there, else in a wave of its own.
    fn place(&mut self, may_join: bool, member: Member) {
        let joins = may_join && self.wave.iter().all(|m| member.may_share(m));
        if joins {
            self.joined_any = true;
        } else {
            self.wave.clear();
        }
        let waves = &mut self.numbers;
        waves.push(if waves.is_empty() {
            1
        } else if joins {
            waves[waves.len() - 1]
        } else {
            waves[waves.len() - 1] + 1
        });
        if member.revokes {
            self.revoked.insert(member.key);
        }
        self.wave.push(member);
    }
}

/// Reads genes into a scenario, expectations included; its service faults on `services`.
pub(super) fn schedule(genes: &Genes, waves_allowed: bool, probe: bool, services: &[String]) -> Scenario {
    let mut operations = Vec::new();
    let mut faults = Vec::new();
    let mut waves = Waves::default();
    for (i, gene) in genes.operations.iter().enumerate() {
        let id = operation_id(i);
        let key = (gene.tenant, gene.kind);
        let budget = MAX_FAULTS - faults.len();
        // A tool withdrawn for this tenant by an earlier operation refuses this one's first
        // attempt: no fault of it could be reached past its submission, so it has none.
        let plan = if waves.revoked.contains(&key) {
            Plan { faults: Vec::new(), outcome: Some(Outcome::Refused), revokes: false }
        } else {
            plan(&id, gene, budget, probe)
        };
        waves.place(i > 0 && waves_allowed && gene.join, Member::of(key, &plan));
        faults.extend(plan.faults);
        operations.push(Operation {
            id,
            tool: gene.kind,
            task: false,
            destinations: gene.destinations.iter().map(|d| (*d).to_owned()).collect(),
            tenant: TENANTS[gene.tenant].to_owned(),
            actor: "agent-7".to_owned(),
            expect: plan.outcome.unwrap_or(Outcome::Succeeded),
            wave: None,
        });
    }
    if waves.joined_any {
        for (op, w) in operations.iter_mut().zip(&waves.numbers) {
            op.wave = Some(*w);
        }
    }
    let consumer_faults = consumer_faults(genes, &operations, faults.len());
    let service_faults = super::services::place(&genes.services, &operations, &faults, probe, services);
    drawn(operations, faults, consumer_faults, service_faults)
}

/// The consumer faults of the genes, given the operations and the number of faults already drawn.
fn consumer_faults(genes: &Genes, operations: &[Operation], faults: usize) -> Vec<ConsumerFault> {
    // Consumer faults only where a success is delivered, at most one per consumer.
    let delivered: Vec<&str> = DESTINATIONS
        .iter()
        .copied()
        .filter(|d| operations.iter().any(|o| o.expect == Outcome::Succeeded && o.destinations.iter().any(|x| x == d)))
        .collect();
    let mut consumer_faults: Vec<ConsumerFault> = Vec::new();
    for (pick, times) in &genes.consumer_faults {
        if delivered.is_empty() || faults + consumer_faults.len() == MAX_FAULTS {
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
    consumer_faults
}

/// The drawn scenario around its operations and faults.
fn drawn(
    operations: Vec<Operation>,
    faults: Vec<Fault>,
    consumer_faults: Vec<ConsumerFault>,
    service_faults: Vec<ServiceFault>,
) -> Scenario {
    Scenario {
        name: "random".to_owned(),
        path: PathBuf::from("random.toml"),
        description: "A drawn schedule.".to_owned(),
        operations,
        faults,
        consumer_faults,
        syscall_faults: Vec::new(),
        lookup_faults: Vec::new(),
        model_faults: Vec::new(),
        policy_faults: Vec::new(),
        service_faults,
        // Fast retries: a drawn case settles in a fraction of a second.
        runtime: RuntimeSettings { delivery_max_attempts: 5, retry_base_ms: 5 },
        // A hang bound, not a wait.
        deadline: Duration::from_secs(5),
        catches: Vec::new(),
        missing_data_dir: false,
        schedule: None,
        needs_services: false,
        restore_lag: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::runner::seed_bytes;
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    use std::collections::BTreeSet;

    #[test]
    fn every_drawn_schedule_is_a_valid_scenario_file() {
        let mut runner =
            TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(7)));
        let strategy = genes();
        let mut shapes = BTreeSet::new();
        for _ in 0..500 {
            let g = strategy.new_tree(&mut runner).unwrap().current();
            let drawn = schedule(&g, true, true, &[]);
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

    /// The files of the first 60 cases drawn from seed 7, with the probe and waves: what
    /// `killpoint random` drew before services could be declared. Without services it must draw
    /// them still, byte for byte (a seed is a record: an old failure's seed draws it again).
    const SEED_7_DIGEST: &str = "ad0bb5e9ab9f4fb0db4b79af3231309dec39dee87a22fe45ff64fb7a9ee986ea";

    #[test]
    fn without_services_a_seed_draws_what_it_drew_before() {
        use sha2::{Digest, Sha256};
        let mut runner =
            TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(7)));
        let strategy = draws(true, true, &[]);
        let mut digest = Sha256::new();
        for _ in 0..60 {
            let (_, drawn) = strategy.new_tree(&mut runner).unwrap().current();
            digest.update(drawn.to_toml().as_bytes());
        }
        let hex: String = digest.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, SEED_7_DIGEST, "the draws of seed 7 without services changed");
    }

    #[test]
    fn with_services_a_case_may_act_on_them_and_is_still_a_valid_file() {
        let mut runner =
            TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(7)));
        let services = ["kv".to_owned(), "pg".to_owned()];
        let strategy = draws(true, true, &services);
        let mut actions = BTreeSet::new();
        let mut with_one = 0;
        for _ in 0..300 {
            let (_, drawn) = strategy.new_tree(&mut runner).unwrap().current();
            // `draws` read it back through the parser: a file `killpoint run` takes.
            assert!(drawn.service_faults.len() <= 1, "{}", drawn.to_toml());
            for fault in &drawn.service_faults {
                actions.insert(fault.action.name());
                assert!(fault.service == "*" || services.contains(&fault.service), "{}", drawn.to_toml());
            }
            with_one += usize::from(!drawn.service_faults.is_empty());
        }
        assert_eq!(actions.len(), 4, "every action is drawn: {actions:?}");
        assert!((90..=260).contains(&with_one), "{with_one} of 300 cases act on a service");
    }

    #[test]
    fn a_fault_dropped_leaves_the_others_where_they_were() {
        let mut runner =
            TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(11)));
        let strategy = genes();
        let mut dropped = 0;
        for _ in 0..300 {
            let g = strategy.new_tree(&mut runner).unwrap().current();
            let drawn = schedule(&g, false, true, &[]);
            for (_, fewer) in one_fault_fewer(&g, &drawn, false, true, &[]) {
                assert!(fault_count(&fewer) < fault_count(&drawn));
                // Every fault left is one the drawn case had, at the same boundary occurrence.
                for fault in &fewer.faults {
                    assert!(drawn.faults.contains(fault), "{fault:?} is not in\n{}", drawn.to_toml());
                }
                dropped += 1;
            }
        }
        assert!(dropped > 100, "only {dropped} case(s) with one fault fewer");
    }
}
