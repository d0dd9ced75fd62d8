"""The API the harness calls (CONTRACT.md §3): `POST /operations` validated (`400`; a fixed tool
with its arguments or a task for the model, §12, exactly one of them), recorded
durably before `202`, resubmission idempotent (`200` with the same body, `409` with another, the
destinations compared as a set), `GET /operations/{id}` (`404` unknown) and `GET /health`."""

import json
import os
import re
import urllib.parse
from http.server import BaseHTTPRequestHandler

import killpoint_probe

from .execution import KINDS
from .store import audit

ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")


def parse_submission(body):
    """Returns (the submission normalised, None) or (None, what was expected and found)."""
    if not isinstance(body, dict):
        return None, f"expected a JSON object, found {type(body).__name__}"
    op_id = body.get("operation_id")
    if not isinstance(op_id, str) or not ID_RE.match(op_id):
        return None, f"expected operation_id of 1-128 chars [A-Za-z0-9._:-], found {op_id!r}"
    for field in ("tenant", "actor"):
        if not isinstance(body.get(field), str) or not body[field]:
            return None, f"expected {field} as a non-empty string, found {body.get(field)!r}"
    call, error = parse_call(body)
    if error:
        return None, error
    destinations = body.get("destinations", [])
    if not isinstance(destinations, list) or not all(isinstance(d, str) and ID_RE.match(d) for d in destinations):
        return None, f"expected destinations as names [A-Za-z0-9._:-], found {destinations!r}"
    if len(set(destinations)) != len(destinations):
        return None, f"expected distinct destinations, found {destinations!r}"
    return dict({"operation_id": op_id, "tenant": body["tenant"], "actor": body["actor"],
                 "destinations": destinations}, **call), None


def parse_call(body):
    """What the operation calls: a fixed `tool` with its `arguments`, or a `task` for the model
    (§3, §12), never both and never neither. Returns ({tool, arguments} or {task}, None) or
    (None, what was expected and found)."""
    fixed = [field for field in ("tool", "arguments") if field in body]
    if "task" in body:
        if fixed:
            return None, f"expected either tool and arguments or a task, found task with {' and '.join(fixed)}"
        return parse_task(body["task"])
    if not fixed:
        return None, "expected either tool and arguments or a task, found neither"
    tool, error = parse_tool(body.get("tool"), "tool")
    if error:
        return None, error
    if not isinstance(body.get("arguments"), dict):
        return None, f"expected arguments as a JSON object, found {body.get('arguments')!r}"
    return {"tool": tool, "arguments": body["arguments"]}, None


def parse_tool(tool, where):
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
        return None, f"expected {where} {{name, kind}}, found {tool!r}"
    if tool.get("kind") not in KINDS:
        return None, f"expected {where}.kind in {list(KINDS)}, found {tool.get('kind')!r}"
    return {"name": tool["name"], "kind": tool["kind"]}, None


def parse_task(task):
    if not isinstance(task, dict) or not isinstance(task.get("prompt"), str) or not task["prompt"]:
        return None, f"expected task {{prompt, tools}} with a non-empty prompt, found {task!r}"
    offered = task.get("tools")
    if not isinstance(offered, list) or not offered:
        return None, f"expected task.tools as a non-empty list of {{name, kind}}, found {offered!r}"
    tools = []
    for i, tool in enumerate(offered):
        tool, error = parse_tool(tool, f"task.tools[{i}]")
        if error:
            return None, error
        tools.append(tool)
    names = [t["name"] for t in tools]
    if len(set(names)) != len(names):
        return None, f"expected distinct tool names in task.tools, found {names}"
    return {"task": {"prompt": task["prompt"], "tools": tools}}, None


def canonical(sub):
    """The submission as compared on resubmission: destinations are a set, not a list."""
    return json.dumps(dict(sub, destinations=sorted(sub["destinations"])), sort_keys=True, separators=(",", ":"))


