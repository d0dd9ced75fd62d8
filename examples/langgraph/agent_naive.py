#!/usr/bin/env python3
"""A LangGraph agent that decides (CONTRACT.md §12) through LangChain's OpenAI model class, as a
killpoint runtime, written the way a hand-written agent loop often is (expected to FAIL
one_decision).

One thread per task operation, checkpointed in SQLite with durability "sync", as the corrected
version; the model is `ChatOpenAI(base_url=KILLPOINT_MODEL_URL)`. But the loop is one node:

    START --> agent (ask the model, call the tool, ask for the final text) --> END

so no checkpoint ever holds the model's decision before the tool acts on it. The tool call sends
the tool-call id as the Idempotency-Key, the common "idempotent tool" habit. After a crash the
thread resumes at `agent`, which runs again from the top: the model is asked again and, like any
sampling model, answers another tool call, with another id and other arguments. The provider sees
a new key and applies it: a kill after the provider applied the call (`after_dispatch`) leaves two
different charges for one task, two decisions acted on.
"""

import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_probe  # noqa: E402
import killpoint_shell as ks  # noqa: E402
from langchain_core.messages import HumanMessage, ToolMessage  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402


class State(MessagesState):
    op_id: str


def perform(op_id, call, kinds):
    """Calls the tool at the provider with the model's arguments, keyed by the model's tool-call id."""
    shell = ks.running()
    op = shell.store.operation(op_id)
    if op["execution"] in ("SUCCEEDED", "FAILED"):
        return op["execution"]
    verdict = shell.check_policy(op, tool=call["name"])
    n = op["attempts"] + 1
    if verdict is not True:
        shell.fail(op, f"policy: {verdict}", "policy_refused")
        killpoint_probe.boundary("after_policy_revocation", op_id, n)
        return "refused"
    killpoint_probe.boundary("before_dispatch", op_id, n)
    with shell.store.tx() as db:
        db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ?, tool_name = ?, tool_kind = ?,"
                   " arguments = ? WHERE id = ?",
                   (n, call["name"], kinds[call["name"]], json.dumps(call["args"]), op_id))
        shell.audit(db, op_id, "dispatched", f"attempt {n}: {call['name']}, tool call {call['id']}")
    status, body = ks.http("POST", f"{shell.env.provider_url}/tools/{ks.quote(call['name'])}",
                           {"arguments": call["args"]}, key=call["id"])
    if not (200 <= status < 300 and ks.valid_effect(body)):
        shell.fail(op, f"provider: {status} {body}", "failed")
        return "failed"
    killpoint_probe.boundary("after_provider_success", op_id, n)
    shell.record(op_id, body, n, f"attempt {n}")
    return "done"


def agent(state):
    """The whole loop in one node: ask, act, ask again for the final text."""
    task = json.loads(ks.running().store.operation(state["op_id"])["task"])
    kinds = {tool["name"]: tool["kind"] for tool in task["tools"]}
    tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in kinds]
    model = ChatOpenAI(model="killpoint", base_url=os.environ.get("KILLPOINT_MODEL_URL", ""), api_key="unused",
                       timeout=10).bind_tools(tools)
    messages = list(state["messages"])
    while (answer := model.invoke(messages)).tool_calls:
        messages.append(answer)
        for call in answer.tool_calls:
            messages.append(ToolMessage(perform(state["op_id"], call, kinds), tool_call_id=call["id"]))
    return {"messages": messages[len(state["messages"]):] + [answer]}


def main():
    graph = None

    def start():
        nonlocal graph
        connection = sqlite3.connect(os.path.join(ks.running().env.data_dir, "langgraph.sqlite3"),
                                     check_same_thread=False)
        graph = StateGraph(State)
        graph.add_node("agent", agent)
        graph.add_edge(START, "agent")
        graph.add_edge("agent", END)
        graph = graph.compile(checkpointer=SqliteSaver(connection))

    def run(op_id):
        config = {"configurable": {"thread_id": op_id}}
        pending = graph.get_state(config).next  # interrupted: resume it (the node runs again)
        prompt = json.loads(ks.running().store.operation(op_id)["task"])["prompt"]
        try:
            graph.invoke(None if pending else {"op_id": op_id, "messages": [HumanMessage(prompt)]}, config,
                         durability="sync")
        except Exception as error:  # the worker runs it again later
            ks.log(f"{op_id}: {error!r}")

    ks.serve(run=run, start=start)


if __name__ == "__main__":
    main()
