#!/usr/bin/env python3
"""Connects the probe and, when an operation is submitted, writes 1 MiB on it without a newline."""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log


def oversized(op):
    log("sending 1 MiB without a newline on the probe")
    runtime.send(b"{" + b"x" * (1024 * 1024))


runtime = Runtime(on_submit=oversized)
runtime.ready()
block_forever()
