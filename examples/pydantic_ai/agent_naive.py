#!/usr/bin/env python3
"""A Pydantic AI agent that decides (CONTRACT.md §12) through the framework's OpenAI model class,
as a killpoint runtime, written the way the docs lead a user to (expected to FAIL one_decision).

Each task operation is one `agent.run_sync(prompt)`: the model is `OpenAIChatModel` on
`OpenAIProvider(base_url=KILLPOINT_MODEL_URL)`, the agent is offered the task's tools, one function
tool per offered name, and a tool calls the provider with the model's arguments. It looks
careful: the tool writes DISPATCHED ahead, and sends the tool-call id (`ctx.tool_call_id`) as the
Idempotency-Key, the common "idempotent tool" habit. But the run is not durable: after a crash the
worker runs the agent again from the top, the model is asked again and — like any sampling model —
answers another tool call, with another id and other arguments. The key is that id, so the
provider sees a new request and applies it: a kill after the provider applied the call
(`after_dispatch`) leaves two different charges for one task, two decisions acted on.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_probe  # noqa: E402
import killpoint_shell as ks  # noqa: E402
from pydantic_ai import Agent, RunContext, Tool  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

ARGUMENTS = {"type": "object", "additionalProperties": True}


def perform(ctx: RunContext[str], tool, kind, arguments):
    """Calls `tool` at the provider with the model's arguments, keyed by the model's tool-call id."""
    shell = ks.running()
    op = shell.store.operation(ctx.deps)
    if op["execution"] in ("SUCCEEDED", "FAILED"):
        return op["execution"]
    verdict = shell.check_policy(op, tool=tool)
    n = op["attempts"] + 1
    if verdict is not True:
        shell.fail(op, f"policy: {verdict}", "policy_refused")
        killpoint_probe.boundary("after_policy_revocation", op["id"], n)
        return "refused"
    killpoint_probe.boundary("before_dispatch", op["id"], n)
    with shell.store.tx() as db:
        db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ?, tool_name = ?, tool_kind = ?,"
                   " arguments = ? WHERE id = ?", (n, tool, kind, json.dumps(arguments), op["id"]))
        shell.audit(db, op["id"], "dispatched", f"attempt {n}: {tool}, tool call {ctx.tool_call_id}")
    status, body = ks.http("POST", f"{shell.env.provider_url}/tools/{ks.quote(tool)}",
                           {"arguments": arguments}, key=ctx.tool_call_id)
    if not (200 <= status < 300 and ks.valid_effect(body)):
        shell.fail(op, f"provider: {status} {body}", "failed")
        return "failed"
    killpoint_probe.boundary("after_provider_success", op["id"], n)
    shell.record(op["id"], body, n, f"attempt {n}")
    return "done"


def tool_for(offered):
    def call(ctx: RunContext[str], **arguments):
        return perform(ctx, offered["name"], offered["kind"], arguments)
    return Tool.from_schema(call, offered["name"], f"{offered['name']} ({offered['kind']})", ARGUMENTS,
                            takes_ctx=True)


def run(op_id):
    task = json.loads(ks.running().store.operation(op_id)["task"])
    provider = OpenAIProvider(base_url=os.environ.get("KILLPOINT_MODEL_URL", ""), api_key="unused")
    agent = Agent(OpenAIChatModel("killpoint", provider=provider), deps_type=str,
                  tools=[tool_for(offered) for offered in task["tools"]])
    try:
        agent.run_sync(task["prompt"], deps=op_id)
    except Exception as error:  # the worker runs the agent again later
        ks.log(f"{op_id}: {error!r}")


if __name__ == "__main__":
    ks.serve(run=run)
