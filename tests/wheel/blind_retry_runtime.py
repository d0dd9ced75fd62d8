#!/usr/bin/env python3
"""The Python example runtime with one mistake, for tests/wheel.rs: after a crash it never looks an
interrupted call up, it calls the provider again (a blind retry, CONTRACT.md §4-10). It imports
the kit as `pip install killpoint` installed it, never from the repository."""

import killpoint_shell
from killpoint_shell import execution


def blind(shell, op, decided=None):
    return execution._attempt(shell, op, execution._recorded_call(op), "outcome unknown; called again, no lookup")


execution._reconcile = blind

if __name__ == "__main__":
    killpoint_shell.serve()
