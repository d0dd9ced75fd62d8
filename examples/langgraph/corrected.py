#!/usr/bin/env python3
"""A LangGraph graph as a killpoint runtime, written the corrected way (expected to PASS).

One thread per operation (`thread_id` = the operation id), checkpointed in SQLite under
KILLPOINT_DATA_DIR with durability "sync": a node's output is on disk before the next node runs.
After a crash the worker resumes each unsettled thread from its last checkpoint, which re-runs the
node that was interrupted. The nodes are examples/frameworks/shell.py's corrected steps:

    dispatch --dispatched--> call --success--> record --> END
       ^  |--found-----------------------------^
       |  '--later--> wait          call --unknown--> wait
       '------------------ wait <---'

  * the key is the operation id (shell: `idempotency_key`), the same in every replay;
  * `call`, replayed after a crash, sends nothing: `dispatch` looks the effect up first;
  * `dispatch` checks the policy in the node that records DISPATCHED.
"""

import os
import sqlite3
import sys
import time
from typing import Any, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "frameworks"))
import shell  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402


class State(TypedDict, total=False):
    op_id: str
    outcome: str
    attempt: int
    effect: Any


def build(steps, checkpointer):
    def dispatch(state):
        return steps.dispatch(state["op_id"])

    def call(state):
        return steps.call(state["op_id"], state["attempt"])

    def record(state):
        how = "found by lookup" if state["outcome"] == shell.FOUND else f"attempt {state['attempt']}"
        return steps.record(state["op_id"], state["effect"], state["attempt"], how)

    def wait(state):
        time.sleep(shell.pause_before(state["outcome"], state.get("attempt", 0)))
        return {}

    graph = StateGraph(State)
    graph.add_node("dispatch", dispatch)
    graph.add_node("call", call)
    graph.add_node("record", record)
    graph.add_node("wait", wait)
    graph.add_edge(START, "dispatch")
    graph.add_conditional_edges("dispatch", lambda s: {
        shell.SETTLED: END, shell.LATER: "wait", shell.FOUND: "record",
        shell.DISPATCHED: "call"}[s["outcome"]])
    graph.add_conditional_edges("call", lambda s: {
        shell.SETTLED: END, shell.UNKNOWN: "wait", shell.SUCCESS: "record"}[s["outcome"]])
    graph.add_edge("record", END)
    graph.add_edge("wait", "dispatch")
    return graph.compile(checkpointer=checkpointer)


def main():
    def after_ready(worker):
        data_dir = os.environ["KILLPOINT_DATA_DIR"]
        connection = sqlite3.connect(os.path.join(data_dir, "langgraph.sqlite3"),
                                     check_same_thread=False)
        graph = build(shell.Steps(worker), SqliteSaver(connection))

        def execute(op_id):
            config = {"configurable": {"thread_id": op_id}, "recursion_limit": 1000}
            # A thread with a pending node was interrupted: resume it (the node runs again).
            pending = graph.get_state(config).next
            graph.invoke(None if pending else {"op_id": op_id}, config, durability="sync")

        shell.FrameworkWorker.execute = staticmethod(execute)

    shell.runtime.main(worker_class=shell.FrameworkWorker, after_ready=after_ready)


if __name__ == "__main__":
    main()
