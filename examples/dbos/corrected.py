#!/usr/bin/env python3
"""A DBOS workflow as a killpoint runtime, written the corrected way (expected to PASS).

One workflow per operation, its workflow id the operation id, its steps recorded in DBOS's SQLite
system database under KILLPOINT_DATA_DIR. After a crash DBOS recovers the workflow: it replays it,
skipping the steps whose output it recorded and running again the one that was interrupted. The
steps are examples/frameworks/shell.py's corrected ones:

  * the key is the operation id (= the workflow id), the same in every replay;
  * `call`, replayed after a crash, sends nothing: `dispatch` looks the effect up first;
  * `dispatch` checks the policy in the step that records DISPATCHED;
  * waiting between rounds is DBOS.sleep, durable like a step.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "frameworks"))
import shell  # noqa: E402
from dbos import DBOS, SetWorkflowID  # noqa: E402

STEPS = None  # shell.Steps, once the worker exists


@DBOS.step()
def dispatch(op_id):
    return STEPS.dispatch(op_id)


@DBOS.step()
def call(op_id, attempt):
    return STEPS.call(op_id, attempt)


@DBOS.step()
def record(op_id, effect, attempt, how):
    return STEPS.record(op_id, effect, attempt, how)


@DBOS.workflow()
def operation(op_id):
    while True:
        step = dispatch(op_id)
        if step["outcome"] == shell.SETTLED:
            return
        if step["outcome"] == shell.FOUND:
            record(op_id, step["effect"], step["attempt"], "found by lookup")
            return
        if step["outcome"] == shell.DISPATCHED:
            step = call(op_id, step["attempt"])
            if step["outcome"] == shell.SETTLED:
                return
            if step["outcome"] == shell.SUCCESS:
                record(op_id, step["effect"], step["attempt"], f"attempt {step['attempt']}")
                return
        DBOS.sleep(shell.pause_before(step["outcome"], step.get("attempt", 0)))


def main():
    def after_ready(worker):
        global STEPS
        STEPS = shell.Steps(worker)
        start(worker)

        def execute(op_id):
            with SetWorkflowID(op_id):
                DBOS.start_workflow(operation, op_id).get_result()

        shell.FrameworkWorker.execute = staticmethod(execute)

    shell.runtime.main(worker_class=shell.FrameworkWorker, after_ready=after_ready)


def start(worker):
    """Launches DBOS (after the ready line: its recovery may announce boundaries) and waits for
    the workflows it recovers, so that the worker never runs one of them a second time at once."""
    DBOS(config={"name": "killpoint-dbos",
                 "system_database_url": f"sqlite:///{os.path.join(worker.cfg.data_dir, 'dbos.sqlite')}",
                 "log_level": "WARNING"})
    DBOS.launch()
    for pending in DBOS.list_workflows(status="PENDING"):
        try:
            DBOS.retrieve_workflow(pending.workflow_id).get_result()
        except Exception as error:  # the worker looks at the operation again
            shell.runtime.log(f"recovered workflow {pending.workflow_id} failed: {error!r}")


if __name__ == "__main__":
    main()
