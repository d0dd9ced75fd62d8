#!/usr/bin/env python3
"""Announces a boundary the contract does not have."""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log


def unknown(op):
    log("announcing before_lunch")
    runtime.announce("before_lunch", op, 1)


runtime = Runtime(on_submit=unknown)
runtime.ready()
block_forever()
