#!/usr/bin/env python3
"""A killpoint runtime in Python 3, standard library only.

It implements `killpoint-contract/5` (CONTRACT.md) and nothing else: it was written from the
contract document alone, to show that the document is enough to build a certifiable runtime.

Shape of the program:
  * durable state lives in one SQLite database under KILLPOINT_DATA_DIR (WAL, synchronous=FULL);
    every state change is one transaction, so a SIGKILL leaves either the old or the new state;
  * HTTP server threads answer the API (section 3); they only insert and read rows;
  * one worker (the main thread) does everything else (provider calls, lookups, policy checks,
    deliveries), one step at a time, in submission order. One worker keeps the story deterministic and the
    boundary probe trivially serialised;
  * the boundary probe (section 7) and the ready line come from the kit, `killpoint_probe`
    (probe-kit/python, found beside this file in the repository, or `pip install`ed).

Key choices (see README.md for the contract questions they answer):
  * provider Idempotency-Key = the operation id; delivery key = "<operation id>:<destination>".
    Both are derived from durable data, so they are the same in every incarnation;
  * at most MAX_EXECUTION_ATTEMPTS (5) provider attempts per operation (section 4.11).
"""

import contextlib
import json
import os
import re
import sqlite3
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The kit of the repository this file is in, when it is there (so that the examples always run
# the kit as it is here); elsewhere, the one installed with `pip install probe-kit/python`.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "probe-kit", "python"))
import killpoint_probe  # noqa: E402

CONTRACT = "killpoint-contract/5"
KINDS = ("idempotent_by_key", "non_idempotent_with_lookup", "non_idempotent_no_lookup",
         "safely_repeatable")
LOOKUP_KINDS = ("idempotent_by_key", "non_idempotent_with_lookup")
ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")

MAX_EXECUTION_ATTEMPTS = 5     # section 4.11: a runtime MAY bound attempts; the reference uses 5
EXECUTION_RETRY_BASE_S = 0.05  # pause before reconciling an UNKNOWN answered in this life, doubling
RETRY_LATER_S = 0.25           # policy service or lookup unreachable: try again after this
HTTP_TIMEOUT_S = 10.0          # a provider answer later than this is an UNKNOWN outcome


def log(message):
    # stdout carries the ready line; everything else goes to stderr, which the harness keeps
    # and shows in failure reports.
    print(f"[python-runtime {os.getpid()}] {message}", file=sys.stderr, flush=True)


def now():
    return time.time()


# --------------------------------------------------------------------------------------------
# Configuration (section 2)
# --------------------------------------------------------------------------------------------

class Config:
    def __init__(self, env):
        contract = env.get("KILLPOINT_CONTRACT", CONTRACT)
        if contract != CONTRACT:
            sys.exit(f"this runtime implements {CONTRACT}, the harness asked for {contract}")
        missing = [name for name in ("KILLPOINT_DATA_DIR", "KILLPOINT_INCARNATION",
                                     "KILLPOINT_PROVIDER_URL",
                                     "KILLPOINT_CONSUMERS_URL", "KILLPOINT_POLICY_URL")
                   if not env.get(name)]
        if missing:
            sys.exit(f"missing environment variable(s): {', '.join(missing)}")
        self.data_dir = env["KILLPOINT_DATA_DIR"]
        # The fencing token (section 9): sent on every request, and the store's fence.
        self.incarnation = int(env["KILLPOINT_INCARNATION"])
        host, _, port = env.get("KILLPOINT_LISTEN", "127.0.0.1:0").rpartition(":")
        self.listen = (host or "127.0.0.1", int(port))
        self.provider = env["KILLPOINT_PROVIDER_URL"].rstrip("/")
        self.consumers = env["KILLPOINT_CONSUMERS_URL"].rstrip("/")
        self.policy = env["KILLPOINT_POLICY_URL"].rstrip("/")
        self.probe_socket = env.get("KILLPOINT_PROBE_SOCKET") or None
        self.delivery_max_attempts = int(env.get("KILLPOINT_DELIVERY_MAX_ATTEMPTS", "5"))
        self.retry_base_s = int(env.get("KILLPOINT_RETRY_BASE_MS", "25")) / 1000.0


# --------------------------------------------------------------------------------------------
# Durable state
# --------------------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS fence (  -- the newest incarnation that opened the store (section 9)
    only INTEGER PRIMARY KEY CHECK (only = 1),
    incarnation INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS operations (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,  -- submission order = processing order
    id              TEXT NOT NULL UNIQUE,
    request         TEXT NOT NULL,   -- canonical JSON of the submission, to detect a 409
    tenant          TEXT NOT NULL,
    actor           TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    tool_kind       TEXT NOT NULL,
    arguments       TEXT NOT NULL,   -- JSON, passed to the provider as submitted
    destinations    TEXT NOT NULL,   -- JSON list, in submission order
    execution       TEXT NOT NULL,
    paused          INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT NOT NULL,
    provider_ref    TEXT,
    result          TEXT,            -- JSON
    failure         TEXT,            -- reason text, NULL unless FAILED
    next_at         REAL NOT NULL DEFAULT 0   -- wall clock: not before this time
);
CREATE TABLE IF NOT EXISTS deliveries (
    operation_id    TEXT NOT NULL,
    position        INTEGER NOT NULL,
    destination     TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT NOT NULL,
    last_error      TEXT,
    next_at         REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (operation_id, destination)
);
CREATE TABLE IF NOT EXISTS audit (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id    TEXT NOT NULL,
    event           TEXT NOT NULL,
    detail          TEXT NOT NULL
);
"""


class Store:
    """One SQLite connection shared by all threads behind one lock.

    The load is tiny, so a single connection is simpler than a pool and rules out
    SQLITE_BUSY between our own threads. Nothing slow (network, probe) runs under the lock.
    """

    def __init__(self, data_dir, incarnation):
        # Never made here: the harness makes it before the first start, so a missing or unreadable
        # one means the state is gone, and starting afresh would forget what was accepted (§2-4).
        if not os.path.isdir(data_dir) or not os.access(data_dir, os.R_OK | os.W_OK | os.X_OK):
            sys.exit(f"KILLPOINT_DATA_DIR {data_dir} is missing or unreadable; refusing to start afresh")
        self.incarnation = incarnation
        self.lock = threading.Lock()
        # isolation_level=None: we write BEGIN/COMMIT ourselves, so a transaction is exactly
        # what `tx()` encloses and nothing is left open by the sqlite3 module's implicit rules.
        self.db = sqlite3.connect(os.path.join(data_dir, "runtime.sqlite3"),
                                  isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # a COMMIT is on disk before we go on
        self.db.executescript("BEGIN IMMEDIATE;" + SCHEMA + "COMMIT;")
        # Raise the fence: from this commit on, an older incarnation's transactions fail.
        self.db.execute("BEGIN IMMEDIATE")
        row = self.db.execute("SELECT incarnation FROM fence").fetchone()
        if row is not None and row[0] > incarnation:
            fenced(f"incarnation {row[0]} has already opened the store")
        self.db.execute("INSERT INTO fence (only, incarnation) VALUES (1, ?) ON CONFLICT (only) "
                        "DO UPDATE SET incarnation = excluded.incarnation", (incarnation,))
        self.db.execute("COMMIT")

    @contextlib.contextmanager
    def tx(self):
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            # The fence, checked under the write lock of the transaction it guards.
            newest = self.db.execute("SELECT incarnation FROM fence").fetchone()[0]
            if newest != self.incarnation:
                fenced(f"the store is fenced by incarnation {newest}")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    @contextlib.contextmanager
    def read(self):
        with self.lock:
            yield self.db

    def operation(self, op_id):
        with self.read() as db:
            return db.execute("SELECT * FROM operations WHERE id = ?", (op_id,)).fetchone()


def audit(db, op_id, event, detail):
    db.execute("INSERT INTO audit (operation_id, event, detail) VALUES (?, ?, ?)",
               (op_id, event, detail))


# --------------------------------------------------------------------------------------------
# Outbound HTTP (provider, consumers, policy): loopback only
# --------------------------------------------------------------------------------------------

class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a redirect could lead off loopback; we treat it as a plain answer


# No ProxyHandler settings: urllib would otherwise honour http_proxy from the environment and
# send our traffic to another address, which the contract forbids.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)


def fenced(why):
    """A newer incarnation owns the data dir (section 9): not another request, not another
    commit. The open transaction, if any, dies uncommitted with the process."""
    log(f"fenced: {why}; exiting")
    os._exit(3)


INCARNATION = None  # set by main(): the fencing token every request carries


def http(method, url, body=None, key=None):
    """Returns (status, parsed JSON body or None). Raises OSError/ValueError-like errors when no
    complete answer was read (connection refused or dropped, timeout, truncated body)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if key is not None:
        request.add_header("Idempotency-Key", key)
    request.add_header("Killpoint-Incarnation", str(INCARNATION))
    try:
        with OPENER.open(request, timeout=HTTP_TIMEOUT_S) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:  # a complete non-2xx answer
        status, raw = error.code, error.read()
    try:
        answer = json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")
    if status == 409 and isinstance(answer, dict) and answer.get("error") == "fenced":
        fenced(f"{url} answered 409 fenced")
    return status, answer


def check_policy(cfg, op, **subject):
    """True if allowed, a reason string if refused, None if the service could not be asked."""
    body = {"tenant": op["tenant"], "actor": op["actor"], "operation_id": op["id"], **subject}
    try:
        status, answer = http("POST", f"{cfg.policy}/check", body)
    except Exception as error:  # unreachable: we MUST NOT go ahead (section 8)
        log(f"policy unreachable for {op['id']}: {error!r}")
        return None
    if status != 200 or not isinstance(answer, dict) or not isinstance(answer.get("allowed"),
                                                                         bool):
        log(f"policy answered {status} {answer!r} for {op['id']}")
        return None
    return True if answer["allowed"] else str(answer.get("reason") or "refused")


def quote(segment):
    return urllib.parse.quote(segment, safe="")


# --------------------------------------------------------------------------------------------
# The worker: execution (section 4) and delivery (section 6)
# --------------------------------------------------------------------------------------------

def write_success(db, op, effect, how):
    """Inside the caller's transaction: SUCCEEDED with the provider's result, and one PENDING
    delivery per destination (the transactional outbox, 4.5), with its audit line."""
    db.execute("UPDATE operations SET execution = 'SUCCEEDED', paused = 0,"
               " provider_ref = ?, result = ?, failure = NULL WHERE id = ?",
               (effect["provider_ref"], json.dumps(effect["result"]), op["id"]))
    for position, destination in enumerate(json.loads(op["destinations"])):
        db.execute("INSERT INTO deliveries (operation_id, position, destination, state,"
                   " idempotency_key) VALUES (?, ?, ?, 'PENDING', ?)",
                   (op["id"], position, destination, f"{op['id']}:{destination}"))
    audit(db, op["id"], "succeeded", f"provider_ref {effect['provider_ref']} ({how})")


class Worker:
    def __init__(self, cfg, store):
        self.cfg, self.store = cfg, store
        self.wake = threading.Event()  # set by the API when new work arrives

    def run(self):
        while True:
            try:
                wait = self.step()
            except Exception:
                log("worker step failed:\n" + traceback.format_exc())
                wait = RETRY_LATER_S
            if wait:
                self.wake.wait(wait)
                self.wake.clear()

    def step(self):
        """Do the first due piece of work; return how long to sleep if there is none.

        Order: by submission; for one operation, its execution before its deliveries,
        deliveries in the order of `destinations`. Work that is waiting (backoff) is skipped.
        """
        t = now()
        with self.store.read() as db:
            op = db.execute(
                "SELECT * FROM operations WHERE paused = 0 AND next_at <= ?"
                " AND execution IN ('INTENT_RECORDED', 'UNKNOWN') ORDER BY seq LIMIT 1",
                (t,)).fetchone()
            delivery = db.execute(
                "SELECT d.*, o.seq FROM deliveries d JOIN operations o ON o.id = d.operation_id"
                " WHERE d.state IN ('PENDING', 'SENT') AND d.next_at <= ?"
                " ORDER BY o.seq, d.position LIMIT 1", (t,)).fetchone()
            later = db.execute(
                "SELECT MIN(n) FROM ("
                " SELECT next_at AS n FROM operations WHERE paused = 0"
                "  AND execution IN ('INTENT_RECORDED', 'UNKNOWN')"
                " UNION ALL SELECT next_at FROM deliveries WHERE state IN ('PENDING', 'SENT'))"
            ).fetchone()[0]
        if op is not None and (delivery is None or op["seq"] <= delivery["seq"]):
            if op["execution"] == "INTENT_RECORDED":
                self.attempt(op)
            else:
                self.reconcile(op)
            return 0
        if delivery is not None:
            self.deliver(self.store.operation(delivery["operation_id"]), delivery)
            return 0
        return 1.0 if later is None else min(1.0, max(0.001, later - now()))

    # --- execution ------------------------------------------------------------------------

    def defer(self, op, seconds):
        with self.store.tx() as db:
            db.execute("UPDATE operations SET next_at = ? WHERE id = ?", (now() + seconds, op["id"]))

    def reconcile(self, op):
        """An UNKNOWN outcome (section 4.9): find out what happened before anything else."""
        kind = op["tool_kind"]
        if kind == "non_idempotent_no_lookup":
            self.pause(op, "no lookup for this tool; an operator must decide")
            return
        if kind == "safely_repeatable":
            self.attempt(op)  # repeating is harmless: a new attempt with the same key
            return
        try:
            status, body = http("GET", f"{self.cfg.provider}/tools/{quote(op['tool_name'])}"
                                f"/effects?idempotency_key={quote(op['idempotency_key'])}")
        except Exception as error:
            log(f"lookup for {op['id']} failed: {error!r}; trying again later")
            return self.defer(op, RETRY_LATER_S)
        if status == 200 and valid_effect(body):
            # Found: a lookup reads what happened, so no policy check is needed (section 8).
            self.record_success(op, body, op["attempts"], "found by lookup")
        elif status == 404:
            with self.store.tx() as db:
                audit(db, op["id"], "lookup_not_found", f"after {op['attempts']} attempt(s)")
            self.attempt(op)
        else:
            log(f"lookup for {op['id']} answered {status} {body!r}; trying again later")
            self.defer(op, RETRY_LATER_S)

    def attempt(self, op):
        """A new attempt: bound, policy, write-ahead DISPATCHED, then the provider (4.2-4.7)."""
        n = op["attempts"] + 1
        if op["attempts"] >= MAX_EXECUTION_ATTEMPTS:
            if op["tool_kind"] in LOOKUP_KINDS:  # we only get here after a lookup found nothing
                self.fail(op, f"no effect after {op['attempts']} attempts", "attempts_exhausted")
            else:
                self.pause(op, f"outcome still unknown after {op['attempts']} attempts")
            return
        verdict = check_policy(self.cfg, op, tool=op["tool_name"])
        if verdict is None:
            return self.defer(op, RETRY_LATER_S)
        if verdict is not True:
            if op["tool_kind"] == "safely_repeatable" and op["attempts"] > 0:
                # An earlier attempt may have applied, and without a lookup we cannot know:
                # FAILED could be untrue (4.11), so the refusal pauses the operation instead.
                self.pause(op, f"policy: {verdict}; earlier attempt's outcome unknown")
            else:
                self.fail(op, f"policy: {verdict}", "policy_refused")
            killpoint_probe.boundary("after_policy_revocation", op["id"], n)
            return
        killpoint_probe.boundary("before_dispatch", op["id"], n)
        with self.store.tx() as db:  # write-ahead: durable before the provider sees anything
            db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = ?"
                       " WHERE id = ?", (n, op["id"]))
            audit(db, op["id"], "dispatched", f"attempt {n}")
        try:
            status, body = http("POST", f"{self.cfg.provider}/tools/{quote(op['tool_name'])}",
                                {"arguments": json.loads(op["arguments"])},
                                key=op["idempotency_key"])
        except Exception as error:  # refused, dropped, timed out, truncated: no answer
            status, body = None, repr(error)
        if status is not None and 200 <= status < 300 and valid_effect(body):
            self.record_success(op, body, n, f"attempt {n}")
        elif status is not None and 400 <= status < 500:
            reason = body.get("error") if isinstance(body, dict) else None
            self.fail(op, f"provider: {reason or body or status}", "failed")
        else:
            # 5xx, no answer, or a 2xx we could not read: the effect may or may not have
            # happened. Not a failure, not permission to retry: reconcile after a short pause.
            with self.store.tx() as db:
                db.execute("UPDATE operations SET execution = 'UNKNOWN', next_at = ?"
                           " WHERE id = ?",
                           (now() + EXECUTION_RETRY_BASE_S * 2 ** (n - 1), op["id"]))
                audit(db, op["id"], "unknown", f"attempt {n}: {status} {body!r}"[:500])

    def record_success(self, op, effect, attempt, how):
        """SUCCEEDED, provider_ref, result and the outbox in one transaction (4.5).

        Nothing about the success may be written before `after_provider_success`, not even an
        audit line: the boundary promises that the success exists in memory only.
        """
        killpoint_probe.boundary("after_provider_success", op["id"], attempt)
        with self.store.tx() as db:
            write_success(db, op, effect, how)
        killpoint_probe.boundary("after_result_write", op["id"], attempt)

    def fail(self, op, reason, event):
        with self.store.tx() as db:
            db.execute("UPDATE operations SET execution = 'FAILED', paused = 0, failure = ?"
                       " WHERE id = ?", (reason, op["id"]))
            audit(db, op["id"], event, reason)

    def pause(self, op, why):
        with self.store.tx() as db:
            db.execute("UPDATE operations SET execution = 'UNKNOWN', paused = 1 WHERE id = ?",
                       (op["id"],))
            audit(db, op["id"], "paused", why)

    # --- delivery -------------------------------------------------------------------------

    def deliver(self, op, delivery):
        """One send of one delivery (section 6). Never calls the tool."""
        destination = delivery["destination"]
        key = (op["id"], destination)
        verdict = check_policy(self.cfg, op, destination=destination)
        if verdict is None:
            with self.store.tx() as db:
                db.execute("UPDATE deliveries SET next_at = ? WHERE operation_id = ?"
                           " AND destination = ?", (now() + RETRY_LATER_S, *key))
            return
        if verdict is not True:
            with self.store.tx() as db:
                db.execute("UPDATE deliveries SET state = 'DEAD_LETTERED', last_error = ?"
                           " WHERE operation_id = ? AND destination = ?",
                           (f"policy: {verdict}", *key))
                audit(db, op["id"], "delivery_refused", f"{destination}: policy: {verdict}")
            return
        n = delivery["attempts"] + 1
        with self.store.tx() as db:  # SENT is durable before the send: resent after a crash
            db.execute("UPDATE deliveries SET state = 'SENT', attempts = ?"
                       " WHERE operation_id = ? AND destination = ?", (n, *key))
            audit(db, op["id"], "delivery_sent", f"{destination}, send {n}")
        event = {"operation_id": op["id"], "destination": destination,
                 "provider_ref": op["provider_ref"], "result": json.loads(op["result"])}
        try:
            status, body = http("POST", f"{self.cfg.consumers}/{quote(destination)}/events",
                                event, key=delivery["idempotency_key"])
        except Exception as error:
            status, body = None, repr(error)
        if status is not None and 200 <= status < 300:
            killpoint_probe.boundary("after_delivery_send", op["id"], n, destination)
            with self.store.tx() as db:
                db.execute("UPDATE deliveries SET state = 'ACKED', last_error = NULL"
                           " WHERE operation_id = ? AND destination = ?", key)
                audit(db, op["id"], "delivery_acked", destination)
            return
        error = f"send {n}: {status} {body!r}"[:500]
        with self.store.tx() as db:
            if n >= self.cfg.delivery_max_attempts:
                db.execute("UPDATE deliveries SET state = 'DEAD_LETTERED', last_error = ?"
                           " WHERE operation_id = ? AND destination = ?", (error, *key))
                audit(db, op["id"], "delivery_dead_lettered", f"{destination}: {error}")
            else:  # back to PENDING: nothing is in flight; retry after base x 2^(n-1)
                db.execute("UPDATE deliveries SET state = 'PENDING', last_error = ?, next_at = ?"
                           " WHERE operation_id = ? AND destination = ?",
                           (error, now() + self.cfg.retry_base_s * 2 ** (n - 1), *key))
                audit(db, op["id"], "delivery_failed", f"{destination}: {error}")


