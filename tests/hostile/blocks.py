#!/usr/bin/env python3
"""Announces before_dispatch, is resumed, reports DISPATCHED and then never moves again: the API
keeps answering, the operation never settles.

    blocks.py MARKER [BLOCKED_FILE [--child]]

BLOCKED_FILE is created once blocked (tests that must act mid-scenario wait for it); with
`--child`, it first starts a child (`sleep`) in its process group, which only a group kill reaches."""

import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log

if "--child" in sys.argv[3:]:
    child = subprocess.Popen(["sleep", "1000"])
    log(f"started child {child.pid}")


def stuck(op):
    runtime.announce("before_dispatch", op, 1)
    runtime.set_state(op, "DISPATCHED")
    log(f"{op} is DISPATCHED; blocking for ever")
    if len(sys.argv) > 2:
        open(sys.argv[2], "w").close()


runtime = Runtime(on_submit=stuck)
runtime.ready()
block_forever()
