#!/usr/bin/env python3
"""A Restate service as a killpoint runtime, written the way Restate's docs lead to (expected to
FAIL at_most_once).

    Operation/run(op_id):  ctx.run(call_tool) --> ctx.run(record)

The invocation is durable in the Restate server beside the worker, and the server retries an
invocation whose worker went away: it replays the journal on the restarted worker (the same
invocation id), and a `ctx.run` whose result it had not journaled runs again. `call_tool` sends
the provider a fresh Idempotency-Key each time (uuid4) and never looks first, so a kill after the
provider applied the call (`after_dispatch`) or after its answer (`after_provider_success`)
applies it twice.
"""

import json
import uuid

import killpoint_probe
import restate
from engine import Engine, ks, service

operation = service()


def call_tool(op_id, invocation):
    ks.log(f"{op_id}: call_tool in invocation {invocation}")
    op = ks.running().store.operation(op_id)
    n = op["attempts"] + 1
    if n == 1:
        verdict = ks.running().check_policy(op, tool=op["tool_name"])
        if verdict is not True:
            ks.running().fail(op, f"policy: {verdict}", "policy_refused")
            return None
    killpoint_probe.boundary("before_dispatch", op_id, n)
    with ks.running().store.tx() as db:
        db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ? WHERE id = ?", (n, op_id))
        ks.running().audit(db, op_id, "dispatched", f"attempt {n}")
    status, body = ks.http("POST", f"{ks.running().env.provider_url}/tools/{ks.quote(op['tool_name'])}",
                           {"arguments": json.loads(op["arguments"])}, key=str(uuid.uuid4()))
    if 400 <= status < 500:
        ks.running().fail(op, f"provider: {body}", "failed")
        return None
    if not (200 <= status < 300 and ks.valid_effect(body)):
        raise RuntimeError(f"provider answered {status}")  # Restate retries the step
    killpoint_probe.boundary("after_provider_success", op_id, n)
    return {"effect": body, "attempt": n}


def record(op_id, answer):
    ks.running().record(op_id, answer["effect"], answer["attempt"], f"attempt {answer['attempt']}")


@operation.handler()
async def run(ctx: restate.Context, op_id: str) -> None:
    answer = await ctx.run_typed("call_tool", call_tool, restate.RunOptions(), op_id, ctx.request().id)
    if answer is not None:
        await ctx.run_typed("record", record, restate.RunOptions(), op_id, answer)


if __name__ == "__main__":
    Engine(operation).serve()