def valid_effect(body):
    return isinstance(body, dict) and isinstance(body.get("provider_ref"), str) \
        and "result" in body


def recover(store):
    """On start (4.8): an attempt still DISPATCHED died with its answer unknown."""
    with store.tx() as db:
        rows = db.execute("SELECT id, attempts FROM operations"
                          " WHERE execution = 'DISPATCHED'").fetchall()
        for row in rows:
            db.execute("UPDATE operations SET execution = 'UNKNOWN', next_at = 0 WHERE id = ?",
                       (row["id"],))
            audit(db, row["id"], "unknown", f"attempt {row['attempts']} was in flight at restart")
    if rows:
        log(f"recovered {len(rows)} in-flight attempt(s) as UNKNOWN")
    # SENT deliveries need nothing here: the worker treats them like PENDING and sends again.


# --------------------------------------------------------------------------------------------
# The API (section 3)
# --------------------------------------------------------------------------------------------

def parse_submission(body):
    """Validate a POST /operations body; return (normalised submission, None) or (None, error)."""
    if not isinstance(body, dict):
        return None, f"expected a JSON object, found {type(body).__name__}"
    op_id = body.get("operation_id")
    if not isinstance(op_id, str) or not ID_RE.match(op_id):
        return None, f"expected operation_id of 1-128 chars [A-Za-z0-9._:-], found {op_id!r}"
    for field in ("tenant", "actor"):
        if not isinstance(body.get(field), str) or not body[field]:
            return None, f"expected {field} as a non-empty string, found {body.get(field)!r}"
    tool = body.get("tool")
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
        return None, f"expected tool {{name, kind}}, found {tool!r}"
    if tool.get("kind") not in KINDS:
        return None, f"expected tool.kind in {list(KINDS)}, found {tool.get('kind')!r}"
    if not isinstance(body.get("arguments"), dict):
        return None, f"expected arguments as a JSON object, found {body.get('arguments')!r}"
    destinations = body.get("destinations", [])
    if not isinstance(destinations, list) or not all(
            isinstance(d, str) and ID_RE.match(d) for d in destinations):
        return None, f"expected destinations as names [A-Za-z0-9._:-], found {destinations!r}"
    if len(set(destinations)) != len(destinations):
        return None, f"expected distinct destinations, found {destinations!r}"
    return {"operation_id": op_id, "tenant": body["tenant"], "actor": body["actor"],
            "tool": {"name": tool["name"], "kind": tool["kind"]},
            "arguments": body["arguments"], "destinations": destinations}, None


