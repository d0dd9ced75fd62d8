//! A restore (`--crash restore`): the machine is lost at the kill and the runtime rebuilt on
//! another host from a backup that lags. The harness plays the operator's rebuild step — the
//! backup written into a new data dir, the next incarnation started there with
//! `KILLPOINT_RESTORED` set — and the clients, who resubmit what the restored runtime no longer
//! knows. The world keeps everything it saw.

use super::host::{Host, RESTORED_VARIABLE};
use super::record::Happening;
use super::state::Driver;
use crate::model::crash::Lag;
use crate::run::incarnation::Launch;

impl Driver<'_> {
    /// After the kill of `killed`: its data dir is lost, and the backup `lag` before the kill is
    /// written into a new one the next incarnation starts on. `Err` names what the harness could
    /// not do.
    pub(super) fn restore_from_backup(&mut self, killed: u32, lag: Lag, root: &std::path::Path) -> Result<(), String> {
        let host = root.join(format!("host-{}", killed + 1));
        let data = host.join("data");
        let Some(model) = self.traced.as_ref().and_then(|t| t.power_loss()) else {
            return Err("a restore needs the tracer's record of what was synced, and this run has none".to_owned());
        };
        let restored = model
            .restore_backup(lag, &data)
            .map_err(|e| format!("killpoint could not restore a backup into {}: {e}", data.display()))?;
        self.mark(Happening::Restored {
            incarnation: killed,
            lag,
            back: restored.back,
            age_ms: restored.age.as_millis() as u64,
            path: data.display().to_string(),
            lost: restored.lost,
        });
        self.host = Some(Host { data, signal: Some(format!("restore-{}", killed + 1)) });
        Ok(())
    }

    /// The launch of the next start: on the current host's data dir, with the restore signal on
    /// the first start after a restore (taken by this call). `None`: the launch as it was.
    pub(super) fn on_host<'l>(&mut self, launch: &Launch<'l>) -> Option<Launch<'l>> {
        let host = self.host.as_mut()?;
        let mut env: Vec<(String, String)> = launch
            .env
            .iter()
            .filter(|(name, _)| name != "KILLPOINT_DATA_DIR" && name != RESTORED_VARIABLE)
            .cloned()
            .collect();
        env.push(("KILLPOINT_DATA_DIR".to_owned(), host.data.display().to_string()));
        if let Some(signal) = host.signal.take() {
            env.push((RESTORED_VARIABLE.to_owned(), signal));
        }
        Some(Launch {
            target: launch.target,
            env,
            logs: launch.logs,
            probe: launch.probe,
            ready_timeout: launch.ready_timeout,
        })
    }

    /// A client that had an operation accepted and now hears `404` for it submits it again, as a
    /// client retrying would: the restored runtime forgot it with everything after its backup.
    pub(super) async fn resubmit_forgotten(&mut self, id: &str, answer: String) {
        let op = self.scenario.operation(id).expect("accepted operations are the scenario's");
        let incarnation = self.incarnation.number;
        let status = self.client.submit(op).await;
        let status = match status {
            Ok(status) => status.to_string(),
            Err(e) => format!("unanswered: {e}"),
        };
        self.mark(Happening::ResubmittedAfterRestore { operation: id.to_owned(), incarnation, answer, status });
    }

    /// Whether a `404` for an accepted operation is the restore's doing (the backup predates it),
    /// not the runtime's: only right after a restore, before anything else was submitted.
    pub(super) fn restored(&self) -> bool {
        self.host.is_some()
    }
}
