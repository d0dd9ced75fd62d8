#!/usr/bin/env python3
"""A Pydantic AI agent made durable by DBOS, as a killpoint runtime, written the way its docs lead
a user to (expected to FAIL at_most_once).

The agent run is inside a DBOS workflow (its id the operation id) and the `DBOSDurability`
capability records each model request as a step; the model is the framework's `FunctionModel`,
which asks for the `perform` tool once and then answers "done". The tool is a plain function tool
that calls the provider, as a tool that calls an API is written. Two habits make it unsafe:
  * a function tool is not a durable step: after a crash DBOS replays the workflow, the recorded
    model request returns the same tool call, and the tool's body runs again from the top — it
    sends the request again, without looking first;
  * it makes a fresh Idempotency-Key each time it runs (uuid4), so a provider cannot recognise
    the replay of a call it already applied.
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
from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.durable_exec.dbos import DBOSDurability  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402


def model(messages, info):
    returned = any(isinstance(part, ToolReturnPart) for message in messages for part in message.parts)
    return ModelResponse(parts=[TextPart("done")] if returned else [ToolCallPart("perform", {})])


agent = Agent(FunctionModel(model), name="killpoint_agent", deps_type=str, capabilities=[DBOSDurability()])


@agent.tool
def perform(ctx: RunContext[str]) -> str:
    """Performs the operation's tool call at the provider."""
    shell = ks.running()
    op = shell.store.operation(ctx.deps)
    if op["execution"] in ("SUCCEEDED", "FAILED"):
        return op["execution"]
    verdict = shell.check_policy(op, tool=op["tool_name"])
    n = op["attempts"] + 1
    if verdict is not True:
        shell.fail(op, f"policy: {verdict}", "policy_refused")
        killpoint_probe.boundary("after_policy_revocation", op["id"], n)
        return "refused"
    killpoint_probe.boundary("before_dispatch", op["id"], n)
    with shell.store.tx() as db:
        db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ? WHERE id = ?", (n, op["id"]))
        shell.audit(db, op["id"], "dispatched", f"attempt {n}")
    status, body = ks.http("POST", f"{shell.env.provider_url}/tools/{ks.quote(op['tool_name'])}",
                           {"arguments": json.loads(op["arguments"])}, key=str(uuid.uuid4()))
    if not (200 <= status < 300 and ks.valid_effect(body)):
        shell.fail(op, f"provider: {status} {body}", "failed")
        return "failed"
    killpoint_probe.boundary("after_provider_success", op["id"], n)
    shell.record(op["id"], body, n, f"attempt {n}")
    return "done"


@DBOS.workflow()
def operation(op_id):
    agent.run_sync("perform the operation", deps=op_id)


def main():
    def start():
        DBOS(config={"name": "killpoint-pydantic-ai",
                     "system_database_url": f"sqlite:///{os.path.join(ks.running().env.data_dir, 'dbos.sqlite')}",
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
