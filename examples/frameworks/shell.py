"""What the framework examples share: the contract's API, store and deliveries, and the steps of
an operation written the corrected way.

The API, the submission store, the audit trail and the delivery outbox are the Python example
runtime's (examples/python-runtime/runtime.py), reused as they are: they are not what a workflow
engine changes. What the engine changes is how an operation is executed: as a workflow (DBOS) or
a graph (LangGraph) whose steps the engine records and, after a crash, replays. `FrameworkWorker`
hands each operation that needs work to the engine; `Steps` holds the bodies of the corrected
steps, which examples/langgraph/corrected.py and examples/dbos/corrected.py wrap in their
engine's step construct. The naive versions write their own steps, the way a user would.

The three rules a replayed step must keep (docs/frameworks.md says why):
  * the provider key comes from the operation id, never from the step's own run (a replayed step
    sends the same key);
  * a step that may be a replay of one that sent a request looks the effect up before sending
    anything (the engine re-runs a step whose output it did not record: the request may be out);
  * the policy check lives in the step that records the dispatch, so each attempt is authorised
    by the check made just before it, in the incarnation that makes it.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-runtime"))
import runtime  # noqa: E402  (the contract's API, store and deliveries)
from runtime import audit, check_policy, killpoint_probe, quote, valid_effect  # noqa: E402

SETTLED = "settled"      # the operation needs nothing more from the engine
LATER = "later"          # no answer (policy service or lookup): try again after a pause
UNKNOWN = "unknown"      # the request may or may not have taken effect: reconcile first
FOUND = "found"          # a lookup found the effect
DISPATCHED = "dispatched"
SUCCESS = "success"


def pause_before(outcome, attempt):
    """How long the engine waits before it goes round again (its own durable sleep)."""
    if outcome == LATER:
        return runtime.RETRY_LATER_S
    return runtime.EXECUTION_RETRY_BASE_S * 2 ** max(0, attempt - 1)


class FrameworkWorker(runtime.Worker):
    """The example runtime's worker, with each operation's execution handed to the engine.

    `execute(op_id)` runs the operation's workflow or graph until it returns; deliveries stay the
    outbox's (they are derived from the recorded success, on every replay)."""

    execute = None  # set by each example: a function of the operation id

    def attempt(self, op):
        self.run_in_engine(op)

    def reconcile(self, op):
        self.run_in_engine(op)

    def run_in_engine(self, op):
        type(self).execute(op["id"])
        after = self.store.operation(op["id"])
        if after["execution"] in ("INTENT_RECORDED", "UNKNOWN", "DISPATCHED") and not after["paused"]:
            # The engine gave up without settling it (the naive versions can): look again later
            # rather than spin.
            with self.store.tx() as db:
                db.execute("UPDATE operations SET execution = 'UNKNOWN', next_at = ? WHERE id = ?",
                           (time.time() + runtime.RETRY_LATER_S, op["id"]))


