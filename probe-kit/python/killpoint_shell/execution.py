"""One round of an operation's execution (CONTRACT.md §4): execute it, or reconcile it first.

`execute(shell, op_id)` reads the operation's durable state and does what that state calls for:
a new attempt (bound, policy, write-ahead `DISPATCHED`, the provider with the operation's own
key) or, when an earlier attempt may be out, a lookup first; a success is recorded with its
outbox in one transaction. It returns None when the operation needs nothing more, or how many
seconds to wait before the next round. Because it starts from durable state, running it again
(an engine replaying a step whose output it never recorded) repeats nothing: a `DISPATCHED` left
by a dead round is reconciled, a recorded success is left alone.
"""

import json
import time

import killpoint_probe

from .net import http, log, log_retry, quote, valid_effect

MAX_EXECUTION_ATTEMPTS = 5     # §4-11: a runtime MAY bound attempts; the shell stops at 5
EXECUTION_RETRY_BASE_S = 0.05  # pause before reconciling an UNKNOWN of this life, doubling
RETRY_LATER_S = 0.25           # policy service or lookup unreachable: try again after this
KINDS = ("idempotent_by_key", "non_idempotent_with_lookup", "non_idempotent_no_lookup", "safely_repeatable")
LOOKUP_KINDS = ("idempotent_by_key", "non_idempotent_with_lookup")
SETTLED_STATES = ("SUCCEEDED", "FAILED")


def execute(shell, op_id):
    op = shell.store.operation(op_id)
    if op is None:
        raise KeyError(f"expected an accepted operation, found no {op_id!r} in the store")
    if op["execution"] in SETTLED_STATES or op["paused"]:
        return None
    if op["execution"] == "INTENT_RECORDED":
        return _attempt(shell, op, None)
    # UNKNOWN, or a DISPATCHED whose round died without its answer: the request may be out.
    return _reconcile(shell, op)


def _reconcile(shell, op):
    kind = op["tool_kind"]
    if kind == "non_idempotent_no_lookup":
        shell.pause(op, "no lookup for this tool; an operator must decide")
        return None
    if kind == "safely_repeatable":
        return _attempt(shell, op, "outcome unknown; the tool is safely repeatable")
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
    return _attempt(shell, op, "lookup found nothing")


def _attempt(shell, op, retry_reason):
    """A new attempt (§4 steps 2-7); `retry_reason` says why, when it is not the first."""
    n = op["attempts"] + 1
    if op["attempts"] >= MAX_EXECUTION_ATTEMPTS:
        if op["tool_kind"] in LOOKUP_KINDS:  # only after a lookup found nothing
            shell.fail(op, f"no effect after {op['attempts']} attempts", "attempts_exhausted")
        else:
            shell.pause(op, f"outcome still unknown after {op['attempts']} attempts")
        return None
    verdict = shell.check_policy(op, tool=op["tool_name"])
    if verdict is None:
        return shell.defer(op, RETRY_LATER_S)
    if verdict is not True:
        if op["tool_kind"] == "safely_repeatable" and op["attempts"] > 0:
            # An earlier attempt may have applied, and without a lookup nobody can know:
            # FAILED could be untrue (§4-11), so the refusal pauses the operation instead.
            shell.pause(op, f"policy: {verdict}; earlier attempt's outcome unknown")
        else:
            shell.fail(op, f"policy: {verdict}", "policy_refused")
        killpoint_probe.boundary("after_policy_revocation", op["id"], n)
        return None
    killpoint_probe.boundary("before_dispatch", op["id"], n)
    with shell.store.tx() as db:  # write-ahead: durable before the provider sees anything
        db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ? WHERE id = ?", (n, op["id"]))
        shell.audit(db, op["id"], "dispatched", f"attempt {n}")
    if retry_reason is not None:
        log_retry("execution", op["id"], n, retry_reason)
    try:
        status, body = http("POST", f"{shell.env.provider_url}/tools/{quote(op['tool_name'])}",
                            {"arguments": json.loads(op["arguments"])}, key=op["idempotency_key"])
    except Exception as error:  # refused, dropped, timed out, truncated: no answer
        status, body = None, repr(error)
    if status is not None and 200 <= status < 300 and valid_effect(body):
        killpoint_probe.boundary("after_provider_success", op["id"], n)
        shell.record(op["id"], body, n, f"attempt {n}")
        return None
    if status is not None and 400 <= status < 500:
        reason = body.get("error") if isinstance(body, dict) else None
        shell.fail(op, f"provider: {reason or body or status}", "failed")
        return None
    # 5xx, no answer, or a 2xx that could not be read: the effect may or may not have happened.
    # Not a failure, not permission to retry: reconcile after a pause.
    pause = EXECUTION_RETRY_BASE_S * 2 ** (n - 1)
    with shell.store.tx() as db:
        db.execute("UPDATE operations SET execution = 'UNKNOWN', next_at = ? WHERE id = ?",
                   (time.time() + pause, op["id"]))
        shell.audit(db, op["id"], "unknown", f"attempt {n}: {status} {body!r}"[:500])
    return pause
