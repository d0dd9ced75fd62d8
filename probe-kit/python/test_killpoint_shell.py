"""The contract shell against a stand-in world: `python3 -m unittest` in probe-kit/python (run by
`cargo test --test frameworks`, trial `frameworks::python_kit`). What the harness certifies end to
end (tests/scenarios.rs, `python::`) is checked here piece by piece, where a mistake is named."""

import contextlib
import io
import json
import os
import tempfile
import threading
import unittest
import unittest.mock
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import killpoint_shell as ks
from killpoint_shell import api, net, outbox
from killpoint_shell.execution import execute

SUBMISSION = {"operation_id": "op-1", "tenant": "t", "actor": "a",
              "tool": {"name": "charge", "kind": "idempotent_by_key"},
              "arguments": {"cents": 5}, "destinations": ["ledger", "mail"]}


class World(BaseHTTPRequestHandler):
    """Provider, policy and consumers in one: answers from `answers`, and records each request
    with the operation's execution as committed when the request arrived."""

    answers, seen, state = {}, [], None

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.answer(None)

    def do_POST(self):
        self.answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

    def answer(self, body):
        route = self.command + " " + self.path.split("?")[0]
        state = World.state()
        World.seen.append((route, self.headers.get("Idempotency-Key"), self.headers.get("Killpoint-Incarnation"),
                           state, body))
        status, answer = World.answers.get(route, (404, {"error": "no effect"}))
        if callable(status):  # an answer that changes every time it is asked (the model's)
            status, answer = status()
        raw = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class ShellTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="killpoint-shell-")
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), World)
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()
        url = f"http://127.0.0.1:{self.server.server_address[1]}"
        env = type("Env", (), dict(data_dir=self.tmp.name, incarnation=2, provider_url=url + "/p",
                                   consumers_url=url + "/c", policy_url=url + "/pol", model_url=url + "/m",
                                   delivery_max_attempts=2, retry_base_s=0.025))
        net.INCARNATION = 2
        self.shell = ks.Shell(env)
        World.seen = []
        World.state = lambda: self.shell.store.operation("op-1")["execution"]
        World.answers = {"POST /pol/check": (200, {"allowed": True})}

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        self.shell.store.db.close()
        self.tmp.cleanup()

    def submit(self, **changes):
        sub, error = api.parse_submission(dict(SUBMISSION, **changes))
        self.assertIsNone(error)
        return api.submit(self.shell.store, sub)

    def test_submission_is_validated_and_resubmission_compared_as_a_set(self):
        for bad in ({"operation_id": "has space"}, {"tenant": ""}, {"tool": {"name": "x", "kind": "magic"}},
                    {"arguments": []}, {"destinations": ["a", "a"]}):
            sub, error = api.parse_submission(dict(SUBMISSION, **bad))
            self.assertIsNone(sub, bad)
            self.assertIn("expected", error)
        self.assertEqual(self.submit()[0], 202)
        self.assertEqual(self.submit(destinations=["mail", "ledger"]), (200, {"operation_id": "op-1",
                                                                            "execution": "INTENT_RECORDED"}))
        self.assertEqual(self.submit(arguments={"cents": 6})[0], 409)

    def test_a_success_is_dispatched_ahead_and_recorded_with_its_outbox(self):
        self.submit()
        World.answers["POST /p/tools/charge"] = (200, {"provider_ref": "r-1", "result": {"ok": 1}})
        self.assertIsNone(execute(self.shell, "op-1"))
        call = [s for s in World.seen if s[0] == "POST /p/tools/charge"]
        # The operation's own key, the fencing token, and DISPATCHED committed before the send.
        self.assertEqual([c[1:4] for c in call], [("op-1", "2", "DISPATCHED")])
        with self.shell.store.read() as db:
            rows = db.execute("SELECT destination, state, idempotency_key FROM deliveries ORDER BY position")
            self.assertEqual([tuple(r) for r in rows], [("ledger", "PENDING", "op-1:ledger"),
                                                        ("mail", "PENDING", "op-1:mail")])
        self.assertIsNone(execute(self.shell, "op-1"))  # a replay: nothing is sent again
        self.assertEqual(len([s for s in World.seen if s[0] == "POST /p/tools/charge"]), 1)

    def test_a_round_that_died_is_looked_up_before_anything_is_sent(self):
        self.submit()
        with self.shell.store.tx() as db:  # what a killed round leaves behind
            db.execute("UPDATE operations SET execution = 'DISPATCHED', attempts = 1")
        World.answers["POST /p/tools/charge"] = (503, {"error": "busy"})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            pause = execute(self.shell, "op-1")
        self.assertEqual([s[0] for s in World.seen],
                         ["GET /p/tools/charge/effects", "POST /pol/check", "POST /p/tools/charge"])
        self.assertEqual(pause, 0.1)  # the second attempt's answer unknown: base x 2
        self.assertEqual(self.shell.store.operation("op-1")["execution"], "UNKNOWN")
        retry = json.loads(err.getvalue().splitlines()[0])
        self.assertEqual(retry, {"log": "retry", "retry": "execution", "operation_id": "op-1", "attempt": 2,
                                 "reason": "lookup found nothing"})

    def test_the_attempts_are_bounded_and_a_refusal_fails_a_first_attempt(self):
        self.submit()
        with self.shell.store.tx() as db:
            db.execute("UPDATE operations SET execution = 'UNKNOWN', attempts = ?", (ks.MAX_EXECUTION_ATTEMPTS,))
        self.assertIsNone(execute(self.shell, "op-1"))
        self.assertEqual(self.shell.store.operation("op-1")["failure"], "no effect after 5 attempts")
        self.submit(operation_id="op-2")
        World.answers["POST /pol/check"] = (200, {"allowed": False, "reason": "revoked"})
        self.assertIsNone(execute(self.shell, "op-2"))
        self.assertEqual(self.shell.store.operation("op-2")["failure"], "policy: revoked")
        World.answers["POST /pol/check"] = (500, {})
        self.submit(operation_id="op-3")
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(execute(self.shell, "op-3"), ks.RETRY_LATER_S)  # no answer: not a go-ahead
        self.assertFalse([s for s in World.seen if s[0] == "POST /p/tools/charge"])

    def test_a_delivery_is_sent_after_sent_is_durable_and_dead_lettered_at_the_bound(self):
        self.submit()
        self.shell.record("op-1", {"provider_ref": "r-1", "result": {}}, 1, "test")
        World.answers["POST /c/ledger/events"] = (503, {})
        World.state = lambda: self.ledger()["state"]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            for _ in range(2):
                outbox.deliver(self.shell, self.shell.store.operation("op-1"), self.ledger())
        self.assertEqual((self.ledger()["state"], self.ledger()["attempts"]), ("DEAD_LETTERED", 2))
        sends = [s for s in World.seen if s[0] == "POST /c/ledger/events"]
        self.assertEqual([(s[1], s[3]) for s in sends], [("op-1:ledger", "SENT")] * 2)
        retry = json.loads(err.getvalue().splitlines()[0])
        self.assertEqual((retry["retry"], retry["destination"], retry["attempt"]), ("delivery", "ledger", 2))

    def ledger(self):
        with self.shell.store.read() as db:
            return db.execute("SELECT * FROM deliveries WHERE destination = 'ledger'").fetchone()

    def test_an_older_incarnation_is_fenced(self):
        newer = ks.store.Store(self.tmp.name, 3)
        exits = []
        real, net_fenced = ks.store.fenced, net.fenced
        ks.store.fenced = lambda why: exits.append(why) or (_ for _ in ()).throw(SystemExit(3))
        try:
            with self.assertRaises(SystemExit):
                with self.shell.store.tx() as db:
                    db.execute("UPDATE fence SET incarnation = incarnation")
        finally:
            ks.store.fenced = real
            newer.db.close()
        self.assertEqual(exits, ["the store is fenced by incarnation 3"])
        self.assertIs(net.fenced, net_fenced)

    def test_a_missing_data_dir_is_refused(self):
        with self.assertRaises(SystemExit) as exit:
            ks.store.Store(os.path.join(self.tmp.name, "gone"), 1)
        self.assertIn("gone", str(exit.exception.code))

    def test_a_missing_data_dir_is_refused_before_anything_can_make_it_anew(self):
        """`serve` checks before it makes its shell: a shell or an engine that starts a server
        there first would make the directory afresh, and the store would find it empty."""
        gone = os.path.join(self.tmp.name, "gone")

        class ServerFirst(ks.Shell):
            def __init__(self, env, run=None):
                os.makedirs(env.data_dir)  # as a server started on the data dir would
                # Not on to serving for ever: the test says what went wrong instead.
                raise AssertionError("the shell was made before the data dir was checked")

        environ = {"KILLPOINT_CONTRACT": ks.killpoint_probe.CONTRACT, "KILLPOINT_DATA_DIR": gone,
                   "KILLPOINT_LISTEN": "127.0.0.1:0", "KILLPOINT_PROVIDER_URL": "http://127.0.0.1:9",
                   "KILLPOINT_CONSUMERS_URL": "http://127.0.0.1:9", "KILLPOINT_POLICY_URL": "http://127.0.0.1:9",
                   "KILLPOINT_INCARNATION": "2"}
        with unittest.mock.patch.dict(os.environ, environ), self.assertRaises(SystemExit) as exit:
            ks.serve(shell_class=ServerFirst)
        self.assertIn("gone", str(exit.exception.code))
        self.assertFalse(os.path.exists(gone), "the shell was made before the data dir was checked")



