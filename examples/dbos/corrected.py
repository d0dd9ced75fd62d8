#!/usr/bin/env python3
"""A DBOS workflow as a killpoint runtime, written the corrected way (expected to PASS).

One workflow per operation, its workflow id the operation id, its steps recorded in DBOS's system
database: SQLite under KILLPOINT_DATA_DIR, or PostgreSQL beside the worker when the harness runs
one (`--services examples/dbos/postgres.toml`, KILLPOINT_SERVICE_POSTGRES_ADDR). After a crash DBOS recovers the workflow: it replays it,
returning the outputs of the steps it recorded and running again the one that was interrupted.
Everything else is the Python kit's contract shell (probe-kit/python, `killpoint_shell`):

  * each step is one round of `ks.execute`, which starts from the operation's durable state: a
    replayed round whose request may be out looks the effect up first, with the same key (the
    operation id, = the workflow id), and checks the policy just before each new attempt;
  * waiting between rounds is DBOS.sleep, durable like a step, so a replay meets the same steps;
  * DBOS is launched again, with a bounded backoff, until its database answers: `DBOS.launch()`
    gives up at once when Postgres is away (its migrations are not retried), and a worker that
    exits on that leaves its operations stuck (CONTRACT.md §2-11). Once launched, DBOS retries
    its own queries, its start-up recovery's included, until the database answers again.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_shell as ks  # noqa: E402
from dbos import DBOS, SetWorkflowID  # noqa: E402


@DBOS.step()
def round_of(op_id):
    return ks.execute(op_id)  # None: settled; else how long to wait before the next round


@DBOS.workflow()
def operation(op_id):
    while (pause := round_of(op_id)) is not None:
        DBOS.sleep(pause)


def run(op_id):
    with SetWorkflowID(op_id):
        # A workflow DBOS already holds (run again after a restart) gets a handle that
        # polls, by default each second.
        DBOS.start_workflow(operation, op_id).get_result(polling_interval_sec=0.05)


def system_database():
    """DBOS's system database: PostgreSQL beside the worker when the harness runs one
    (postgres.toml: a fresh cluster per run), else SQLite in the worker's data dir."""
    postgres = os.environ.get("KILLPOINT_SERVICE_POSTGRES_ADDR")
    if postgres:
        return f"postgresql://dbos@{postgres}/killpoint_dbos"
    return f"sqlite:///{os.path.join(ks.running().env.data_dir, 'dbos.sqlite')}"


def launch(backoff_s=0.1, longest_s=2.0):
    """DBOS launched, however long its database is away: a launch that failed is discarded
    (`destroy`: it is half made) and made again after a pause that doubles up to `longest_s`."""
    while True:
        DBOS(config={"name": "killpoint-dbos",
                     "system_database_url": system_database(),
                     "log_level": "WARNING"})
        try:
            DBOS.launch()
            return
        except Exception as error:
            ks.log(f"DBOS did not launch ({type(error).__name__}); again in {backoff_s:.1f}s")
            DBOS.destroy()
            time.sleep(backoff_s)
            backoff_s = min(2 * backoff_s, longest_s)


def start():
    """Launches DBOS (after the ready line: its recovery may announce boundaries) and waits for
    the workflows it recovers, so that the worker never runs one of them a second time at once."""
    launch()
    for pending in DBOS.list_workflows(status="PENDING"):
        try:
            # The handle polls the system database, by default each second: the worker waits for it.
            DBOS.retrieve_workflow(pending.workflow_id).get_result(polling_interval_sec=0.05)
        except Exception as error:  # the worker looks at the operation again
            ks.log(f"recovered workflow {pending.workflow_id} failed: {error!r}")


if __name__ == "__main__":
    ks.serve(run=run, start=start)
