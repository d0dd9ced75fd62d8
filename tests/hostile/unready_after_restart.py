#!/usr/bin/env python3
"""Ready in its first life, never after: incarnation 1 serves and blocks at its first boundary
(where the scenario kills it); every later incarnation exits (code 3) before its ready line. The
restart broke the ready line's rule (CONTRACT.md §2-6), not the settle deadline."""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import INCARNATION, Runtime, block_forever, log

if INCARNATION > 1:
    log("cannot start again; exiting before the ready line")
    os._exit(3)


def first_boundary(op):
    answer = runtime.announce("before_dispatch", op, 1)
    log(f"harness answered {answer!r} at before_dispatch; blocking")
    block_forever()


runtime = Runtime(on_submit=first_boundary)
runtime.ready()
block_forever()
