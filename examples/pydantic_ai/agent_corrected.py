#!/usr/bin/env python3
"""A Pydantic AI agent that decides (CONTRACT.md §12) through the framework's OpenAI model class,
made durable by DBOS, as a killpoint runtime, written the corrected way (expected to PASS).

Each task operation is one agent run inside a DBOS workflow whose id is the operation id. The model
is `OpenAIChatModel` on `OpenAIProvider(base_url=KILLPOINT_MODEL_URL)`: the world's fake model, which
answers another tool call (another id, other arguments) every time it is asked. The agent is
offered the task's tools, one function tool per offered name, taking the model's arguments as they
come (`_killpoint` among them, passed to the provider unchanged). Two things make it safe:

  * `DBOSDurability` records each model request as a DBOS step: a workflow replayed after a crash
    gets the recorded response, the same decision, instead of asking again (§12-3's first design,
    as far as the engine's record reaches). A request that fails or answers garbage is no
    decision; the step retries it (short interval), so the workflow itself never fails on it;
  * the tool, which DBOS does not make a step, runs the kit's rounds (`ks.execute` with the
    decision passed in) as DBOS steps: write-ahead DISPATCHED, key = the operation id, and a round
    whose request may be out looks the effect up before anything is sent. A kill after the call
    went out and before the model's step was recorded loses the decision, not the effect: the
    replay's new decision is acted on only if the lookup found nothing (§12-3's second design; for
    a kind without lookup the kit pauses, a safely repeatable one repeats the recorded arguments).
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import httpx2  # noqa: E402
import killpoint_shell as ks  # noqa: E402
from dbos import DBOS, SetWorkflowID  # noqa: E402
from pydantic_ai import Agent, RunContext, Tool  # noqa: E402
from pydantic_ai.durable_exec.dbos import DBOSDurability  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402

# The model's arguments are the provider's (§12-2): any object, kept as the model wrote it.
ARGUMENTS = {"type": "object", "additionalProperties": True}

# A model request that fails, drops or answers garbage is retried within its step, here rather
# than by the OpenAI client (max_retries=0), so that the retries are short and counted in one place.
MODEL_STEP = {"retries_allowed": True, "interval_seconds": 0.1, "max_attempts": 50, "backoff_rate": 1.0}


def model():
    """The framework's OpenAI model on the world's model. Each agent run drives its own event loop
    (that of the thread DBOS runs the workflow in), and a kept-alive connection belongs to the loop
    that opened it: reused from another, the answer is lost after the model gave it. So none is
    kept. The timeout bounds a model that never answers; the step then asks again."""
    http = httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), timeout=10.0)
    provider = OpenAIProvider(base_url=os.environ.get("KILLPOINT_MODEL_URL", ""), api_key="unused",
                              http_client=http)
    provider.client.max_retries = 0
    return OpenAIChatModel("killpoint", provider=provider)


agent = Agent(model(), name="killpoint_agent", deps_type=str,
              capabilities=[DBOSDurability(model_step_config=MODEL_STEP)])


@DBOS.step()
def round_of(op_id, tool, arguments, call_id):
    return ks.execute(op_id, decided=(tool, arguments, call_id))  # None: settled; else a pause


def tool_for(offered):
    """The function tool `offered["name"]`: acts on the model's call of it, through the kit."""
    def call(ctx: RunContext[str], **arguments):
        while (pause := round_of(ctx.deps, offered["name"], arguments, ctx.tool_call_id)) is not None:
            DBOS.sleep(pause)
        op = ks.running().store.operation(ctx.deps)
        return "paused" if op["paused"] else op["execution"]
    return Tool.from_schema(call, offered["name"], f"{offered['name']} ({offered['kind']})", ARGUMENTS,
                            takes_ctx=True)


@DBOS.workflow()
def operation(op_id):
    task = json.loads(ks.running().store.operation(op_id)["task"])
    tools = FunctionToolset([tool_for(offered) for offered in task["tools"]])
    agent.run_sync(task["prompt"], deps=op_id, toolsets=[tools])


def run(op_id):
    with SetWorkflowID(op_id):
        DBOS.start_workflow(operation, op_id).get_result(polling_interval_sec=0.05)


def start():
    """Launches DBOS (after the ready line: its recovery may announce boundaries) and waits for
    the workflows it recovers, so that the worker never runs one of them a second time at once."""
    DBOS(config={"name": "killpoint-pydantic-ai-agent",
                 "system_database_url": f"sqlite:///{os.path.join(ks.running().env.data_dir, 'dbos.sqlite')}",
                 "log_level": "WARNING"})
    DBOS.launch()
    for pending in DBOS.list_workflows(status="PENDING"):
        try:
            DBOS.retrieve_workflow(pending.workflow_id).get_result(polling_interval_sec=0.05)
        except Exception as error:  # the worker looks at the operation again
            ks.log(f"recovered workflow {pending.workflow_id} failed: {error!r}")


if __name__ == "__main__":
    ks.serve(run=run, start=start)
