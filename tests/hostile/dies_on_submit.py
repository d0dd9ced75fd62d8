#!/usr/bin/env python3
"""Becomes ready, then dies (code 4) as soon as a submission arrives, without answering it."""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hostile import Runtime, block_forever, log

runtime = Runtime()


def die(*args):
    log("a submission arrived; dying without answering it")
    os._exit(4)


runtime.server.RequestHandlerClass.do_POST = die
runtime.ready()
block_forever()
