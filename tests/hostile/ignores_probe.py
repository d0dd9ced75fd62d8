#!/usr/bin/env python3
"""Declares `"probe": true` in its ready line but never connects to KILLPOINT_PROBE_SOCKET."""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log

log("declaring the probe without connecting to it")
Runtime(connect_probe=False, declare_probe=True).ready()
block_forever()
