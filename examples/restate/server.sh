#!/bin/sh
# Restate's server (the npm package @restatedev/restate-server, package.json here) as a killpoint
# service (services.toml; CONTRACT.md §2, "Services"): every listener on 127.0.0.1, on the ports the
# harness picked — ingress on the service's own port, admin and node-to-node on its named ports —
# and every file in the data dir: its RocksDB stores (base dir), and the invoker's and the query
# engine's scratch directories, which would otherwise be made in $TMPDIR (/tmp/invoker-<ulid>).
# No telemetry (a daily request to restate.gateway.scarf.sh), no web UI, one partition (one
# server, a handful of invocations). The server still tries one look-up of api.github.com at its
# start (a check for a newer release, server/src/main.rs, no setting turns it off); it fails
# without a network and changes nothing.
#
#   server.sh [PREFIX]   PREFIX: where `npm ci` installed package.json (default: target/restate-server
#                        of this repository, where tests/frameworks/restate.rs installs it)
set -e
data="$KILLPOINT_SERVICE_DATA_DIR"
mkdir -p "$data/tmp"
export TMPDIR="$data/tmp"
export RESTATE_BASE_DIR="$data"
export RESTATE_NODE_NAME=killpoint
export RESTATE_LISTEN_MODE=tcp
export RESTATE_INGRESS__BIND_ADDRESS="127.0.0.1:$KILLPOINT_SERVICE_PORT"
export RESTATE_ADMIN__BIND_ADDRESS="127.0.0.1:$KILLPOINT_SERVICE_PORT_ADMIN"
export RESTATE_BIND_ADDRESS="127.0.0.1:$KILLPOINT_SERVICE_PORT_NODE"
export RESTATE_ADVERTISED_ADDRESS="http://127.0.0.1:$KILLPOINT_SERVICE_PORT_NODE/"
export RESTATE_WORKER__INVOKER__TMP_DIR="$data/tmp/invoker"
export RESTATE_ADMIN__QUERY_ENGINE__TMP_DIR="$data/tmp/query"
export RESTATE_DISABLE_TELEMETRY=true
export RESTATE_ADMIN__DISABLE_WEB_UI=true
export RESTATE_DEFAULT_NUM_PARTITIONS=1
prefix="${1:-$(dirname "$0")/../../target/restate-server}"
# The platform's binary itself, as the package's node launcher (node_modules/.bin) would start it:
# exec'd, it is the service's one process, and dies with the harness (its death signal is kept).
case "$(uname -m)" in x86_64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
os="$(uname -s | tr '[:upper:]' '[:lower:]')"
exec "$prefix/node_modules/@restatedev/restate-server-$os-$arch/bin/restate-server" \
    --no-logo --log-disable-ansi-codes true
