#!/usr/bin/env python3
"""A Temporal workflow as a killpoint runtime, written the corrected way (expected to PASS).

    workflow Operation:  loop { round (activity) ; workflow.sleep(pause) }

The server retries an activity whose worker went away, as in naive.py; what makes the retry safe
is the activity itself: one round of the Python kit's `ks.execute`, which starts from the
operation's durable state, looks the effect up first when a request may be out, sends with the
operation id as the key (the same on every retry), and checks the policy before each new attempt.
Between rounds the workflow sleeps on a durable timer of the server's.
"""

from datetime import timedelta

from engine import Engine, ks
from temporalio import activity, workflow


@activity.defn
def round_of(op_id):
    return ks.execute(op_id)  # None: settled; else how long to wait before the next round


@workflow.defn
class Operation:
    @workflow.run
    async def run(self, op_id):
        while (pause := await workflow.execute_activity(
                round_of, op_id, start_to_close_timeout=timedelta(seconds=3))) is not None:
            await workflow.sleep(pause)


if __name__ == "__main__":
    Engine(Operation, [round_of]).serve()
