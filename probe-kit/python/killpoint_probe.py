"""The killpoint contract's plumbing for a Python runtime (standard library only): the
environment (CONTRACT.md section 2), the ready line, and the boundary probe (section 7).

    import killpoint_probe as kp
    env = kp.Env.from_environ()           # CONTRACT.md section 2; exits naming a bad variable
    kp.connect(env.probe_socket)          # before the ready line (section 2-7); None: probe off
    server = ThreadingHTTPServer(env.listen, Api)
    kp.ready(server.server_address)       # prints KILLPOINT_READY {...}; boundaries armed
    ...
    kp.boundary("before_dispatch", op_id, attempt)
    kp.boundary("after_delivery_send", op_id, send, destination="ledger")

Off (no probe socket, or before `ready`), `boundary` returns at once. On, it writes one JSON line
and blocks the calling thread until the harness answers {"action":"resume"} -- or kills the
process right there. Announcements from several threads are serialised (section 7-2). If the
harness goes away the process exits with status 70 (section 7-3), noticed even while idle.
"""

import json
import os
import queue
import socket
import sys
import threading

CONTRACT = "killpoint-contract/9"
EXIT_PROBE_LOST = 70
# What a runtime announces. `after_submit` and `after_dispatch` are reached by the harness and
# the provider from outside; announcing them is an error.
BOUNDARIES = ("before_dispatch", "after_provider_success", "after_result_write",
              "after_delivery_send", "after_policy_revocation")


def _log(message):
    print(f"killpoint_probe: {message}", file=sys.stderr, flush=True)


class Env:
    """The variables of CONTRACT.md section 2, parsed."""

    def __init__(self, environ):
        def get(name, default=None):
            return environ.get(name) or default

        def required(name, expected):
            value = get(name)
            if value is None:
                sys.exit(f"{name} is not set; expected {expected} ({CONTRACT}, CONTRACT.md section 2)")
            return value

        def number(name, default):
            value = get(name, str(default))
            if not value.isdigit() or int(value) < 1:
                sys.exit(f"{name} should be a whole number above 0, found {value!r}")
            return int(value)

        contract = required("KILLPOINT_CONTRACT", "the contract version")
        if contract != CONTRACT:
            sys.exit(f"KILLPOINT_CONTRACT is {contract!r}, but this runtime implements {CONTRACT!r} only")
        self.data_dir = required("KILLPOINT_DATA_DIR", "a directory for durable state")
        host, _, port = required("KILLPOINT_LISTEN", "an address like 127.0.0.1:0").rpartition(":")
        self.listen = (host, int(port))
        self.provider_url = required("KILLPOINT_PROVIDER_URL", "an http:// base URL").rstrip("/")
        self.consumers_url = required("KILLPOINT_CONSUMERS_URL", "an http:// base URL").rstrip("/")
        self.policy_url = required("KILLPOINT_POLICY_URL", "an http:// base URL").rstrip("/")
        # Optional: only a task (section 12) needs the model, and without it a task waits.
        self.model_url = get("KILLPOINT_MODEL_URL", "").rstrip("/") or None
        required("KILLPOINT_INCARNATION", "which life of the runtime this is: 1, 2, ...")
        self.incarnation = number("KILLPOINT_INCARNATION", 1)  # the fencing token (section 9)
        self.probe_socket = get("KILLPOINT_PROBE_SOCKET")
        self.delivery_max_attempts = number("KILLPOINT_DELIVERY_MAX_ATTEMPTS", 5)
        self.retry_base_s = number("KILLPOINT_RETRY_BASE_MS", 25) / 1000.0

    @classmethod
    def from_environ(cls, environ=None):
        return cls(os.environ if environ is None else environ)


# ---- the boundary probe (section 7) -------------------------------------------------------

_sock = None
_armed = False
_lock = threading.Lock()           # one message, one answer, then the next
_answers = queue.Queue(maxsize=1)  # lines from the harness, read all the time by _read_answers


def connect(path):
    """Connects to the probe socket; `None` (certified without the probe) leaves it off."""
    global _sock
    if not path:
        return
    if _sock is not None:
        raise RuntimeError("the probe is connected once, for the whole life of the process")
    _sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _sock.connect(path)  # fails loudly if the harness is not listening
    threading.Thread(target=_read_answers, name="killpoint-probe", daemon=True).start()


def connected():
    return _sock is not None


def ready(address):
    """Prints the ready line for the API bound at (host, port) and arms the boundaries."""
    global _armed
    line = {"contract": CONTRACT, "api": f"http://{address[0]}:{address[1]}", "probe": connected()}
    sys.stdout.write("KILLPOINT_READY " + json.dumps(line, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    _armed = connected()


def boundary(name, operation_id, attempt, destination=None):
    """Announces a boundary and returns once the harness says `resume` (at once when off)."""
    if not _armed:
        if _sock is not None:
            _lost(f"{name} of {operation_id} announced before the ready line (CONTRACT.md 2-8)")
        return
    if name not in BOUNDARIES:
        raise ValueError(f"expected a boundary the runtime announces, one of {BOUNDARIES}, "
                         f"found {name!r}")
    if (destination is None) != (name != "after_delivery_send"):
        raise ValueError(f"only after_delivery_send names a destination; found {name!r} with "
                         f"destination {destination!r}")
    message = {"boundary": name, "operation_id": operation_id, "attempt": int(attempt)}
    if destination is not None:
        message["destination"] = destination
    line = json.dumps(message, separators=(",", ":"))
    with _lock:
        if not _answers.empty():
            _lost(f"the harness sent {_answers.get()!r} before being asked anything")
        try:
            _sock.sendall(line.encode() + b"\n")
        except OSError as error:
            _lost(f"writing {line}: {error}")
        answer = _answers.get()
        try:
            action = json.loads(answer).get("action")
        except (ValueError, AttributeError):
            action = None
        if action != "resume":
            _lost(f'expected {{"action":"resume"}} after {line}, found {answer!r}')


def quiet():
    """Returns once no announcement is waiting for its answer (at once when off)."""
    if _armed:
        with _lock:
            pass


def _read_answers():
    # Reading all the time, not only while waiting for an answer, is what notices a harness
    # that went away while the runtime was idle.
    reader = _sock.makefile("rb")
    for raw in reader:
        _answers.put(raw.decode(errors="replace").rstrip("\r\n"))
    _lost("the harness closed the connection")


def _lost(why):
    _log(f"{why}; exiting")
    os._exit(EXIT_PROBE_LOST)  # the whole process, from any thread, at once
