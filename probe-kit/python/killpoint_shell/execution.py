"""One round of an operation's execution (CONTRACT.md §4): execute it, or reconcile it first.

`execute(shell, op_id)` reads the operation's durable state and does what that state calls for:
a new attempt (bound, policy, write-ahead `DISPATCHED`, the provider with the operation's own
key) or, when an earlier attempt may be out, a lookup first; a success is recorded with its
outbox in one transaction. It returns None when the operation needs nothing more, or how many
seconds to wait before the next round. Because it starts from durable state, running it again
(an engine replaying a step whose output it never recorded) repeats nothing: a `DISPATCHED` left
by a dead round is reconciled, a recorded success is left alone.

A task (§12) is decided by the model right before an attempt, and the kit meets "one decision per
task" (§12-3) with the design that makes the action's identity not depend on the decision:

  * the key is the operation's own id, whatever the model answers, so a lookup by it finds the
    effect of any decision that reached the provider;
  * `DISPATCHED` records the decided tool's name and kind (a lookup needs the tool) but, for a
    kind with lookup, not the decision's arguments: after a crash (or an unknown answer) the
    lookup decides. Found: that effect is the operation's, whichever decision made it, and no
    other decision is acted on. Not found: nothing acted on any decision, so the model is asked
    again and its new answer is the only one acted on;
  * a kind without lookup, or a safely repeatable one, has no lookup to tell what happened, so
    its `DISPATCHED` records the arguments too (§12-3's first design, the only one that works
    there): a safely repeatable call is repeated exactly as decided, a call without lookup
    pauses, and neither ever asks the model again.

A `409` with `"code": "idempotency_key_reused"` says an earlier request under this key applied an
effect with other arguments (§12-4): neither a failure nor a success, an unknown outcome that the
next round reconciles by lookup.

An agent framework that asks the model itself (its own model client, its own loop) passes its
decision in: `execute(shell, op_id, decided=(tool, arguments, call_id))` acts on that decision
where the kit would ask the model, and nowhere else — a round whose request may be out still
reconciles first, so a framework that re-asks after a crash still acts on one decision.
"""

import json
import time

import killpoint_probe

from .model import Call, decide
from .net import http, log, log_retry, quote, valid_effect

MAX_EXECUTION_ATTEMPTS = 5     # §4-11: a runtime MAY bound attempts; the shell stops at 5
EXECUTION_RETRY_BASE_S = 0.05  # pause before reconciling an UNKNOWN of this life, doubling
RETRY_LATER_S = 0.25           # policy service, lookup or model unreachable: try again after this
KINDS = ("idempotent_by_key", "non_idempotent_with_lookup", "non_idempotent_no_lookup", "safely_repeatable")
LOOKUP_KINDS = ("idempotent_by_key", "non_idempotent_with_lookup")
SETTLED_STATES = ("SUCCEEDED", "FAILED")
KEY_REUSED = "idempotency_key_reused"


def execute(shell, op_id, decided=None):
    op = shell.store.operation(op_id)
    if op is None:
        raise KeyError(f"expected an accepted operation, found no {op_id!r} in the store")
    if op["execution"] in SETTLED_STATES or op["paused"]:
        return None
    if op["execution"] == "INTENT_RECORDED" and _outrun(op):
        # A restore may have outrun it (§13-3, §13-4): its outcome is unknown until reconciled.
        with shell.store.tx() as db:
            db.execute("UPDATE operations SET execution = 'UNKNOWN' WHERE id = ?", (op["id"],))
            shell.audit(db, op["id"], "unknown", "restored: the lost host may have attempted it")
        return _reconcile(shell, shell.store.operation(op_id), decided)
    if op["execution"] == "INTENT_RECORDED":
        return _next_attempt(shell, op, None, decided)
    # UNKNOWN, or a DISPATCHED whose round died without its answer: the request may be out.
    return _reconcile(shell, op, decided)


def _outrun(op):
    """Whether a restore may have outrun the operation: in the backup unattempted (1), or accepted
    after the restore (2) with a kind that can find out; one of a kind without lookup accepted
    after it cannot be told from a new operation and goes ahead (CONTRACT.md section 13). A task
    not yet decided has no kind yet: its decision is made first."""
    kind = op["tool_kind"]
    if kind is None or not op["maybe_sent"]:
        return False
    return op["maybe_sent"] == 1 or kind != "non_idempotent_no_lookup"


