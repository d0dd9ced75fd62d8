#!/bin/sh
# PostgreSQL 15 as a killpoint service (postgres.toml; CONTRACT.md §2, "Services"): DBOS's system
# database beside the worker (examples/dbos with KILLPOINT_SERVICE_POSTGRES_ADDR set).
#
#   postgres.sh [--template DIR] [-c NAME=VALUE ...]   the server; extra settings come last and
#                                                      win, e.g. -c fsync=off
#   postgres.sh --initdb DIR                           a fresh cluster at DIR, for --template
#   postgres.sh --ready [pg_isready options]           exits 0 once the server accepts connections
#
# A fresh cluster per run, in `cluster/` of KILLPOINT_SERVICE_DATA_DIR, made at the service's first
# start: by `initdb` (with its sync, so it survives a power loss as any synced file does) or, with
# --template, as a copy of a cluster `--initdb` made and no server ever ran on (refused otherwise),
# every file and directory of the copy synced. A restart (a [[service_fault]]) finds the cluster
# there and runs crash recovery on it. The server listens on 127.0.0.1:KILLPOINT_SERVICE_PORT only,
# with no unix socket, and keeps its dynamic shared memory in the cluster (`mmap`), not in
# /dev/shm. User `dbos`, trust authentication (loopback only).
#
# After a crash PostgreSQL syncs its whole data dir before it replays its WAL; here with one
# syncfs(2) rather than an fsync per file (recovery_init_sync_method): 2-4 s for the ~1000 files
# of a fresh cluster on a loaded 2-core machine, 0.4-0.8 s as one call.
#
# PostgreSQL refuses to run as root, and its System V interlock segment would outlive a SIGKILL
# (the harness's end of a run). So initdb and the server run in namespaces of their own (`unshare`,
# no privilege needed): a user namespace in which the invoking user is an ordinary user (uid 1000
# there), an IPC namespace that takes the segment with it when its last process dies, and a mount
# namespace in which initdb has a private tmpfs as /dev/shm (its bootstrap uses POSIX shared
# memory, which a killed initdb would leave in the real one).
set -eu
# Debian installs PostgreSQL's server programs outside PATH (/usr/lib/postgresql/VERSION/bin).
if ! command -v initdb >/dev/null 2>&1; then
    for bin in /usr/lib/postgresql/*/bin; do if [ -x "$bin/initdb" ]; then PATH="$PATH:$bin"; fi; done
    command -v initdb >/dev/null 2>&1 || {
        echo "postgres.sh: expected PostgreSQL's initdb and postgres on PATH or in /usr/lib/postgresql/*/bin, found neither: install PostgreSQL 15 (Debian: postgresql-15)" >&2
        exit 1
    }
fi
if [ "${1:-}" = --ready ]; then
    shift
    # The server's own pg_isready, beside its initdb: Debian's /usr/bin/pg_isready is a Perl
    # wrapper choosing a cluster version, 25 ms of CPU a call where the program takes 1, and the
    # harness polls the check through every start and restart of the server.
    bin=$(dirname "$(readlink -f "$(command -v initdb)")")
    exec "$bin/pg_isready" -q -h 127.0.0.1 -p "$KILLPOINT_SERVICE_PORT" "$@"
fi
inside=$(cat <<'EOF'
set -eu
mode=$1 data=$2
shift 2
if [ "$mode" = initdb ]; then
    # A cluster that is itself under /dev/shm (killpoint keeps run directories in memory) would be
    # hidden by the private /dev/shm: it is reached through a bind mount of its parent, made first
    # on a private /tmp (this namespace's alone; initdb writes nothing there).
    case "$data" in
    /dev/shm/*)
        mount -t tmpfs -o size=1m,mode=0755 tmpfs /tmp
        mkdir /tmp/parent
        mount --bind "$(dirname "$data")" /tmp/parent
        data="/tmp/parent/$(basename "$data")"
        ;;
    esac
    mount -t tmpfs -o size=64m,mode=1777 tmpfs /dev/shm
    exec unshare --user --map-user=1000 --map-group=1000 initdb -D "$data" -U dbos --auth=trust -E UTF8 --locale=C.UTF-8 --no-instructions
fi
# The server needs no /dev/shm: its dynamic shared memory is in the cluster (`mmap`).
exec unshare --user --map-user=1000 --map-group=1000 postgres -D "$data" \
    -c listen_addresses=127.0.0.1 -c port="$KILLPOINT_SERVICE_PORT" -c unix_socket_directories= \
    -c dynamic_shared_memory_type=mmap -c recovery_init_sync_method=syncfs "$@"
EOF
)
namespaced() { unshare --user --map-root-user --mount --ipc sh -c "$inside" postgres.sh "$@"; }

if [ "${1:-}" = --initdb ]; then
    [ $# -eq 2 ] || { echo "postgres.sh: expected --initdb DIR, found: $*" >&2; exit 2; }
    namespaced initdb "$2"
    exit
fi
template=
if [ "${1:-}" = --template ]; then
    [ $# -ge 2 ] || { echo "postgres.sh: expected --template DIR, found nothing after it" >&2; exit 2; }
    template=$2
    shift 2
fi
data="$KILLPOINT_SERVICE_DATA_DIR/cluster"
if [ ! -f "$data/PG_VERSION" ]; then
    if [ -z "$template" ]; then
        namespaced initdb "$data" >"$data.initdb.log" 2>&1 || { cat "$data.initdb.log" >&2; exit 1; }
    elif [ ! -f "$template/PG_VERSION" ] || [ -e "$template/postmaster.pid" ] || [ -e "$template/postmaster.opts" ]; then
        echo "postgres.sh: expected in $template a cluster made by --initdb that no server ran on, found $(ls -A "$template" 2>&1 | tr '\n' ' ')" >&2
        exit 1
    else
        cp -a "$template" "$data"
        find "$data" -print0 | xargs -0 sync --
        sync -- "$KILLPOINT_SERVICE_DATA_DIR"
    fi
fi
exec unshare --user --map-root-user --mount --ipc sh -c "$inside" postgres.sh server "$data" "$@"
