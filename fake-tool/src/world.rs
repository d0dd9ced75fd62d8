//! The fake world: provider, consumers and policy service behind one loopback HTTP server.
//!
//! It lives in the harness process (or the standalone binary), never in the runtime's, so it
//! survives every kill, and its ledger is the ground truth the checker reads.

use crate::consumers::{self, Consumers};
use crate::faults::{ConsumerFault, ConsumerHold, Faults, LookupFault, ModelFault, PolicyFault, ProviderFault};
use crate::fence::Fence;
// Re-exported where it used to live, so `fake_tool::world::KillPoint` still names it.
pub use crate::kill_point::KillPoint;
use crate::ledger::{Clock, Entry, Ledger};
use crate::model::{self, Model, ModelScript};
use crate::policy::{self, Policy};
use crate::provider::{self, Provider};
use crate::revocation::Revocation;
use crate::snapshot::{WorldSnapshot, WorldState};
use axum::Router;
use axum::routing::{get, post};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// A running fake world.
pub struct World {
    addr: SocketAddr,
    ledger: Arc<Ledger>,
    faults: Arc<Faults>,
    policy: Policy,
    model: Model,
    fence: Arc<Fence>,
    state: WorldState,
    shutdown: watch::Sender<bool>,
    /// The kill point tags whose held answers may go (`FaultResponse::SignalThenAnswer`).
    released: watch::Sender<BTreeSet<u64>>,
    server: Option<JoinHandle<()>>,
}

impl World {
    /// Binds 127.0.0.1 on an OS-chosen port and serves until [`World::shutdown`] or drop.
    /// Returns the world and the stream of kill points it reaches.
    pub async fn start(clock: Clock) -> std::io::Result<(World, mpsc::UnboundedReceiver<KillPoint>)> {
        let ledger = Arc::new(Ledger::new(clock));
        World::serve(ledger, Faults::default(), 0, None).await
    }

    /// A world that goes on from `snapshot` (on a port of its own), on `clock`, which must be the
    /// snapshot's ([`WorldSnapshot::clock`]) or one resumed from it: its ledger, effects,
    /// receipts, revocations, armed faults and fence are the snapshot's.
    pub async fn start_from(
        snapshot: &WorldSnapshot,
        clock: Clock,
    ) -> std::io::Result<(World, mpsc::UnboundedReceiver<KillPoint>)> {
        let ledger = Arc::new(Ledger::with_entries(clock, snapshot.entries.clone()));
        World::serve(ledger, snapshot.faults.copy(), snapshot.fence, Some(snapshot)).await
    }

