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
                                   consumers_url=url + "/c", policy_url=url + "/pol",
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


if __name__ == "__main__":
    unittest.main()
