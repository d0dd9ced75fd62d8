#!/usr/bin/env python3
"""A LangGraph graph as a killpoint runtime, written the corrected way (expected to PASS).

One thread per operation (`thread_id` = the operation id), checkpointed in SQLite under
KILLPOINT_DATA_DIR with durability "sync": a node's output is on disk before the next node runs.
After a crash the runtime resumes each unsettled thread from its last checkpoint, which re-runs
the node that was interrupted. Everything else is the Python kit's contract shell
(probe-kit/python, `killpoint_shell`):

    START --> round --settled--> END
               ^  '--pause--> wait
               '---------------'

  * `round` is one round of `ks.execute`, which starts from the operation's durable state: a
    re-run round whose request may be out looks the effect up first, with the same key (the
    operation id), and checks the policy just before each new attempt;
  * `wait` sleeps the pause the round asked for; a crash in it re-runs it, harmlessly.
"""

import os
import sqlite3
import sys
import time
from typing import Optional, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_shell as ks  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402


class State(TypedDict, total=False):
    op_id: str
    pause: Optional[float]


def build(checkpointer):
    graph = StateGraph(State)
    graph.add_node("round", lambda state: {"pause": ks.execute(state["op_id"])})
    graph.add_node("wait", lambda state: time.sleep(state["pause"]) or {})
    graph.add_edge(START, "round")
    graph.add_conditional_edges("round", lambda state: END if state["pause"] is None else "wait")
    graph.add_edge("wait", "round")
    return graph.compile(checkpointer=checkpointer)


def main():
    graph = None

    def start():  # the data dir is checked by the shell before this
        nonlocal graph
        connection = sqlite3.connect(os.path.join(ks.running().env.data_dir, "langgraph.sqlite3"),
                                     check_same_thread=False)
        graph = build(SqliteSaver(connection))

    def run(op_id):
        config = {"configurable": {"thread_id": op_id}, "recursion_limit": 1000}
        # A thread with a pending node was interrupted: resume it (the node runs again).
        pending = graph.get_state(config).next
        graph.invoke(None if pending else {"op_id": op_id}, config, durability="sync")

    ks.serve(run=run, start=start)


if __name__ == "__main__":
    main()
