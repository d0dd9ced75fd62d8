"""The killpoint contract as a shell around an execution engine (standard library only).

Everything CONTRACT.md asks of a runtime that is not how an operation's execution runs: the API
(§3), the fenced store and client (§9), the policy client (§8), the delivery outbox (§6), the
retry lines (§11), the ready line and the probe (§2, §7, from `killpoint_probe`). What is left to
an engine is to run `execute(op_id)` until it says the operation is settled:

    import killpoint_shell as ks

    @engine.step                        # a durable step of the engine's own
    def round_of(op_id):
        return ks.execute(op_id)        # None: settled; else seconds to wait before the next round

    @engine.workflow
    def operation(op_id):
        while (pause := round_of(op_id)) is not None:
            engine.sleep(pause)         # the engine's own durable sleep

    ks.serve(run=lambda op_id: engine.run(operation, op_id, workflow_id=op_id),
             start=engine.launch)       # after the ready line: recovery may announce boundaries

`execute` is safe to run again after any crash (an engine replays a step whose output it did not
record): it starts from the operation's durable state, so a request that may be out is looked up
before anything is sent, with the same key. Without `run`, the shell runs the rounds itself.
"""

import threading
import time
import traceback
from http.server import ThreadingHTTPServer

import killpoint_probe

from . import net, outbox
from .api import handler
from .execution import LOOKUP_KINDS, MAX_EXECUTION_ATTEMPTS, RETRY_LATER_S, SETTLED_STATES
from .execution import execute as _execute
from .net import check_policy, http, log, log_retry, quote, valid_effect
from .store import Store, audit, check_data_dir, recover

__all__ = ["serve", "execute", "running", "Shell", "http", "log", "log_retry", "quote", "valid_effect",
           "check_policy", "check_data_dir", "LOOKUP_KINDS", "MAX_EXECUTION_ATTEMPTS", "RETRY_LATER_S"]

_running = None


def execute(op_id, decided=None):
    """One round of `op_id`'s execution in the running shell; None once nothing more is needed,
    else the seconds to wait before the next round. A task acts on `decided` (tool, arguments,
    call id: a framework's own model's decision) where the kit would ask the model itself."""
    return _execute(running(), op_id, decided)


def running():
    """The shell `serve` started (its `store`, `env`, and the steps a hand-written engine uses)."""
    if _running is None:
        raise RuntimeError("expected killpoint_shell.serve() to have started, found no running shell")
    return _running


class Shell:
    """The durable state and the operations' settling steps, shared by the API and the worker."""

    retry_later_s = RETRY_LATER_S
    audit = staticmethod(audit)

    def __init__(self, env, run=None):
        self.env, self.run = env, run
        self.store = Store(env.data_dir, env.incarnation)
        self.wake = threading.Event()  # set by the API when new work arrives

    def check_policy(self, op, **subject):
        return check_policy(self.env.policy_url, op, **subject)

    def record(self, op_id, effect, attempt, how):
        """SUCCEEDED, the result and the outbox in one transaction (§4-5); nothing if a replay finds
        them committed already. Announce `after_provider_success` before it."""
        with self.store.tx() as db:
            op = db.execute("SELECT * FROM operations WHERE id = ?", (op_id,)).fetchone()
            if op["execution"] == "SUCCEEDED":
                return
            outbox.write_success(db, op, effect, how)
        killpoint_probe.boundary("after_result_write", op_id, attempt)

    def fail(self, op, reason, event):
        with self.store.tx() as db:
            db.execute("UPDATE operations SET execution = 'FAILED', paused = 0, failure = ? WHERE id = ?",
                       (reason, op["id"]))
            audit(db, op["id"], event, reason)

    def pause(self, op, why):
        with self.store.tx() as db:
            db.execute("UPDATE operations SET execution = 'UNKNOWN', paused = 1 WHERE id = ?", (op["id"],))
            audit(db, op["id"], "paused", why)

    def defer(self, op, seconds):
        with self.store.tx() as db:
            db.execute("UPDATE operations SET next_at = ? WHERE id = ?", (time.time() + seconds, op["id"]))
        return seconds

    def work(self):
        """The worker: the first due piece of work, forever, in submission order; for one
        operation its execution before its deliveries, those in the order of `destinations`."""
        while True:
            try:
                wait = self._step()
            except Exception:
                log("worker step failed:\n" + traceback.format_exc())
                wait = RETRY_LATER_S
            if wait:
                self.wake.wait(wait)
                self.wake.clear()

    def _step(self):
        t = time.time()
        with self.store.read() as db:
            op = db.execute("SELECT * FROM operations WHERE paused = 0 AND next_at <= ? AND execution IN"
                            " ('INTENT_RECORDED', 'UNKNOWN', 'DISPATCHED') ORDER BY seq LIMIT 1", (t,)).fetchone()
            delivery = db.execute(
                "SELECT d.*, o.seq FROM deliveries d JOIN operations o ON o.id = d.operation_id"
                " WHERE d.state IN ('PENDING', 'SENT') AND d.next_at <= ? ORDER BY o.seq, d.position LIMIT 1",
                (t,)).fetchone()
            later = db.execute(
                "SELECT MIN(n) FROM (SELECT next_at AS n FROM operations WHERE paused = 0 AND execution IN"
                " ('INTENT_RECORDED', 'UNKNOWN', 'DISPATCHED') UNION ALL"
                " SELECT next_at FROM deliveries WHERE state IN ('PENDING', 'SENT'))").fetchone()[0]
        if op is not None and (delivery is None or op["seq"] <= delivery["seq"]):
            self._run(op["id"])
            return 0
        if delivery is not None:
            outbox.deliver(self, self.store.operation(delivery["operation_id"]), delivery)
            return 0
        return 1.0 if later is None else min(1.0, max(0.001, later - time.time()))

    def _run(self, op_id):
        if self.run is None:
            _execute(self, op_id)
            return
        self.run(op_id)
        after = self.store.operation(op_id)
        if after["execution"] not in SETTLED_STATES and not after["paused"] and after["next_at"] <= time.time():
            # The engine returned without settling it (a naive engine can): look again later,
            # as after an unknown outcome, rather than spin.
            with self.store.tx() as db:
                state = "UNKNOWN" if after["execution"] == "DISPATCHED" else after["execution"]
                db.execute("UPDATE operations SET execution = ?, next_at = ? WHERE id = ?",
                           (state, time.time() + RETRY_LATER_S, op_id))


def serve(run=None, start=None, shell_class=Shell):
    """Serves the contract, forever. `run(op_id)` runs an operation's execution in an engine until
    `execute` says it is settled (default: the shell's own rounds); `start()` is called once the
    ready line is out, before the worker begins (an engine's launch and recovery go there); a
    `shell_class` of one's own schedules the work differently (its `work`)."""
    global _running
    env = killpoint_probe.Env.from_environ()
    # First: a `shell_class` or an engine that writes in the data dir would make a missing one anew.
    check_data_dir(env.data_dir)
    net.INCARNATION = env.incarnation
    shell = shell_class(env, run)
    recover(shell.store)
    _running = shell
    killpoint_probe.connect(env.probe_socket)  # connected before the ready line, as promised
    server = ThreadingHTTPServer(env.listen, handler(shell))  # bound and listening once made
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="api", daemon=True).start()
    # Only from here on are boundaries announced: the engine and the worker start after the line.
    killpoint_probe.ready((env.listen[0], server.server_address[1]))
    log(f"ready on port {server.server_address[1]} (probe: {killpoint_probe.connected()})")
    if start is not None:
        start()
    shell.work()
