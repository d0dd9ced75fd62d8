#!/bin/sh
# Prints a valid ready line and exits at once (code 3): the harness may see the exit before the
# line, and must not say that no ready line was printed.
echo "ready_then_exits: printing the ready line, then exiting" >&2
echo 'KILLPOINT_READY {"contract":"killpoint-contract/9","api":"http://127.0.0.1:9","probe":false}'
exit 3
