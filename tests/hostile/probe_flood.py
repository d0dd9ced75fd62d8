#!/usr/bin/env python3
"""Connects the probe and, when an operation is submitted, announces before_dispatch again and
again without ever reading the harness's answers."""

import json
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log


def flood(op):
    log("announcing without reading the answers")
    line = (json.dumps({"boundary": "before_dispatch", "operation_id": op, "attempt": 1}) + "\n").encode()
    while True:
        runtime.probe.sendall(line * 1000)


runtime = Runtime(on_submit=flood)
runtime.ready()
block_forever()
