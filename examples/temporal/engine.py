"""What the two Temporal examples share (naive.py, corrected.py): a Temporal client and worker on
the server the harness runs beside this process (KILLPOINT_SERVICE_TEMPORAL_ADDR), on an asyncio
loop of their own, and `run(op_id)`: the operation's workflow (its id the operation id) started or,
after a restart, joined, and waited for.

The worker keeps no workflow in its cache (max_cached_workflows=0): a killed worker's cached
("sticky") workflows would otherwise wait out the sticky queue's timeout before another worker
takes them. Workflows run unsandboxed: they call nothing but activities and timers.
"""

import asyncio
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_shell as ks  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.common import WorkflowIDConflictPolicy  # noqa: E402
from temporalio.worker import UnsandboxedWorkflowRunner, Worker  # noqa: E402

TASK_QUEUE = "killpoint"
CONNECT_S = 20  # the dev server answers a second or so after its port opens


class Engine:
    def __init__(self, workflow, activities):
        self.workflow, self.activities = workflow, activities
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="temporal", daemon=True).start()
        self.client = None

    def call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def start(self):
        """Connects (the server may still be starting: tried again under a deadline) and starts
        the worker, which picks up what the server holds for this task queue."""
        self.client = self.call(self._connect())
        worker = Worker(self.client, task_queue=TASK_QUEUE, workflows=[self.workflow],
                        activities=self.activities, activity_executor=ThreadPoolExecutor(4),
                        workflow_runner=UnsandboxedWorkflowRunner(), max_cached_workflows=0)
        asyncio.run_coroutine_threadsafe(worker.run(), self.loop)

    async def _connect(self):
        addr = os.environ["KILLPOINT_SERVICE_TEMPORAL_ADDR"]
        deadline = time.monotonic() + CONNECT_S
        while True:
            try:
                client = await Client.connect(addr)
                await client.count_workflows()  # the `default` namespace answers
                return client
            except Exception as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no Temporal server answering at {addr} within {CONNECT_S}s: {error!r}")
                await asyncio.sleep(0.1)

    def run(self, op_id):
        """The operation's workflow, started or joined (a restart finds it running), to its end."""
        async def run():
            handle = await self.client.start_workflow(
                self.workflow.run, op_id, id=op_id, task_queue=TASK_QUEUE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING)
            await handle.result()
        try:
            self.call(run())
        except Exception as error:  # the shell looks at the operation again later
            ks.log(f"{op_id}: workflow: {error!r}")

    def serve(self):
        ks.serve(run=self.run, start=self.start)
