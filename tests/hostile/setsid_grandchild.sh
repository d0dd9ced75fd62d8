#!/bin/sh
# Starts a grandchild in a session of its own (`setsid`): out of the runtime's process group, where
# the group kill cannot reach it. Never becomes ready.
export KILLPOINT_HOSTILE_MARKER="$1"
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
echo "setsid_grandchild: started a grandchild in a session of its own" >&2
sleep 1000
