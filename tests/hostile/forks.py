#!/usr/bin/env python3
"""Starts a child (`sleep`) and a grandchild (`sh -c 'sleep 1000 &'`: the shell exits, its sleep
is orphaned), becomes ready, and exits on its own once an operation is submitted. Every one of
them is in the runtime's process group."""

import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log

child = subprocess.Popen(["sleep", "1000"])
subprocess.run(["sh", "-c", "sleep 1000 &"], check=True)
log(f"started child {child.pid} and an orphaned grandchild")


def leave(op):
    log("exiting, leaving the children behind")
    os._exit(0)


runtime = Runtime(on_submit=leave)
runtime.ready()
block_forever()
