//! `killpoint-fake-tool`: the fake world on its own, for poking a runtime by hand.
//!
//! Prints its URLs, serves until Ctrl-C, and shows the ledger at `GET /ledger`. Permissions are
//! revoked with `POST /policy/revocations {"tenant": …, "actor": null, "subject": {"tool": …}}`.

use fake_tool::{Clock, World};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (world, _held) = World::start(Clock::default()).await?;
    println!("KILLPOINT_PROVIDER_URL={}", world.provider_url());
    println!("KILLPOINT_CONSUMERS_URL={}", world.consumers_url());
    println!("KILLPOINT_POLICY_URL={}", world.policy_url());
    println!("KILLPOINT_MODEL_URL={}", world.model_url());
    println!("ledger: {}/ledger", world.base_url());
    tokio::signal::ctrl_c().await?;
    world.shutdown().await;
    Ok(())
}
