"""What the hostile runtimes in this directory share (tests/hostile.rs runs them).

Each script is one misbehaviour on top of a minimal contract speaker (CONTRACT.md): an API that
accepts submissions and reports a state the script chooses, the probe, the ready line. Standard
library only.

`argv[1]` is the test's marker. It is exported to every process the runtime starts, so the test
finds all of them in /proc (`KILLPOINT_HOSTILE_MARKER` in their environment).
"""

import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER = sys.argv[1] if len(sys.argv) > 1 else "no-marker"
os.environ["KILLPOINT_HOSTILE_MARKER"] = MARKER
INCARNATION = int(os.environ.get("KILLPOINT_INCARNATION", "0"))
NAME = os.path.basename(sys.argv[0])


def log(message):
    print(f"[{NAME} incarnation {INCARNATION}] {message}", file=sys.stderr, flush=True)


def block_forever():
    threading.Event().wait()


class Runtime:
    """The API (POST/GET /operations), the probe and the ready line; `on_submit(id)` runs on its
    own thread once a new submission has been answered `202`."""

    def __init__(self, connect_probe=True, declare_probe=None, on_submit=None):
        self.states = {}
        self.lock = threading.Lock()
        self.on_submit = on_submit
        self.declare_probe = connect_probe if declare_probe is None else declare_probe
        self.probe = None
        path = os.environ.get("KILLPOINT_PROBE_SOCKET")
        if connect_probe and path:
            self.probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.probe.connect(path)
            self.answers = self.probe.makefile("rb")
        runtime = self

        class Api(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def do_GET(self):
                op = self.path.rsplit("/", 1)[-1]
                with runtime.lock:
                    state = runtime.states.get(op)
                if state is None:
                    return self.answer(404, {"error": f"no operation {op}"})
                self.answer(200, {"operation_id": op, "execution": state, "paused": False, "attempts": 0,
                                  "deliveries": [], "audit": []})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                op = body["operation_id"]
                with runtime.lock:
                    new = op not in runtime.states
                    state = runtime.states.setdefault(op, "INTENT_RECORDED")
                # A resubmission (the harness sends them after restarts) is 200 and starts nothing.
                self.answer(202 if new else 200, {"operation_id": op, "execution": state})
                if new and runtime.on_submit:
                    threading.Thread(target=runtime.on_submit, args=(op,), daemon=True).start()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Api)

    def set_state(self, op, execution):
        with self.lock:
            self.states[op] = execution

    def ready(self):
        """Prints the ready line and serves the API on a background thread."""
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        ready = {"contract": os.environ.get("KILLPOINT_CONTRACT", "killpoint-contract/9"),
                 "api": f"http://127.0.0.1:{self.server.server_address[1]}", "probe": self.declare_probe}
        sys.stdout.write("KILLPOINT_READY " + json.dumps(ready) + "\n")
        sys.stdout.flush()
        log(f"ready on {ready['api']}")

    def send(self, data):
        """Writes raw bytes on the probe and returns the harness's answer line (b"" if it closed)."""
        self.probe.sendall(data)
        return self.answers.readline()

    def announce(self, boundary, op, attempt):
        message = {"boundary": boundary, "operation_id": op, "attempt": attempt}
        return self.send((json.dumps(message) + "\n").encode())
