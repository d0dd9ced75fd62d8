#!/usr/bin/env python3
"""A killpoint runtime in Python 3, standard library only: the Python kit's contract shell,
`killpoint_shell`, running each operation's execution itself.

The shell (probe-kit/python/killpoint_shell) was written from CONTRACT.md alone: one SQLite
database under KILLPOINT_DATA_DIR, every state change one fenced transaction; the API on HTTP
server threads; one worker doing the rest one step at a time, in submission order. README.md here
says which choices the contract leaves open it makes.
"""

import os
import sys

# The kit of the repository this file is in, when it is there (so that the examples always run
# the kit as it is here); elsewhere, the one installed with `pip install probe-kit/python`.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probe-kit", "python"))
import killpoint_shell  # noqa: E402

if __name__ == "__main__":
    killpoint_shell.serve()
