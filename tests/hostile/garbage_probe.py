#!/usr/bin/env python3
"""Connects the probe and, when an operation is submitted, writes garbage on it."""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log


def garbage(op):
    log("sending garbage on the probe")
    runtime.send(b"this is not a probe message\n")


runtime = Runtime(on_submit=garbage)
runtime.ready()
block_forever()
