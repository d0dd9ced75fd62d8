#!/usr/bin/env python3
"""A DBOS workflow as a killpoint runtime, written the way a typical user writes it (expected to
FAIL at_most_once).

    authorize (step) --> call_tool (step, retries_allowed) --> record (step)

The workflow is durable (DBOS recovers it after a crash) and the tool call is a DBOS step with
DBOS's own retries. Two habits make it unsafe:
  * `call_tool` makes a fresh Idempotency-Key each time it runs (uuid4), so a provider cannot
    recognise the replay of a call it already applied;
  * a step whose output DBOS did not record (a crash before the step returned) is run again from
    the top on recovery, and it sends the request again — without looking first; DBOS's retries
    do the same after an exception.
A crash after the provider applied the call (`after_dispatch`) or after its answer arrived
(`after_provider_success`) therefore applies it twice.
"""

import json
import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_probe  # noqa: E402
import killpoint_shell as ks  # noqa: E402
from dbos import DBOS, SetWorkflowID  # noqa: E402



class ProviderError(Exception):
    pass


@DBOS.step()
def authorize(op_id):
    op = ks.running().store.operation(op_id)
    verdict = ks.running().check_policy(op, tool=op["tool_name"])
    if verdict is not True:
        ks.running().fail(op, f"policy: {verdict}", "policy_refused")
        killpoint_probe.boundary("after_policy_revocation", op_id, op["attempts"] + 1)
        return False
    return True


@DBOS.step(retries_allowed=True, max_attempts=3, interval_seconds=0.05)
def call_tool(op_id):
    op = ks.running().store.operation(op_id)
    n = op["attempts"] + 1
    killpoint_probe.boundary("before_dispatch", op_id, n)
    with ks.running().store.tx() as db:
        db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ? WHERE id = ?",
                   (n, op_id))
        ks.running().audit(db, op_id, "dispatched", f"attempt {n}")
    status, body = ks.http(
        "POST", f"{ks.running().env.provider_url}/tools/{ks.quote(op['tool_name'])}",
        {"arguments": json.loads(op["arguments"])}, key=str(uuid.uuid4()))
    if 400 <= status < 500:
        ks.running().fail(op, f"provider: {body}", "failed")
        return {"effect": None, "attempt": n}
    if not (200 <= status < 300 and ks.valid_effect(body)):
        raise ProviderError(f"provider answered {status}")  # DBOS retries the step
    killpoint_probe.boundary("after_provider_success", op_id, n)
    return {"effect": body, "attempt": n}


@DBOS.step()
def record(op_id, effect, attempt):
    ks.running().record(op_id, effect, attempt, f"attempt {attempt}")


@DBOS.workflow()
def operation(op_id):
    if not authorize(op_id):
        return
    answer = call_tool(op_id)
    if answer["effect"] is not None:
        record(op_id, answer["effect"], answer["attempt"])


def system_database():
    """DBOS's system database: PostgreSQL beside the worker when the harness runs one
    (postgres.toml: a fresh cluster per run), else SQLite in the worker's data dir."""
    postgres = os.environ.get("KILLPOINT_SERVICE_POSTGRES_ADDR")
    if postgres:
        return f"postgresql://dbos@{postgres}/killpoint_dbos"
    return f"sqlite:///{os.path.join(ks.running().env.data_dir, 'dbos.sqlite')}"


def main():
    def start():
        DBOS(config={"name": "killpoint-dbos",
                     "system_database_url": system_database(),
                     "log_level": "WARNING"})
        DBOS.launch()  # recovers the workflows a crash interrupted, in the background

    def run(op_id):
        with SetWorkflowID(op_id):
            try:
                # A workflow DBOS already holds (run again after a restart) gets a handle that
                # polls, by default each second.
                DBOS.start_workflow(operation, op_id).get_result(polling_interval_sec=0.05)
            except Exception as error:
                ks.log(f"{op_id}: {error!r}")

    ks.serve(run=run, start=start)


if __name__ == "__main__":
    main()
