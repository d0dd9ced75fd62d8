"""The Python kit against a stand-in harness: `python3 -m unittest` in probe-kit/python (run by
`cargo test --test frameworks`, trial `frameworks::python_kit`)."""

import contextlib
import io
import json
import os
import socket
import tempfile
import threading
import unittest

import killpoint_probe as kp

ENV = {"KILLPOINT_CONTRACT": "killpoint-contract/9", "KILLPOINT_DATA_DIR": "/tmp/data",
       "KILLPOINT_LISTEN": "127.0.0.1:0", "KILLPOINT_PROVIDER_URL": "http://127.0.0.1:1/provider/",
       "KILLPOINT_CONSUMERS_URL": "http://127.0.0.1:1/consumers",
       "KILLPOINT_POLICY_URL": "http://127.0.0.1:1/policy", "KILLPOINT_INCARNATION": "2"}

HARNESS_SIDE = []


class KitTest(unittest.TestCase):
    def test_environment(self):
        env = kp.Env.from_environ(ENV)
        self.assertEqual((env.provider_url, env.incarnation, env.listen, env.probe_socket),
                         ("http://127.0.0.1:1/provider", 2, ("127.0.0.1", 0), None))
        self.assertEqual((env.delivery_max_attempts, env.retry_base_s), (5, 0.025))
        with self.assertRaises(SystemExit) as exit:
            kp.Env.from_environ(dict(ENV, KILLPOINT_CONTRACT="killpoint-contract/2"))
        self.assertIn("killpoint-contract/2", str(exit.exception.code))
        with self.assertRaises(SystemExit) as exit:
            kp.Env.from_environ({k: v for k, v in ENV.items() if k != "KILLPOINT_DATA_DIR"})
        self.assertIn("KILLPOINT_DATA_DIR is not set", str(exit.exception.code))

    def test_probe_round_trip(self):
        kp.boundary("before_dispatch", "op-1", 1)  # off: returns at once, nothing to talk to
        with tempfile.TemporaryDirectory(prefix="killpoint-kit-") as tmp:
            path = os.path.join(tmp, "probe.sock")
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(path)
            server.listen(1)
            seen = []

            def harness():
                connection, _ = server.accept()
                # Kept open: the kit exits the process when the harness closes the probe.
                HARNESS_SIDE.append(connection)
                stream = connection.makefile("rwb")
                for line in stream:
                    seen.append(json.loads(line))
                    stream.write(b'{"action":"resume"}\n')
                    stream.flush()
                    if len(seen) == 2:
                        return

            thread = threading.Thread(target=harness)
            thread.start()
            kp.connect(path)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                kp.ready(("127.0.0.1", 4242))
            self.assertEqual(out.getvalue(), 'KILLPOINT_READY {"contract":"killpoint-contract/9",'
                                             '"api":"http://127.0.0.1:4242","probe":true}\n')
            kp.boundary("before_dispatch", "op-1", 1)
            kp.boundary("after_delivery_send", "op-1", 2, destination="ledger")
            with self.assertRaises(ValueError):
                kp.boundary("after_dispatch", "op-1", 1)
            thread.join()
            server.close()
        self.assertEqual(seen, [
            {"boundary": "before_dispatch", "operation_id": "op-1", "attempt": 1},
            {"boundary": "after_delivery_send", "operation_id": "op-1", "attempt": 2,
             "destination": "ledger"}])

    def test_small(self):
        with open(kp.__file__) as source:
            self.assertLess(len(source.readlines()), 300)


if __name__ == "__main__":
    unittest.main()