def _next_attempt(shell, op, retry_reason, decided=None):
    """An attempt on the submitted call, or, for a task, on a decision the model makes now."""
    if op["task"] is None:
        return _attempt(shell, op, _recorded_call(op), retry_reason)
    if _bounded(shell, op):
        return None  # settled at the bound: no point asking the model
    task = json.loads(op["task"])
    call, why = decide(shell.env.model_url, task) if decided is None else framework_decision(task, *decided)
    if call is None:  # no decision: nothing acted on, nothing recorded; ask again later
        log(f"no decision for {op['id']}: {why}; asking again later")
        return shell.defer(op, RETRY_LATER_S)
    acting = "a new decision" if decided is None else f"the framework's decision ({call.decision})"
    if op["maybe_sent"] == 1 and op["execution"] == "INTENT_RECORDED" and call.kind == "non_idempotent_no_lookup":
        # In the backup unattempted, and no lookup can say what the lost host did (§13-4).
        shell.pause(op, "restored: the lost host may have acted on an earlier decision, and the tool has no lookup")
        return None
    if op["maybe_sent"] and op["execution"] == "INTENT_RECORDED" and _restored_effect(shell, op, call):
        return None  # the lost host's call on an earlier decision applied: that is the outcome
    return _attempt(shell, op, call, retry_reason and f"{retry_reason}; acting on {acting}")


def _restored_effect(shell, op, call):
    """A task a restore may have outrun (§13-3): the key is the operation's, not the decision's,
    so a lookup under it finds what the lost host's call applied, whatever decision it acted on.
    True when it found one (and recorded it); a kind without lookup, or no answer, finds none."""
    if call.kind not in ("idempotent_by_key", "non_idempotent_with_lookup"):
        return False
    try:
        status, body = http("GET", f"{shell.env.provider_url}/tools/{quote(call.tool)}"
                            f"/effects?idempotency_key={quote(op['idempotency_key'])}")
    except Exception:
        return False
    if status != 200 or not valid_effect(body):
        return False
    with shell.store.tx() as db:
        db.execute("UPDATE operations SET execution = 'UNKNOWN', tool_name = ?, tool_kind = ? WHERE id = ?",
                   (call.tool, call.kind, op["id"]))
        shell.audit(db, op["id"], "unknown", "restored: the lost host's call found by lookup")
    killpoint_probe.boundary("after_provider_success", op["id"], op["attempts"])
    shell.record(op["id"], body, op["attempts"], "found by lookup after a restore")
    return True


def _recorded_call(op):
    """The call as the store has it: the submitted one, or a task's decision as DISPATCHED
    recorded it (only for kinds whose recovery repeats it)."""
    return Call(op["tool_name"], op["tool_kind"], json.loads(op["arguments"]), None)


def framework_decision(task, tool, arguments, call_id):
    """A decision a framework's own model client made, as a Call of a tool the task offered."""
    kinds = {offered["name"]: offered["kind"] for offered in task["tools"]}
    if tool not in kinds or not isinstance(arguments, dict):
        return None, (f"expected a call of one of the offered tools {sorted(kinds)} with an object of"
                      f" arguments, found {tool!r} with {arguments!r}")[:500]
    return Call(tool, kinds[tool], arguments, call_id), None


def _reconcile(shell, op, decided=None):
    kind = op["tool_kind"]
    if kind == "non_idempotent_no_lookup":
        shell.pause(op, "no lookup for this tool; an operator must decide")
        return None
    if kind == "safely_repeatable":
        return _attempt(shell, op, _recorded_call(op), "outcome unknown; the tool is safely repeatable")
    try:
        status, body = http("GET", f"{shell.env.provider_url}/tools/{quote(op['tool_name'])}"
                            f"/effects?idempotency_key={quote(op['idempotency_key'])}")
    except Exception as error:
        log(f"lookup for {op['id']} failed: {error!r}; again later")
        return shell.defer(op, RETRY_LATER_S)
    if status == 200 and valid_effect(body):
        # Found: a lookup reads what happened, so no policy check is needed (§8).
        killpoint_probe.boundary("after_provider_success", op["id"], op["attempts"])
        shell.record(op["id"], body, op["attempts"], "found by lookup")
        return None
    if status != 404:
        log(f"lookup for {op['id']} answered {status} {body!r}; again later")
        return shell.defer(op, RETRY_LATER_S)
    with shell.store.tx() as db:
        db.execute("UPDATE operations SET execution = 'UNKNOWN' WHERE id = ?", (op["id"],))
        shell.audit(db, op["id"], "lookup_not_found", f"after {op['attempts']} attempt(s)")
    return _next_attempt(shell, op, "lookup found nothing", decided)