def operation_view(db, row):
    deliveries = db.execute("SELECT * FROM deliveries WHERE operation_id = ? ORDER BY position",
                            (row["id"],)).fetchall()
    trail = db.execute("SELECT event, detail FROM audit WHERE operation_id = ? ORDER BY id",
                       (row["id"],)).fetchall()
    return {
        "operation_id": row["id"], "tenant": row["tenant"], "actor": row["actor"],
        "tool": {"name": row["tool_name"], "kind": row["tool_kind"]},
        "execution": row["execution"], "paused": bool(row["paused"]),
        "attempts": row["attempts"], "idempotency_key": row["idempotency_key"],
        "provider_ref": row["provider_ref"],
        "result": None if row["result"] is None else json.loads(row["result"]),
        "failure": None if row["failure"] is None else {"reason": row["failure"]},
        "deliveries": [{"destination": d["destination"], "state": d["state"],
                        "attempts": d["attempts"], "idempotency_key": d["idempotency_key"],
                        "last_error": d["last_error"]} for d in deliveries],
        "audit": [{"event": a["event"], "detail": a["detail"]} for a in trail],
    }


class Api(BaseHTTPRequestHandler):
    store = None   # set in main()
    worker = None

    def log_message(self, *args):
        pass  # keep stderr for the story of operations, not access logs

    def reply(self, status, body):
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/health":
            return self.reply(200, {"contract": CONTRACT})
        if path.startswith("/operations/"):
            op_id = urllib.parse.unquote(path[len("/operations/"):])
            with self.store.read() as db:
                row = db.execute("SELECT * FROM operations WHERE id = ?", (op_id,)).fetchone()
                view = operation_view(db, row) if row is not None else None
            if view is None:
                return self.reply(404, {"error": f"expected a known operation id, "
                                                 f"found {op_id!r}"})
            return self.reply(200, view)
        self.reply(404, {"error": f"expected /health or /operations/{{id}}, found {path}"})

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        if path != "/operations":
            return self.reply(404, {"error": f"expected POST /operations, found {path}"})
        try:
            length = int(self.headers.get("Content-Length", ""))
            body = json.loads(self.rfile.read(length))
        except ValueError as error:
            return self.reply(400, {"error": f"expected a JSON body with Content-Length, "
                                             f"found {error}"})
        sub, error = parse_submission(body)
        if error:
            return self.reply(400, {"error": error})
        op_id = sub["operation_id"]
        # Destinations are a set: their order is not part of "the same body".
        canonical = json.dumps(dict(sub, destinations=sorted(sub["destinations"])),
                               sort_keys=True, separators=(",", ":"))
        with self.store.tx() as db:  # check and insert atomically: concurrent twins are safe
            row = db.execute("SELECT request, execution FROM operations WHERE id = ?",
                             (op_id,)).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO operations (id, request, tenant, actor, tool_name, tool_kind,"
                    " arguments, destinations, execution, idempotency_key)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'INTENT_RECORDED', ?)",
                    (op_id, canonical, sub["tenant"], sub["actor"], sub["tool"]["name"],
                     sub["tool"]["kind"], json.dumps(sub["arguments"]),
                     json.dumps(sub["destinations"]), op_id))
                audit(db, op_id, "intent_recorded", f"tool {sub['tool']['name']} for "
                                                    f"{sub['tenant']}/{sub['actor']}")
        # The COMMIT above is durable (synchronous=FULL) before we answer.
        if row is None:
            self.worker.wake.set()
            return self.reply(202, {"operation_id": op_id, "execution": "INTENT_RECORDED"})
        if row["request"] != canonical:
            return self.reply(409, {"error": f"expected the body first submitted for {op_id}, "
                                             f"found a different one"})
        return self.reply(200, {"operation_id": op_id, "execution": row["execution"]})


# --------------------------------------------------------------------------------------------
# Start-up (section 2)
# --------------------------------------------------------------------------------------------

def main(worker_class=None, after_ready=None):
    """Serves the contract. A runtime built on this one (examples/langgraph, examples/dbos) passes
    its own Worker subclass, and `after_ready` to start what may announce boundaries."""
    global INCARNATION
    cfg = Config(os.environ)
    INCARNATION = cfg.incarnation
    store = Store(cfg.data_dir, cfg.incarnation)
    recover(store)
    killpoint_probe.connect(cfg.probe_socket)  # connected before the ready line, as promised
    worker = (worker_class or Worker)(cfg, store)
    Api.store, Api.worker = store, worker
    server = ThreadingHTTPServer(cfg.listen, Api)  # bound and listening once constructed
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="api", daemon=True).start()
    # Only from here on are boundaries announced: the worker starts after the ready line.
    killpoint_probe.ready((cfg.listen[0], server.server_address[1]))
    log(f"ready on port {server.server_address[1]} (probe: {killpoint_probe.connected()})")
    if after_ready is not None:
        after_ready(worker)
    worker.run()


if __name__ == "__main__":
    main()