TASK = {"prompt": "charge the customer [killpoint:op-1]",
        "tools": [{"name": "charge", "kind": "non_idempotent_with_lookup"},
                  {"name": "status", "kind": "safely_repeatable"}]}


def task_submission(**changes):
    sub = {k: v for k, v in SUBMISSION.items() if k not in ("tool", "arguments")}
    return dict(sub, **dict({"task": TASK}, **changes))


class TaskTest(unittest.TestCase):
    """Tasks (CONTRACT.md section 12) with the kit's design: the key is the operation's, and a
    decision for a kind with lookup is not kept, so recovery looks up before it asks again."""

    tearDown = ShellTest.tearDown  # the same stand-in world, without ShellTest's tests

    def setUp(self):
        ShellTest.setUp(self)
        self.decisions, self.tool = 0, "charge"
        World.answers["POST /m/chat/completions"] = (self.model, None)

    def model(self):
        """Like the world's model: another decision (id, amount) every time it is asked."""
        self.decisions += 1
        n = self.decisions
        arguments = {"amount_cents": 1000 + n, "_killpoint": {"operation": "op-1", "decision": f"call_{n}"}}
        call = {"id": f"call_{n}", "type": "function",
                "function": {"name": self.tool, "arguments": json.dumps(arguments)}}
        return 200, {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}

    def submit_task(self, **changes):
        sub, error = api.parse_submission(task_submission(**changes))
        self.assertIsNone(error)
        return api.submit(self.shell.store, sub)

    def calls(self):
        """(key, decision) of each call the provider received."""
        return [(s[1], s[4]["arguments"]["_killpoint"]["decision"]) for s in World.seen
                if s[0] == f"POST /p/tools/{self.tool}"]

    def view(self):
        with self.shell.store.read() as db:
            return api.operation_view(db, db.execute("SELECT * FROM operations WHERE id = 'op-1'").fetchone())

    def test_a_task_is_validated_and_its_tool_is_null_until_decided(self):
        for bad, found in (({"tool": SUBMISSION["tool"]}, "found task with tool"),
                           ({"arguments": {}}, "found task with arguments"),
                           ({"task": {"prompt": "", "tools": TASK["tools"]}}, "non-empty prompt"),
                           ({"task": {"prompt": "p", "tools": []}}, "non-empty list"),
                           ({"task": {"prompt": "p", "tools": [{"name": "x", "kind": "magic"}]}}, "task.tools[0].kind"),
                           ({"task": {"prompt": "p", "tools": [TASK["tools"][0]] * 2}}, "distinct")):
            sub, error = api.parse_submission(task_submission(**bad))
            self.assertIsNone(sub, bad)
            self.assertIn(found, error)
        neither = {k: v for k, v in SUBMISSION.items() if k not in ("tool", "arguments")}
        self.assertEqual(api.parse_submission(neither)[1], "expected either tool and arguments or a task, found neither")
        self.assertEqual(self.submit_task()[0], 202)
        self.assertEqual(self.submit_task(destinations=["mail", "ledger"])[0], 200)
        self.assertEqual(self.submit_task(task=dict(TASK, prompt="other [killpoint:op-1]"))[0], 409)
        self.assertIsNone(self.view()["tool"])
        self.assertEqual(self.decisions, 0)  # nothing is decided on submission

    def test_a_lookup_kind_forgets_the_decision_and_asks_again_only_after_a_lookup_found_nothing(self):
        self.submit_task()
        World.answers["POST /p/tools/charge"] = (503, {"error": "busy"})
        self.assertEqual(execute(self.shell, "op-1"), 0.05)
        asked = [s for s in World.seen if s[0] == "POST /m/chat/completions"][0][4]
        self.assertEqual(asked["messages"], [{"role": "user", "content": TASK["prompt"]}])
        self.assertEqual([t["function"]["name"] for t in asked["tools"]], ["charge", "status"])
        op = self.shell.store.operation("op-1")
        # The tool is recorded (a lookup needs it), the decision's arguments are not.
        self.assertEqual((op["execution"], op["tool_name"], op["arguments"]), ("UNKNOWN", "charge", None))
        self.assertEqual(self.view()["tool"], {"name": "charge", "kind": "non_idempotent_with_lookup"})
        with self.shell.store.tx() as db:  # a crash with the answer unknown: recovery makes it UNKNOWN
            db.execute("UPDATE operations SET execution = 'DISPATCHED'")
        with contextlib.redirect_stderr(io.StringIO()):
            ks.store.recover(self.shell.store)
            World.answers["POST /p/tools/charge"] = (200, {"provider_ref": "r-2", "result": {}})
            self.assertIsNone(execute(self.shell, "op-1"))
        routes = [s[0] for s in World.seen]
        self.assertEqual(routes[routes.index("GET /p/tools/charge/effects"):],
                         ["GET /p/tools/charge/effects", "POST /m/chat/completions", "POST /pol/check",
                          "POST /p/tools/charge"])
        self.assertEqual(self.calls(), [("op-1", "call_1"), ("op-1", "call_2")])  # one key, whatever the decision
        self.assertEqual(self.shell.store.operation("op-1")["execution"], "SUCCEEDED")

    def test_a_key_reused_is_reconciled_by_lookup_and_the_found_effect_stands(self):
        self.submit_task()
        World.answers["POST /p/tools/charge"] = (409, {"error": "other arguments", "code": "idempotency_key_reused"})
        self.assertEqual(execute(self.shell, "op-1"), 0.05)
        self.assertEqual(self.shell.store.operation("op-1")["execution"], "UNKNOWN")  # not FAILED
        World.answers["GET /p/tools/charge/effects"] = (200, {"provider_ref": "r-1", "result": {"n": 1}})
        self.assertIsNone(execute(self.shell, "op-1"))
        op = self.shell.store.operation("op-1")
        self.assertEqual((op["execution"], op["provider_ref"], self.decisions), ("SUCCEEDED", "r-1", 1))

    def test_a_safely_repeatable_decision_is_recorded_and_repeated_exactly(self):
        self.tool = "status"
        self.submit_task()
        World.answers["POST /p/tools/status"] = (503, {})
        self.assertEqual(execute(self.shell, "op-1"), 0.05)
        self.assertEqual(json.loads(self.shell.store.operation("op-1")["arguments"])["_killpoint"]["decision"],
                         "call_1")
        World.answers["POST /p/tools/status"] = (200, {"provider_ref": "s-1", "result": {}})
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertIsNone(execute(self.shell, "op-1"))
        self.assertEqual((self.calls(), self.decisions), ([("op-1", "call_1")] * 2, 1))

    def test_a_frameworks_decision_is_acted_on_and_a_new_one_only_after_a_lookup_found_nothing(self):
        """A framework's own model decides (`decided`): the kit asks no model; after a crash a
        re-asked framework's new decision is looked up first, and acted on only if nothing was found."""
        self.submit_task()
        first = ("charge", {"amount_cents": 7, "_killpoint": {"decision": "fw_1"}}, "fw_1")
        World.answers["POST /p/tools/charge"] = (503, {})
        self.assertEqual(execute(self.shell, "op-1", decided=first), 0.05)
        World.answers["GET /p/tools/charge/effects"] = (200, {"provider_ref": "r-1", "result": {}})
        second = ("charge", {"amount_cents": 8, "_killpoint": {"decision": "fw_2"}}, "fw_2")
        self.assertIsNone(execute(self.shell, "op-1", decided=second))
        self.assertEqual((self.calls(), self.decisions), ([("op-1", "fw_1")], 0))
        self.assertEqual(self.shell.store.operation("op-1")["provider_ref"], "r-1")
        self.submit_task(operation_id="op-2")
        with contextlib.redirect_stderr(io.StringIO()):  # a tool the task did not offer decides nothing
            self.assertEqual(execute(self.shell, "op-2", decided=("teleport", {}, "fw_3")), ks.RETRY_LATER_S)

    def test_no_decision_is_no_attempt(self):
        self.submit_task()
        World.answers["POST /m/chat/completions"] = (200, {"choices": [{"message": {"content": "hello"}}]})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(execute(self.shell, "op-1"), ks.RETRY_LATER_S)
        self.assertEqual(self.shell.store.operation("op-1")["execution"], "INTENT_RECORDED")
        self.assertEqual(self.calls(), [])
        self.assertIn("expected a tool call", err.getvalue())


if __name__ == "__main__":
    unittest.main()
