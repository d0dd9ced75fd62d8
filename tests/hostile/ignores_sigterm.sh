#!/bin/sh
# Ignores SIGTERM, SIGINT, SIGHUP and SIGQUIT, and so do its children (an ignored signal stays
# ignored across exec). Never becomes ready. Only SIGKILL stops it.
export KILLPOINT_HOSTILE_MARKER="$1"
trap '' TERM INT HUP QUIT
echo "ignores_sigterm: ignoring SIGTERM, SIGINT, SIGHUP and SIGQUIT" >&2
sleep 1000 &
sleep 1000
