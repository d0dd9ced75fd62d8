#!/usr/bin/env python3
"""A Restate service as a killpoint runtime, written the corrected way (expected to PASS).

    Operation/run(op_id):  loop { ctx.run(round) ; ctx.sleep(pause) }

The server retries an invocation whose worker went away and replays its journal, as in naive.py:
a `ctx.run` whose result it had not journaled runs again. What makes that safe is the step itself:
one round of the Python kit's `ks.execute`, which starts from the operation's durable state, looks
the effect up first when a request may be out, sends with the operation id as the key (the same on
every retry), and checks the policy before each new attempt. Between rounds the handler sleeps on
a durable timer of the server's.
"""

from datetime import timedelta

import restate
from engine import Engine, ks, service

operation = service()


@operation.handler()
async def run(ctx: restate.Context, op_id: str) -> None:
    # None: settled; else how long to wait before the next round
    while (pause := await ctx.run_typed("round", ks.execute, restate.RunOptions(), op_id)) is not None:
        await ctx.sleep(timedelta(seconds=pause))


if __name__ == "__main__":
    Engine(operation).serve()
