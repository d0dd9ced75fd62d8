#!/usr/bin/env python3
"""A Pydantic AI agent made durable by DBOS, as a killpoint runtime, written the corrected way
(expected to PASS).

One agent run per operation, inside a DBOS workflow whose id is the operation id; the agent's
`DBOSDurability` capability records each model request as a DBOS step in the SQLite system
database under KILLPOINT_DATA_DIR. The model is Pydantic AI's own `FunctionModel`: it asks for the
`perform` tool once, then answers "done" (deterministic, no network). After a crash DBOS replays
the workflow: the recorded model requests return their recorded responses, and the tool runs
again. The tool is where the provider is called, so it is written to be run again:

  * a function tool is not a DBOS step (the capability makes model requests steps, not tools): its
    body runs again on every replay until the next model request is recorded. So its body is DBOS
    steps of its own, each one round of the kit's `ks.execute`, which starts from the operation's
    durable state (a round whose request may be out looks the effect up first, with the
    operation id as the key, and checks the policy just before each new attempt);
  * waiting between rounds is DBOS.sleep, durable like a step, so a replay meets the same steps.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_shell as ks  # noqa: E402
from dbos import DBOS, SetWorkflowID  # noqa: E402
from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.durable_exec.dbos import DBOSDurability  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402


def model(messages, info):
    """The agent loop's model: call the tool, then, given its return, finish."""
    returned = any(isinstance(part, ToolReturnPart) for message in messages for part in message.parts)
    return ModelResponse(parts=[TextPart("done")] if returned else [ToolCallPart("perform", {})])


agent = Agent(FunctionModel(model), name="killpoint_agent", deps_type=str, capabilities=[DBOSDurability()])


@DBOS.step()
def round_of(op_id):
    return ks.execute(op_id)  # None: settled; else how long to wait before the next round


@agent.tool
def perform(ctx: RunContext[str]) -> str:
    """Performs the operation's tool call at the provider."""
    while (pause := round_of(ctx.deps)) is not None:
        DBOS.sleep(pause)
    return "settled"


@DBOS.workflow()
def operation(op_id):
    agent.run_sync("perform the operation", deps=op_id)


def run(op_id):
    with SetWorkflowID(op_id):
        # A workflow DBOS already holds (run again after a restart) gets a handle that
        # polls, by default each second.
        DBOS.start_workflow(operation, op_id).get_result(polling_interval_sec=0.05)


def start():
    """Launches DBOS (after the ready line: its recovery may announce boundaries) and waits for
    the workflows it recovers, so that the worker never runs one of them a second time at once."""
    DBOS(config={"name": "killpoint-pydantic-ai",
                 "system_database_url": f"sqlite:///{os.path.join(ks.running().env.data_dir, 'dbos.sqlite')}",
                 "log_level": "WARNING"})
    DBOS.launch()
    for pending in DBOS.list_workflows(status="PENDING"):
        try:
            # The handle polls the system database, by default each second: the worker waits for it.
            DBOS.retrieve_workflow(pending.workflow_id).get_result(polling_interval_sec=0.05)
        except Exception as error:  # the worker looks at the operation again
            ks.log(f"recovered workflow {pending.workflow_id} failed: {error!r}")


if __name__ == "__main__":
    ks.serve(run=run, start=start)
