#!/usr/bin/env python3
"""Floods stdout and stderr before its ready line: megabytes of lines, 1 MiB without a newline,
random bytes (not UTF-8), then one last line. Then it is ready, and never settles anything."""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever

for stream, name in ((sys.stdout.buffer, "stdout"), (sys.stderr.buffer, "stderr")):
    for i in range(40_000):
        stream.write(b"flood line %d: all work and no play makes the harness a dull tool\n" % i)
    stream.write(b"x" * (1024 * 1024) + b"\n")
    stream.write(os.urandom(256 * 1024) + b"\n")
    stream.write(b"flood: last words on " + name.encode() + b"\n")
    stream.flush()

Runtime(connect_probe=False).ready()
block_forever()
