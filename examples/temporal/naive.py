#!/usr/bin/env python3
"""A Temporal workflow as a killpoint runtime, written the way Temporal's docs lead to (expected
to FAIL at_most_once).

    workflow Operation:  call_tool (activity, default retry policy) --> record (activity)

The workflow is durable in the Temporal server beside the worker, and the server retries an
activity whose worker went away: its start-to-close timeout passes and it is scheduled again, on
whichever worker polls next — the restarted one. The activity sends the provider a fresh
Idempotency-Key each time (uuid4) and never looks first, so a kill after the provider applied the
call (`after_dispatch`) or after its answer (`after_provider_success`) applies it twice.
"""

import json
import uuid
from datetime import timedelta

from engine import Engine, ks
import killpoint_probe
from temporalio import activity, workflow


class ProviderError(Exception):
    pass


@activity.defn
def call_tool(op_id):
    ks.log(f"{op_id}: call_tool, activity attempt {activity.info().attempt}")
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
        raise ProviderError(f"provider answered {status}")  # Temporal retries the activity
    killpoint_probe.boundary("after_provider_success", op_id, n)
    return {"effect": body, "attempt": n}


@activity.defn
def record(op_id, answer):
    ks.running().record(op_id, answer["effect"], answer["attempt"], f"attempt {answer['attempt']}")


@workflow.defn
class Operation:
    @workflow.run
    async def run(self, op_id):
        answer = await workflow.execute_activity(call_tool, op_id, start_to_close_timeout=timedelta(seconds=3))
        if answer is not None:
            await workflow.execute_activity(record, args=[op_id, answer], start_to_close_timeout=timedelta(seconds=3))


if __name__ == "__main__":
    Engine(Operation, [call_tool, record]).serve()
