"""The fake model asked by the real OpenAI client (the `openai` package pinned in
examples/frameworks/requirements.txt), as an agent framework's model client asks it.

    python model_client.py MODEL_URL OPERATION

MODEL_URL is the world's model URL (what the client takes as `base_url`), OPERATION an operation
the harness armed the model for. Asks, in this order (tests/model_client.rs reads the ledger in
the same order):

1. `plain`: the task with `charge_card` offered, not streamed;
2. `streamed`: the same question streamed (`stream=True`, usage asked for), the tool call put
   together from the chunks' deltas as the client's README shows;
3. `helper`: the same question through the client's stream helper
   (`client.chat.completions.stream(...)`, `get_final_completion()`), which accumulates the
   chunks itself and parses a strict tool's arguments;
4. `final`: the streamed call's result sent back (the assistant's message with its tool call,
   then a `role: "tool"` message), not streamed;
5. `final_streamed`: the same, through the stream helper.

Prints one JSON line with what the client made of each answer. Any error the client raises ends
the script with a traceback (exit status 1): the test shows it.
"""

import json
import sys

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

MODEL = "killpoint"

# Strict, as the stream helper asks of the tools whose arguments it parses; the schema is what
# the fake model answers (the harness's `_killpoint` among the arguments).
CHARGE_CARD = {
    "type": "function",
    "function": {
        "name": "charge_card",
        "description": "Charge the customer's card.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {
                "amount_cents": {"type": "integer"},
                "note": {"type": "string"},
                "_killpoint": {
                    "type": "object",
                    "properties": {"operation": {"type": "string"}, "decision": {"type": "string"}},
                    "required": ["operation", "decision"],
                    "additionalProperties": False,
                },
            },
            "required": ["amount_cents", "note", "_killpoint"],
            "additionalProperties": False,
        },
    },
}


def task(operation):
    marker = f"[killpoint:{operation}]"
    return [
        {"role": "system", "content": "You charge customers with the tools you are given."},
        {"role": "user", "content": f"Charge the customer for their order. {marker}"},
    ]


def call_of(tool_call):
    """A tool call as the script reports it: its arguments parsed (they arrive as a string)."""
    return {
        "id": tool_call.id,
        "type": tool_call.type,
        "name": tool_call.function.name,
        "arguments": json.loads(tool_call.function.arguments),
    }


def validated(kind, answer):
    """`answer` checked against the client's own type. The client builds its objects from the
    JSON without validating them (a wrong type passes silently), so an answer a framework that
    validates (pydantic-ai does) would refuse is caught here, by the same pydantic model."""
    kind.model_validate(answer.model_dump(warnings=False))
    return answer


def usage_of(usage):
    return None if usage is None else usage.model_dump()


def plain(client, messages):
    completion = client.chat.completions.create(model=MODEL, messages=messages, tools=[CHARGE_CARD])
    validated(ChatCompletion, completion)
    choice = completion.choices[0]
    return {
        "completion": completion.id,
        "object": completion.object,
        "model": completion.model,
        "finish_reason": choice.finish_reason,
        "content": choice.message.content,
        "calls": [call_of(c) for c in choice.message.tool_calls or []],
        "usage": usage_of(completion.usage),
    }


def streamed(client, messages):
    """`stream=True`, put together delta by delta: a tool call's first delta carries its `index`,
    `id` and name, the later ones more of its `arguments` under the same `index`."""
    stream = client.chat.completions.create(
        model=MODEL,
        messages=messages,
        tools=[CHARGE_CARD],
        stream=True,
        stream_options={"include_usage": True},
    )
    calls, content, finish, usage, ids, chunks = {}, "", None, None, set(), 0
    for chunk in stream:
        validated(ChatCompletionChunk, chunk)
        chunks += 1
        ids.add(chunk.id)
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            content += delta.content or ""
            for piece in delta.tool_calls or []:
                call = calls.setdefault(piece.index, {"id": None, "type": None, "name": "", "arguments": ""})
                call["id"] = piece.id or call["id"]
                call["type"] = piece.type or call["type"]
                if piece.function is not None:
                    call["name"] += piece.function.name or ""
                    call["arguments"] += piece.function.arguments or ""
            finish = choice.finish_reason or finish
    assembled = [dict(c, arguments=json.loads(c["arguments"])) for _, c in sorted(calls.items())]
    return {
        "completions": sorted(ids),
        "chunks": chunks,
        "finish_reason": finish,
        "content": content,
        "calls": assembled,
        "usage": usage_of(usage),
    }


def helper(client, messages, tools):
    """The client's stream helper: its events as they come, and the completion it accumulated."""
    events = []
    parsed = []
    with client.chat.completions.stream(
        model=MODEL, messages=messages, tools=tools, stream_options={"include_usage": True}
    ) as stream:
        for event in stream:
            events.append(event.type)
            if event.type == "tool_calls.function.arguments.done":
                parsed.append(event.parsed_arguments)
        completion = stream.get_final_completion()
    validated(ChatCompletion, completion)
    choice = completion.choices[0]
    calls = choice.message.tool_calls or []
    return {
        "completion": completion.id,
        "events": sorted(set(events)),
        "finish_reason": choice.finish_reason,
        "content": choice.message.content,
        "calls": [call_of(c) for c in calls],
        "parsed_arguments": [c.function.parsed_arguments for c in calls],
        "parsed_in_events": parsed,
        "usage": usage_of(completion.usage),
    }


def answered(messages, call):
    """The conversation with `call` made: the assistant's tool call, then the tool's result."""
    arguments = json.dumps(call["arguments"])
    return messages + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"receipt": "r-1", "status": "charged"})},
    ]


def main():
    url, operation = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=20.0)
    messages = task(operation)
    report = {"openai": openai.__version__}
    report["plain"] = plain(client, messages)
    report["streamed"] = streamed(client, messages)
    report["helper"] = helper(client, messages, [CHARGE_CARD])
    done = answered(messages, report["streamed"]["calls"][0])
    report["final"] = plain(client, done)
    report["final_streamed"] = helper(client, done, [CHARGE_CARD])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
