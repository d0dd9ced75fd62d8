#!/usr/bin/env python3
"""A LangGraph agent that decides (CONTRACT.md §12) through LangChain's OpenAI model class, as a
killpoint runtime, written the corrected way (expected to PASS).

One thread per task operation (`thread_id` = the operation id), checkpointed in SQLite under
KILLPOINT_DATA_DIR with durability "sync": a node's output is on disk before the next node runs.
The model is `ChatOpenAI(base_url=KILLPOINT_MODEL_URL)`: the world's fake model, which answers
another tool call (another id, other arguments) every time it is asked.

    START --> agent --tool call--> tools --> agent --text--> END

  * `agent` asks the model, offering the task's tools, and returns its answer. Its checkpoint holds
    the decision (the AIMessage with its tool call) before `tools` runs: a crash in `tools` resumes
    there, with the recorded decision, and the model is not asked again (§12-3's first design). A
    model that fails or answers garbage raises: nothing is checkpointed, and the worker resumes
    the thread later, which asks again — no decision was lost, none was acted on;
  * `tools` acts on the recorded tool call through the kit's rounds (`ks.execute` with the decision
    passed in): write-ahead DISPATCHED, key = the operation id, and a round whose request may be
    out looks the effect up before anything is sent; it pauses between rounds in the node, which a
    crash re-runs harmlessly. Its ToolMessage goes back to `agent`, which the model answers with
    a final text.
"""

import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_shell as ks  # noqa: E402
from langchain_core.messages import HumanMessage, ToolMessage  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402


class State(MessagesState):
    op_id: str


def offer(tool):
    """An offered tool as an OpenAI function: its arguments any object, passed on unchanged."""
    return {"type": "function", "function": {"name": tool["name"], "description": f"{tool['name']} ({tool['kind']})",
                                             "parameters": {"type": "object", "additionalProperties": True}}}


def task_of(op_id):
    return json.loads(ks.running().store.operation(op_id)["task"])


def agent(state):
    # No retries in the client: the worker resumes the thread, which asks again (the timeout
    # bounds a model that never answers).
    model = ChatOpenAI(model="killpoint", base_url=os.environ.get("KILLPOINT_MODEL_URL", ""), api_key="unused",
                       max_retries=0, timeout=10)
    tools = [offer(tool) for tool in task_of(state["op_id"])["tools"]]
    return {"messages": [model.bind_tools(tools).invoke(state["messages"])]}


def tools(state):
    results = []
    for call in state["messages"][-1].tool_calls:
        decided = (call["name"], call["args"], call["id"])
        while (pause := ks.execute(state["op_id"], decided=decided)) is not None:
            time.sleep(pause)
        op = ks.running().store.operation(state["op_id"])
        results.append(ToolMessage("paused" if op["paused"] else op["execution"], tool_call_id=call["id"]))
    return {"messages": results}


def build(checkpointer):
    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", lambda state: "tools" if state["messages"][-1].tool_calls else END)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def main():
    graph = None

    def start():  # the data dir is checked by the shell before this
        nonlocal graph
        connection = sqlite3.connect(os.path.join(ks.running().env.data_dir, "langgraph.sqlite3"),
                                     check_same_thread=False)
        graph = build(SqliteSaver(connection))

    def run(op_id):
        config = {"configurable": {"thread_id": op_id}}
        # A thread with a pending node was interrupted (a crash, a model error): resume it.
        pending = graph.get_state(config).next
        start_with = None if pending else {"op_id": op_id, "messages": [HumanMessage(task_of(op_id)["prompt"])]}
        try:
            graph.invoke(start_with, config, durability="sync")
        except Exception as error:  # the model failed: the worker resumes the thread later
            ks.log(f"{op_id}: {error!r}")

    ks.serve(run=run, start=start)


if __name__ == "__main__":
    main()