def operation_view(db, row):
    deliveries = db.execute("SELECT * FROM deliveries WHERE operation_id = ? ORDER BY position",
                            (row["id"],)).fetchall()
    trail = db.execute("SELECT event, detail FROM audit WHERE operation_id = ? ORDER BY id", (row["id"],)).fetchall()
    return {
        "operation_id": row["id"], "tenant": row["tenant"], "actor": row["actor"],
        # A task's tool is null until a decision is dispatched (§3): the model has not chosen it.
        "tool": None if row["tool_name"] is None else {"name": row["tool_name"], "kind": row["tool_kind"]},
        "execution": row["execution"], "paused": bool(row["paused"]),
        "attempts": row["attempts"], "idempotency_key": row["idempotency_key"],
        "provider_ref": row["provider_ref"],
        "result": None if row["result"] is None else json.loads(row["result"]),
        "failure": None if row["failure"] is None else {"reason": row["failure"]},
        "deliveries": [{"destination": d["destination"], "state": d["state"], "attempts": d["attempts"],
                        "idempotency_key": d["idempotency_key"], "last_error": d["last_error"]}
                       for d in deliveries],
        "audit": [{"event": a["event"], "detail": a["detail"]} for a in trail],
    }


def handler(shell):
    """The request handler class for `shell`'s store, waking its worker on a new operation."""

    class Api(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass  # stderr is for the story of operations, not access logs

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
                return self.reply(200, {"contract": killpoint_probe.CONTRACT})
            if not path.startswith("/operations/"):
                return self.reply(404, {"error": f"expected /health or /operations/{{id}}, found {path}"})
            op_id = urllib.parse.unquote(path[len("/operations/"):])
            with shell.store.read() as db:
                row = db.execute("SELECT * FROM operations WHERE id = ?", (op_id,)).fetchone()
                view = operation_view(db, row) if row is not None else None
            if view is None:
                return self.reply(404, {"error": f"expected a known operation id, found {op_id!r}"})
            self.reply(200, view)

        def do_POST(self):
            path = urllib.parse.urlsplit(self.path).path
            if path != "/operations":
                return self.reply(404, {"error": f"expected POST /operations, found {path}"})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", ""))))
            except ValueError as error:
                return self.reply(400, {"error": f"expected a JSON body with Content-Length, found {error}"})
            sub, error = parse_submission(body)
            if error:
                return self.reply(400, {"error": error})
            status, answer = submit(shell.store, sub)
            if status == 202:
                shell.wake.set()
            self.reply(status, answer)

    return Api


def submit(store, sub):
    """Records a new operation, durably, or compares a resubmission with the first body."""
    op_id, request = sub["operation_id"], canonical(sub)
    with store.tx() as db:  # check and insert atomically: concurrent twins are safe
        row = db.execute("SELECT request, execution FROM operations WHERE id = ?", (op_id,)).fetchone()
        if row is None:
            insert(db, op_id, request, sub)
    # The COMMIT above is durable (synchronous=FULL) before the answer.
    if row is None:
        return 202, {"operation_id": op_id, "execution": "INTENT_RECORDED"}
    if row["request"] != request:
        return 409, {"error": f"expected the body first submitted for {op_id}, found a different one"}
    return 200, {"operation_id": op_id, "execution": row["execution"]}


def insert(db, op_id, request, sub):
    """The new operation, INTENT_RECORDED, keyed by its own id: a task's key does not depend on
    the decision the model will make (§12-3, the kit's design; execution.py)."""
    task = sub.get("task")
    tool = sub.get("tool") or {"name": None, "kind": None}
    arguments = None if task else json.dumps(sub["arguments"])
    db.execute(
        "INSERT INTO operations (id, request, tenant, actor, tool_name, tool_kind, arguments, task,"
        " destinations, execution, idempotency_key, maybe_sent)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'INTENT_RECORDED', ?, ?)",
        (op_id, request, sub["tenant"], sub["actor"], tool["name"], tool["kind"], arguments,
         None if task is None else json.dumps(task), json.dumps(sub["destinations"]), op_id,
         # Accepted after a restore, it may be a client's retry of one the lost host sent (§13-2).
         2 if os.environ.get("KILLPOINT_RESTORED") else 0))
    what = f"task for the model, offering {[t['name'] for t in task['tools']]}" if task else f"tool {tool['name']}"
    audit(db, op_id, "intent_recorded", f"{what} for {sub['tenant']}/{sub['actor']}")
