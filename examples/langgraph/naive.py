#!/usr/bin/env python3
"""A LangGraph graph as a killpoint runtime, written the way a typical user writes it (expected to
FAIL at_most_once).

    authorize --> call_tool --> record --> END

The graph is checkpointed (SQLite, one thread per operation) and resumed after a crash, and the
tool call has LangGraph's RetryPolicy. Two habits make it unsafe:
  * `call_tool` makes a fresh Idempotency-Key each time it runs (uuid4), so a provider cannot
    recognise the replay of a call it already applied;
  * when the node is interrupted (a crash, or an exception the RetryPolicy retries), LangGraph
    runs it again from the top and it sends the request again — without looking first.
A crash after the provider applied the call (`after_dispatch`) or after its answer arrived
(`after_provider_success`) therefore applies it twice.
"""

import json
import os
import sqlite3
import sys
import uuid
from typing import Any, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_probe  # noqa: E402
import killpoint_shell as ks  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import RetryPolicy  # noqa: E402


class State(TypedDict, total=False):
    op_id: str
    allowed: bool
    effect: Any
    attempt: int


class ProviderError(Exception):
    pass


def build(shell, checkpointer):
    def authorize(state):
        op = shell.store.operation(state["op_id"])
        verdict = shell.check_policy(op, tool=op["tool_name"])
        if verdict is not True:
            shell.fail(op, f"policy: {verdict}", "policy_refused")
            killpoint_probe.boundary("after_policy_revocation", op["id"], op["attempts"] + 1)
            return {"allowed": False}
        return {"allowed": True}

    def call_tool(state):
        op = shell.store.operation(state["op_id"])
        n = op["attempts"] + 1
        killpoint_probe.boundary("before_dispatch", op["id"], n)
        with shell.store.tx() as db:
            db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ? WHERE id = ?",
                       (n, op["id"]))
            shell.audit(db, op["id"], "dispatched", f"attempt {n}")
        status, body = ks.http(
            "POST", f"{shell.env.provider_url}/tools/{ks.quote(op['tool_name'])}",
            {"arguments": json.loads(op["arguments"])}, key=str(uuid.uuid4()))
        if 400 <= status < 500:
            shell.fail(op, f"provider: {body}", "failed")
            return {"effect": None, "attempt": n}
        if not (200 <= status < 300 and ks.valid_effect(body)):
            raise ProviderError(f"provider answered {status}")  # the RetryPolicy retries
        killpoint_probe.boundary("after_provider_success", op["id"], n)
        return {"effect": body, "attempt": n}

    def record(state):
        if state.get("effect") is not None:
            shell.record(state["op_id"], state["effect"], state["attempt"], f"attempt {state['attempt']}")
        return {}

    graph = StateGraph(State)
    graph.add_node("authorize", authorize)
    graph.add_node("call_tool", call_tool,
                   retry_policy=RetryPolicy(initial_interval=0.05, max_attempts=3, jitter=False))
    graph.add_node("record", record)
    graph.add_edge(START, "authorize")
    graph.add_conditional_edges("authorize", lambda s: "call_tool" if s["allowed"] else END)
    graph.add_edge("call_tool", "record")
    graph.add_edge("record", END)
    return graph.compile(checkpointer=checkpointer)


def main():
    graph = None

    def start():
        nonlocal graph
        connection = sqlite3.connect(os.path.join(os.environ["KILLPOINT_DATA_DIR"], "langgraph.sqlite3"),
                                     check_same_thread=False)
        graph = build(ks.running(), SqliteSaver(connection))

    def run(op_id):
        config = {"configurable": {"thread_id": op_id}}
        pending = graph.get_state(config).next
        try:
            graph.invoke(None if pending else {"op_id": op_id}, config)
        except ProviderError as error:
            ks.log(f"{op_id}: {error}, retries exhausted")

    ks.serve(run=run, start=start)


if __name__ == "__main__":
    main()