def _bounded(shell, op):
    """Settles `op` (True) when it has had all its attempts (§4-11)."""
    if op["attempts"] < MAX_EXECUTION_ATTEMPTS:
        return False
    if op["tool_kind"] in LOOKUP_KINDS:  # only after a lookup found nothing
        shell.fail(op, f"no effect after {op['attempts']} attempts", "attempts_exhausted")
    else:
        shell.pause(op, f"outcome still unknown after {op['attempts']} attempts")
    return True


def _attempt(shell, op, call, retry_reason):
    """A new attempt (§4 steps 2-7) on `call`; `retry_reason` says why, when it is not the first."""
    n = op["attempts"] + 1
    if _bounded(shell, op):
        return None
    verdict = shell.check_policy(op, tool=call.tool)
    if verdict is None:
        return shell.defer(op, RETRY_LATER_S)
    if verdict is not True:
        if call.kind == "safely_repeatable" and (op["attempts"] > 0 or op["maybe_sent"]):
            # An earlier attempt (the lost host's, after a restore) may have applied, and
            # without a lookup nobody can know: FAILED could be untrue (§4-3), so the refusal
            # pauses the operation instead.
            shell.pause(op, f"policy: {verdict}; earlier attempt's outcome unknown")
        else:
            shell.fail(op, f"policy: {verdict}", "policy_refused")
        killpoint_probe.boundary("after_policy_revocation", op["id"], n)
        return None
    killpoint_probe.boundary("before_dispatch", op["id"], n)
    _dispatch_ahead(shell, op, call, n)
    if retry_reason is not None:
        log_retry("execution", op["id"], n, retry_reason)
    try:
        status, body = http("POST", f"{shell.env.provider_url}/tools/{quote(call.tool)}",
                            {"arguments": call.arguments}, key=op["idempotency_key"])
    except Exception as error:  # refused, dropped, timed out, truncated: no answer
        status, body = None, repr(error)
    if status is not None and 200 <= status < 300 and valid_effect(body):
        killpoint_probe.boundary("after_provider_success", op["id"], n)
        shell.record(op["id"], body, n, f"attempt {n}")
        return None
    key_reused = status == 409 and isinstance(body, dict) and body.get("code") == KEY_REUSED
    if status is not None and 400 <= status < 500 and not key_reused:
        reason = body.get("error") if isinstance(body, dict) else None
        shell.fail(op, f"provider: {reason or body or status}", "failed")
        return None
    # 5xx, no answer, a 2xx that could not be read, or this key's earlier effect standing (§12-4):
    # the effect may or may not have happened. Not a failure, not permission to retry: reconcile
    # after a pause.
    pause = EXECUTION_RETRY_BASE_S * 2 ** (n - 1)
    with shell.store.tx() as db:
        db.execute("UPDATE operations SET execution = 'UNKNOWN', next_at = ? WHERE id = ?",
                   (time.time() + pause, op["id"]))
        shell.audit(db, op["id"], "unknown", f"attempt {n}: {status} {body!r}"[:500])
    return pause


def _dispatch_ahead(shell, op, call, n):
    """Write-ahead: `DISPATCHED`, with the tool it calls, durable before the provider sees
    anything. A task's decided arguments are kept only where recovery repeats them (the module's
    docstring): for a kind with lookup, a crash forgets them and the lookup decides."""
    keep = op["task"] is None or call.kind not in LOOKUP_KINDS
    arguments = json.dumps(call.arguments) if keep else None
    decided = "" if call.decision is None else f", decided by the model ({call.decision})"
    with shell.store.tx() as db:
        db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ?, tool_name = ?, tool_kind = ?,"
                   " arguments = ? WHERE id = ?", (n, call.tool, call.kind, arguments, op["id"]))
        shell.audit(db, op["id"], "dispatched", f"attempt {n}: {call.tool}{decided}")
