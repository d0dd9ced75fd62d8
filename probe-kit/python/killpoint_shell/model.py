"""The model's client (CONTRACT.md §12): asks `POST {KILLPOINT_MODEL_URL}/chat/completions` which
tool a task calls, with which arguments.

An answer is only a proposal: the model answers differently every time it is asked, and nothing
here keeps it. What the kit keeps of a decision, and why that is enough, is execution.py's
business (§12-3's second design)."""

import json
from collections import namedtuple

from .net import http

# One tool call to make: the tool's name and kind, its arguments (passed to the provider
# unchanged, §3-1, §12-2), and the model's tool-call id when a decision made it (else None).
Call = namedtuple("Call", "tool kind arguments decision")


def decide(model_url, task):
    """Asks the model to decide `task` ({prompt, tools}): the prompt as the user's message,
    unchanged (§12-1), every tool of the task offered as a function. Returns (Call, None), or
    (None, why there is no decision) when the model could not be reached, failed, answered late
    or answered something that is not one tool call of an offered tool: ask again later."""
    if not model_url:
        return None, "expected KILLPOINT_MODEL_URL to decide a task, found it unset"
    body = {"model": "killpoint", "messages": [{"role": "user", "content": task["prompt"]}],
            "tools": [offer(tool) for tool in task["tools"]]}
    url = f"{model_url}/chat/completions"
    try:
        status, answer = http("POST", url, body)
    except Exception as error:  # refused, dropped, timed out, truncated: no answer
        return None, f"{url}: no answer ({error!r})"
    if status != 200:
        return None, f"{url}: expected 200 with a completion, found {status} {answer!r}"[:500]
    return read_decision(task, answer)


def offer(tool):
    return {"type": "function", "function": {
        "name": tool["name"], "description": f"{tool['name']} ({tool['kind']})",
        "parameters": {"type": "object", "additionalProperties": True}}}


def read_decision(task, answer):
    """The completion's one tool call, as a Call of a tool the task offered."""
    try:
        call = answer["choices"][0]["message"]["tool_calls"][0]
        decision, name, raw = call["id"], call["function"]["name"], call["function"]["arguments"]
    except (TypeError, KeyError, IndexError):
        return None, f"expected a tool call in choices[0].message.tool_calls, found {answer!r}"[:500]
    kinds = {tool["name"]: tool["kind"] for tool in task["tools"]}
    if name not in kinds:
        return None, f"expected one of the offered tools {sorted(kinds)}, found the model chose {name!r}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        arguments = None
    if not isinstance(decision, str) or not isinstance(arguments, dict):
        return None, f"expected an id and a JSON object as arguments in the tool call, found {call!r}"[:500]
    return Call(name, kinds[name], arguments, decision), None
