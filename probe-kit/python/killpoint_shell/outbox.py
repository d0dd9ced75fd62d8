"""The delivery outbox (CONTRACT.md §6): one row per destination written in the transaction that
records the success (§4-5), each sent with its own stable key, `SENT` durable before the send (so
that a crash means a re-send on start, never a loss), backoff from the base, a bound, and dead
letters. A delivery never calls the tool (§6-6)."""

import json
import time

import killpoint_probe

from .net import http, log_retry, quote
from .store import audit


def write_success(db, op, effect, how):
    """Inside the caller's transaction: SUCCEEDED with the provider's result, and one PENDING
    delivery per destination, with its audit line."""
    db.execute("UPDATE operations SET execution = 'SUCCEEDED', paused = 0,"
               " provider_ref = ?, result = ?, failure = NULL WHERE id = ?",
               (effect["provider_ref"], json.dumps(effect["result"]), op["id"]))
    for position, destination in enumerate(json.loads(op["destinations"])):
        db.execute("INSERT INTO deliveries (operation_id, position, destination, state,"
                   " idempotency_key) VALUES (?, ?, ?, 'PENDING', ?)",
                   (op["id"], position, destination, f"{op['id']}:{destination}"))
    audit(db, op["id"], "succeeded", f"provider_ref {effect['provider_ref']} ({how})")


def deliver(shell, op, delivery):
    """One send of one delivery."""
    destination = delivery["destination"]
    key = (op["id"], destination)
    where = " WHERE operation_id = ? AND destination = ?"
    verdict = shell.check_policy(op, destination=destination)
    if verdict is None:
        with shell.store.tx() as db:
            db.execute("UPDATE deliveries SET next_at = ?" + where, (time.time() + shell.retry_later_s, *key))
        return
    if verdict is not True:
        with shell.store.tx() as db:
            db.execute("UPDATE deliveries SET state = 'DEAD_LETTERED', last_error = ?" + where,
                       (f"policy: {verdict}", *key))
            audit(db, op["id"], "delivery_refused", f"{destination}: policy: {verdict}")
        return
    n = delivery["attempts"] + 1
    with shell.store.tx() as db:  # SENT is durable before the send: re-sent after a crash
        db.execute("UPDATE deliveries SET state = 'SENT', attempts = ?" + where, (n, *key))
        audit(db, op["id"], "delivery_sent", f"{destination}, send {n}")
    if n > 1:
        why = delivery["last_error"] or "the previous send's answer was lost with its incarnation"
        log_retry("delivery", op["id"], n, why, destination=destination)
    event = {"operation_id": op["id"], "destination": destination,
             "provider_ref": op["provider_ref"], "result": json.loads(op["result"])}
    try:
        status, body = http("POST", f"{shell.env.consumers_url}/{quote(destination)}/events",
                            event, key=delivery["idempotency_key"])
    except Exception as error:
        status, body = None, repr(error)
    if status is not None and 200 <= status < 300:
        killpoint_probe.boundary("after_delivery_send", op["id"], n, destination)
        with shell.store.tx() as db:
            db.execute("UPDATE deliveries SET state = 'ACKED', last_error = NULL" + where, key)
            audit(db, op["id"], "delivery_acked", destination)
        return
    error = f"send {n}: {status} {body!r}"[:500]
    with shell.store.tx() as db:
        if n >= shell.env.delivery_max_attempts:
            db.execute("UPDATE deliveries SET state = 'DEAD_LETTERED', last_error = ?" + where, (error, *key))
            audit(db, op["id"], "delivery_dead_lettered", f"{destination}: {error}")
        else:  # back to PENDING: nothing is in flight; retry after base x 2^(n-1)
            db.execute("UPDATE deliveries SET state = 'PENDING', last_error = ?, next_at = ?" + where,
                       (error, time.time() + shell.env.retry_base_s * 2 ** (n - 1), *key))
            audit(db, op["id"], "delivery_failed", f"{destination}: {error}")
