#!/usr/bin/env python3
"""Crash-loops: every incarnation becomes ready, then exits on its own (code 3) at its first
boundary once the harness lets it past. It remembers the submission in KILLPOINT_DATA_DIR, so a
restarted incarnation goes straight back to the boundary, and out."""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log

MEMORY = os.path.join(os.environ["KILLPOINT_DATA_DIR"], "submitted")


def first_boundary(op):
    with open(MEMORY, "w") as f:
        f.write(op)
    answer = runtime.announce("before_dispatch", op, 1)
    log(f"harness answered {answer!r} at before_dispatch; exiting with code 3")
    os._exit(3)


runtime = Runtime(on_submit=first_boundary)
op = None
if os.path.exists(MEMORY):
    with open(MEMORY) as f:
        op = f.read()
    # It keeps the operation it accepted, from before it is ready (a runtime that forgot it, even
    # for a moment, would be reported for that at once, and never get to crash again).
    with runtime.lock:
        runtime.states[op] = "INTENT_RECORDED"
runtime.ready()
if op is not None:
    first_boundary(op)
block_forever()
