"""What the two Restate examples share (naive.py, corrected.py): the worker's Restate deployment
(the SDK's ASGI app served by Hypercorn over HTTP/2, as the SDK's docs do) on a loopback port,
registered with the server the harness runs beside this process (its admin API,
KILLPOINT_SERVICE_RESTATE_ADMIN_ADDR), and `run(op_id)`: the operation's invocation, sent to the
server's ingress (KILLPOINT_SERVICE_RESTATE_ADDR) with the operation id as its idempotency key —
started once, joined after a restart — and waited for.

The deployment's port is picked once and kept in the data dir: Restate pins an invocation to the
deployment it started on (sys_invocation.pinned_deployment_id) and retries it there, so a worker
that came back on another port would be a new deployment the invocation never reaches.
The server retries an invocation whose worker went away quickly (the service's retry policy,
100 ms doubling to 500 ms), as a restarted worker is back within seconds.
"""

import asyncio
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.request
from datetime import timedelta

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_shell as ks  # noqa: E402
import restate  # noqa: E402
from hypercorn.asyncio import serve  # noqa: E402
from hypercorn.config import Config  # noqa: E402

CONNECT_S = 30  # its admin API answers a moment after its ingress port opens (0.2-0.3 s here)
RETRY = restate.InvocationRetryPolicy(initial_interval=timedelta(milliseconds=100),
                                      max_interval=timedelta(milliseconds=500))


def service():
    return restate.Service("Operation", invocation_retry_policy=RETRY)


class Engine:
    def __init__(self, service):
        self.app = restate.app(services=[service])
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="restate", daemon=True).start()

    def start(self):
        """Serves the deployment on its kept port, then registers it with the server (again after
        a restart: the same URI with the same services is the same deployment, 200 not 201)."""
        port = self._port()
        config = Config()
        config.bind, config.accesslog, config.errorlog = [f"127.0.0.1:{port}"], None, None
        # Off the main thread: no signal handlers (Hypercorn's default), it serves till the end.
        serving = asyncio.run_coroutine_threadsafe(
            serve(self.app, config, shutdown_trigger=lambda: asyncio.Future()), self.loop)
        serving.add_done_callback(lambda f: ks.log(f"the deployment stopped serving: {f.exception()!r}"))
        self._register(port)

    def _register(self, port):
        url = f"http://{os.environ['KILLPOINT_SERVICE_RESTATE_ADMIN_ADDR']}/deployments"
        body = json.dumps({"uri": f"http://127.0.0.1:{port}"}).encode()
        deadline = time.monotonic() + CONNECT_S
        while True:  # the server (its admin API, its cluster) or our own port may not answer yet
            try:
                request = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
                with urllib.request.urlopen(request, timeout=CONNECT_S) as answer:
                    return ks.log(f"registered http://127.0.0.1:{port}: {answer.status}")
            except Exception as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no registration at {url} within {CONNECT_S}s: {error!r}")
                time.sleep(0.1)

    def _port(self):
        path = os.path.join(ks.running().env.data_dir, "restate-deployment-port")
        if not os.path.exists(path):
            port = _free_port()
            with open(path + ".tmp", "w") as f:
                f.write(str(port))
                f.flush()
                os.fsync(f.fileno())
            os.replace(path + ".tmp", path)
            directory = os.open(os.path.dirname(path), os.O_RDONLY)
            try:  # the rename too: a power loss must not take the port back
                os.fsync(directory)
            finally:
                os.close(directory)
        with open(path) as f:
            return int(f.read())

    def run(self, op_id):
        """The operation's invocation, started or joined (the idempotency key), to its end."""
        request = urllib.request.Request(
            f"http://{os.environ['KILLPOINT_SERVICE_RESTATE_ADDR']}/Operation/run", method="POST",
            data=json.dumps(op_id).encode(), headers={"content-type": "application/json", "idempotency-key": op_id})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                answer.read()
        except Exception as error:  # the shell looks at the operation again later
            ks.log(f"{op_id}: invocation: {error!r}")

    def serve(self):
        ks.serve(run=self.run, start=self.start)


def _free_port():
    """A free loopback port below the kernel's ephemeral range, at random: each incarnation binds
    it again, and a port in that range could be any outgoing connection's between two of them."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 10_000
    for port in [random.randrange(10_000, low) for _ in range(64) if low > 10_000] + [0]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError("no free port on 127.0.0.1")