class Steps:
    """The corrected steps. Each reads the operation's durable state first, so that running it
    again (a replay) does what the state calls for, not what the first run did."""

    def __init__(self, worker):
        self.worker, self.cfg, self.store = worker, worker.cfg, worker.store

    def dispatch(self, op_id):
        """Reconcile if an earlier attempt may have been sent; then the bound, the policy check
        and the write-ahead `DISPATCHED`, in this one step."""
        op = self.store.operation(op_id)
        if op["execution"] in ("SUCCEEDED", "FAILED") or op["paused"]:
            return {"outcome": SETTLED}
        if op["attempts"] > 0 and op["execution"] in ("UNKNOWN", "DISPATCHED"):
            # An earlier attempt's request may be out (a crash, a 5xx, a timeout): find out first.
            kind = op["tool_kind"]
            if kind == "non_idempotent_no_lookup":
                self.worker.pause(op, "no lookup for this tool; an operator must decide")
                return {"outcome": SETTLED}
            if kind in runtime.LOOKUP_KINDS:
                try:
                    status, body = runtime.http(
                        "GET", f"{self.cfg.provider}/tools/{quote(op['tool_name'])}"
                        f"/effects?idempotency_key={quote(op['idempotency_key'])}")
                except Exception as error:
                    runtime.log(f"lookup for {op_id} failed: {error!r}; again later")
                    return {"outcome": LATER, "attempt": op["attempts"]}
                if status == 200 and valid_effect(body):
                    killpoint_probe.boundary("after_provider_success", op_id, op["attempts"])
                    return {"outcome": FOUND, "effect": body, "attempt": op["attempts"]}
                if status != 404:
                    runtime.log(f"lookup for {op_id} answered {status} {body!r}; again later")
                    return {"outcome": LATER, "attempt": op["attempts"]}
                with self.store.tx() as db:
                    audit(db, op_id, "lookup_not_found", f"after {op['attempts']} attempt(s)")
            # safely_repeatable, or not found: a new attempt, with the same key.
        n = op["attempts"] + 1
        if op["attempts"] >= runtime.MAX_EXECUTION_ATTEMPTS:
            if op["tool_kind"] in runtime.LOOKUP_KINDS:
                self.worker.fail(op, f"no effect after {op['attempts']} attempts", "attempts_exhausted")
            else:
                self.worker.pause(op, f"outcome still unknown after {op['attempts']} attempts")
            return {"outcome": SETTLED}
        verdict = check_policy(self.cfg, op, tool=op["tool_name"])
        if verdict is None:
            return {"outcome": LATER, "attempt": op["attempts"]}
        if verdict is not True:
            if op["tool_kind"] == "safely_repeatable" and op["attempts"] > 0:
                self.worker.pause(op, f"policy: {verdict}; earlier attempt's outcome unknown")
            else:
                self.worker.fail(op, f"policy: {verdict}", "policy_refused")
            killpoint_probe.boundary("after_policy_revocation", op_id, n)
            return {"outcome": SETTLED}
        killpoint_probe.boundary("before_dispatch", op_id, n)
        with self.store.tx() as db:  # write-ahead, in the step that checked the policy
            db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ? WHERE id = ?",
                       (n, op_id))
            audit(db, op_id, "dispatched", f"attempt {n}")
        return {"outcome": DISPATCHED, "attempt": n}

    def call(self, op_id, attempt):
        """Sends attempt `attempt` with the operation's own key — unless this is a replay."""
        op = self.store.operation(op_id)
        if op["execution"] != "DISPATCHED" or op["attempts"] != attempt:
            # A replay: an earlier incarnation ran this step (start-up made its DISPATCHED
            # UNKNOWN) and may have sent the request. Never send it blind: dispatch reconciles.
            return {"outcome": UNKNOWN, "attempt": attempt}
        try:
            status, body = runtime.http(
                "POST", f"{self.cfg.provider}/tools/{quote(op['tool_name'])}",
                {"arguments": json.loads(op["arguments"])}, key=op["idempotency_key"])
        except Exception as error:
            status, body = None, repr(error)
        if status is not None and 200 <= status < 300 and valid_effect(body):
            killpoint_probe.boundary("after_provider_success", op_id, attempt)
            return {"outcome": SUCCESS, "effect": body, "attempt": attempt}
        if status is not None and 400 <= status < 500:
            reason = body.get("error") if isinstance(body, dict) else None
            self.worker.fail(op, f"provider: {reason or body or status}", "failed")
            return {"outcome": SETTLED}
        with self.store.tx() as db:
            db.execute("UPDATE operations SET execution = 'UNKNOWN' WHERE id = ?", (op_id,))
            audit(db, op_id, "unknown", f"attempt {attempt}: {status} {body!r}"[:500])
        return {"outcome": UNKNOWN, "attempt": attempt}

    def record(self, op_id, effect, attempt, how):
        """SUCCEEDED, the result and the outbox in one transaction; nothing if a replay finds
        them committed already."""
        record(self.worker, op_id, effect, attempt, how)
        return {"outcome": SETTLED}


def record(worker, op_id, effect, attempt, how):
    """The transactional outbox (CONTRACT.md 4-6), idempotent so that a replay may run it again."""
    op = worker.store.operation(op_id)
    if op["execution"] == "SUCCEEDED":
        return
    with worker.store.tx() as db:
        runtime.write_success(db, op, effect, how)
    killpoint_probe.boundary("after_result_write", op_id, attempt)