    async fn serve(
        ledger: Arc<Ledger>,
        faults: Faults,
        current: u32,
        from: Option<&WorldSnapshot>,
    ) -> std::io::Result<(World, mpsc::UnboundedReceiver<KillPoint>)> {
        let faults = Arc::new(faults);
        let (points_tx, points_rx) = mpsc::unbounded_channel();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (released, released_rx) = watch::channel(BTreeSet::new());
        let fence = Arc::new(Fence::default());
        fence.raise(current);
        let policy = Policy::new(ledger.clone(), faults.clone(), fence.clone());
        if let Some(from) = from {
            *policy.revocations.lock().expect("policy lock") = from.revocations.clone();
        }

        let provider = Provider::new(
            ledger.clone(),
            faults.clone(),
            points_tx.clone(),
            shutdown_rx.clone(),
            released_rx,
            policy.clone(),
            fence.clone(),
        );
        let consumers =
            Consumers::new(ledger.clone(), faults.clone(), points_tx.clone(), shutdown_rx.clone(), fence.clone());
        let model = Model::new(ledger.clone(), faults.clone());
        if let Some(from) = from {
            *provider.effects.lock().expect("provider lock") = from.effects.clone();
            *consumers.state.lock().expect("consumer lock") = from.receipts.clone();
            *model.minds.lock().expect("model lock") = from.minds.clone();
        }
        let state = WorldState {
            ledger: ledger.clone(),
            faults: faults.clone(),
            fence: fence.clone(),
            effects: provider.effects.clone(),
            receipts: consumers.state.clone(),
            revocations: policy.revocations.clone(),
            minds: model.minds.clone(),
        };
        let provider_routes = Router::new()
            .route("/tools/{tool}", post(provider::call))
            .route("/tools/{tool}/effects", get(provider::lookup_by_key))
            .route("/tools/{tool}/effects/{provider_ref}", get(provider::lookup_by_ref))
            .with_state(provider);
        let consumer_routes =
            Router::new().route("/{destination}/events", post(consumers::receive)).with_state(consumers);
        let policy_routes = Router::new()
            .route("/check", post(policy::check))
            .route("/revocations", post(policy::revoke))
            .with_state(policy.clone());
        // The path an OpenAI client appends to its `base_url` (`KILLPOINT_MODEL_URL`).
        let model_routes = Router::new().route("/v1/chat/completions", post(model::chat)).with_state(model.clone());
        let ledger_for_route = ledger.clone();
        let ledger_for_metrics = ledger.clone();
        let app =
            Router::new()
                .nest("/provider", provider_routes)
                .nest("/consumers", consumer_routes)
                .nest("/policy", policy_routes)
                .nest("/model", model_routes)
                .route("/ledger", get(move || async move { axum::Json(ledger_for_route.entries()) }))
                // The world's own monitoring signals (duplicate keys), from the ledger.
                .route(
                    "/metrics",
                    get(move || async move {
                        crate::signals::DuplicateKeys::of(&ledger_for_metrics.entries()).to_prometheus()
                    }),
                );

        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let mut stop = shutdown_rx;
        let server = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop.wait_for(|down| *down).await;
            });
            if let Err(e) = serve.await {
                eprintln!("killpoint fake world: server error: {e}");
            }
        });
        let world =
            World { addr, ledger, faults, policy, model, fence, state, shutdown, released, server: Some(server) };
        Ok((world, points_rx))
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
    pub fn provider_url(&self) -> String {
        format!("{}/provider", self.base_url())
    }
    pub fn consumers_url(&self) -> String {
        format!("{}/consumers", self.base_url())
    }
    pub fn policy_url(&self) -> String {
        format!("{}/policy", self.base_url())
    }
    /// The model's base URL, as an OpenAI client takes it (`base_url`): it appends
    /// `/chat/completions`.
    pub fn model_url(&self) -> String {
        format!("{}/model/v1", self.base_url())
    }

    /// A handle that takes snapshots of this world's state ([`WorldSnapshot`]), from any task.
    pub fn state(&self) -> WorldState {
        self.state.clone()
    }

    /// This world's state now (see [`WorldState::snapshot`]).
    pub fn snapshot(&self) -> WorldSnapshot {
        self.state.snapshot()
    }

    /// Resolves at the world's next ledger entry (a call, lookup, receipt, check, revocation).
    pub async fn changed(&self) {
        self.ledger.changed().await
    }

    pub fn entries(&self) -> Vec<Entry> {
        self.ledger.entries()
    }

    /// How many ledger entries so far satisfy `matches`, without copying the ledger.
    pub fn count_entries(&self, matches: impl Fn(&Entry) -> bool) -> usize {
        self.ledger.count(matches)
    }

    pub fn arm_provider(&self, fault: ProviderFault) {
        self.faults.arm_provider(fault);
    }
    pub fn arm_consumer(&self, fault: ConsumerFault) {
        self.faults.arm_consumer(fault);
    }
    pub fn arm_consumer_hold(&self, hold: ConsumerHold) {
        self.faults.arm_consumer_hold(hold);
    }
    pub fn arm_lookup(&self, fault: LookupFault) {
        self.faults.arm_lookup(fault);
    }
    pub fn arm_policy(&self, fault: PolicyFault) {
        self.faults.arm_policy(fault);
    }
    /// Tells the model what to decide for one task operation.
    pub fn arm_model(&self, script: ModelScript) {
        self.model.arm(script);
    }
    pub fn arm_model_fault(&self, fault: ModelFault) {
        self.faults.arm_model(fault);
    }

    /// Declares `incarnation` current, before it starts: from now on a request carrying a lower
    /// `Killpoint-Incarnation` is refused `409 fenced` and applied nowhere. Never lowered.
    pub fn fence(&self, incarnation: u32) {
        self.fence.raise(incarnation);
    }

    /// Withdraws a permission from now on; returns the revocation's sequence number.
    pub fn revoke(&self, revocation: Revocation) -> u64 {
        self.policy.revoke(revocation)
    }

    /// Lets the answer held at kill point `tag` go (armed `FaultResponse::SignalThenAnswer`); a
    /// tag released before its point is reached is not held there at all.
    pub fn release(&self, tag: u64) {
        self.released.send_modify(|tags| {
            tags.insert(tag);
        });
    }

    /// Releases every held answer and stops the server.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        // Graceful shutdown waits for open connections; held ones were just released. A runtime
        // killed mid-request leaves nothing open, so this ends promptly; cap it anyway.
        if let Some(server) = self.server.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), server).await;
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}
