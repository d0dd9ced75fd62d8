"""The fake model asked by the real OpenAI client (the `openai` package pinned in
examples/frameworks/requirements.txt), as an agent framework's model client asks it.

    python model_client.py MODEL_URL OPERATION UNARMED

MODEL_URL is the world's model URL (what the client takes as `base_url`), OPERATION an operation
the harness armed the model for, UNARMED one it did not. Asks, in this order (tests/model_client.rs
reads the ledger in the same order):

1. `plain`: the task with `charge_card` offered, not streamed;
2. `streamed`: the same question streamed (`stream=True`, usage asked for), the tool call put
   together from the chunks' deltas as the client's README shows;
3. `helper`: the same question through the client's stream helper
   (`client.chat.completions.stream(...)`, `get_final_completion()`), which accumulates the
   chunks itself and parses a strict tool's arguments;
4. `async_streamed`: the same question streamed through `AsyncOpenAI`, the client agent
   frameworks use (pydantic-ai's, for one), on its own transport;
5. `final`: the streamed call's result sent back (the assistant's message with its tool call,
   then a `role: "tool"` message), not streamed;
6. `final_streamed`: the same, through the stream helper;

and `refused`: a task of UNARMED, which the model refuses (400): the error the client raises.

Prints one JSON line with what the client made of each answer. Any other error the client raises
ends the script with a traceback (exit status 1): the test shows it.
"""

import asyncio
import json
import sys

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

MODEL = "killpoint"

# Seconds for each question: the model answers at once on loopback; the test's own deadline for
# the whole script is longer.
TIMEOUT = 20.0

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


STREAMED = {"tools": [CHARGE_CARD], "stream": True, "stream_options": {"include_usage": True}}


class Deltas:
    """A streamed answer put together delta by delta: a tool call's first delta carries its
    `index`, `id` and name, the later ones more of its `arguments` under the same `index`."""

    def __init__(self):
        self.calls, self.content, self.finish, self.usage, self.ids, self.chunks = {}, "", None, None, set(), 0

    def add(self, chunk):
        validated(ChatCompletionChunk, chunk)
        self.chunks += 1
        self.ids.add(chunk.id)
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices:
            self.content += choice.delta.content or ""
            for piece in choice.delta.tool_calls or []:
                call = self.calls.setdefault(piece.index, {"id": None, "type": None, "name": "", "arguments": ""})
                call["id"] = piece.id or call["id"]
                call["type"] = piece.type or call["type"]
                if piece.function is not None:
                    call["name"] += piece.function.name or ""
                    call["arguments"] += piece.function.arguments or ""
            self.finish = choice.finish_reason or self.finish

    def report(self):
        return {
            "completions": sorted(self.ids),
            "chunks": self.chunks,
            "finish_reason": self.finish,
            "content": self.content,
            "calls": [dict(c, arguments=json.loads(c["arguments"])) for _, c in sorted(self.calls.items())],
            "usage": usage_of(self.usage),
        }


def streamed(client, messages):
    deltas = Deltas()
    for chunk in client.chat.completions.create(model=MODEL, messages=messages, **STREAMED):
        deltas.add(chunk)
    return deltas.report()


async def async_streamed(url, messages):
    deltas = Deltas()
    async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=TIMEOUT) as client:
        async for chunk in await client.chat.completions.create(model=MODEL, messages=messages, **STREAMED):
            deltas.add(chunk)
    return deltas.report()


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


def refused(client, unarmed):
    """The error the client raises for a question the model refuses."""
    try:
        client.chat.completions.create(model=MODEL, messages=task(unarmed), tools=[CHARGE_CARD])
    except openai.BadRequestError as e:
        return {"status": e.status_code, "type": e.type, "code": e.code, "message": e.body.get("message")}
    raise AssertionError(f"expected a BadRequestError for the unarmed operation {unarmed}, found an answer")


def main():
    url, operation, unarmed = sys.argv[1], sys.argv[2], sys.argv[3]
    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=TIMEOUT)
    messages = task(operation)
    report = {"openai": openai.__version__}
    report["plain"] = plain(client, messages)
    report["streamed"] = streamed(client, messages)
    report["helper"] = helper(client, messages, [CHARGE_CARD])
    report["async_streamed"] = asyncio.run(async_streamed(url, messages))
    done = answered(messages, report["streamed"]["calls"][0])
    report["final"] = plain(client, done)
    report["final_streamed"] = helper(client, done, [CHARGE_CARD])
    report["refused"] = refused(client, unarmed)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
