#!/bin/sh
# PostgreSQL 15 as a killpoint service (postgres.toml; CONTRACT.md §2, "Services"): DBOS's system
# database beside the worker (examples/dbos with KILLPOINT_SERVICE_POSTGRES_ADDR set).
#
#   postgres.sh [-c NAME=VALUE ...]   extra server settings, e.g. -c fsync=off
#
# A fresh cluster per run: `initdb` (with its sync, so the cluster survives a power loss as any
# synced file does) into `cluster/` of KILLPOINT_SERVICE_DATA_DIR at the service's first start; a
# restart (a [[service_fault]]) finds it there and runs crash recovery on it. The server listens on
# 127.0.0.1:KILLPOINT_SERVICE_PORT only, with no unix socket, and keeps its dynamic shared memory
# in the cluster (`mmap`), not in /dev/shm. User `dbos`, trust authentication (loopback only).
# After a crash PostgreSQL syncs its whole data dir before it replays its WAL; here with one
# syncfs(2) rather than an fsync per file (recovery_init_sync_method), which takes 2-4 s for the
# ~1000 files of a fresh cluster on this loaded machine and 0.4-0.8 s as one call. Settings given
# as arguments come last, so they win (e.g. -c recovery_init_sync_method=fsync).
#
# PostgreSQL refuses to run as root, and its System V interlock segment would outlive a SIGKILL
# (the harness's end of a run). So the server runs in namespaces of its own (`unshare`, no
# privilege needed): a user namespace in which the invoking user is an ordinary user (uid 1000
# there), an IPC namespace that takes the segment with it when its last process dies, and a mount
# namespace whose /dev/shm is a private tmpfs (initdb's bootstrap uses POSIX shared memory).
set -eu
data="$KILLPOINT_SERVICE_DATA_DIR/cluster"
inside=$(cat <<'EOF'
set -eu
mount -t tmpfs -o size=64m,mode=1777 tmpfs /dev/shm
as_user() { unshare --user --map-user=1000 --map-group=1000 "$@"; }
if [ ! -f "$1/PG_VERSION" ]; then
    as_user initdb -D "$1" -U dbos --auth=trust -E UTF8 --locale=C.UTF-8 --no-instructions >"$1.initdb.log" 2>&1 \
        || { cat "$1.initdb.log" >&2; exit 1; }
fi
data=$1
shift
exec unshare --user --map-user=1000 --map-group=1000 postgres -D "$data" \
    -c listen_addresses=127.0.0.1 -c port="$KILLPOINT_SERVICE_PORT" -c unix_socket_directories= \
    -c dynamic_shared_memory_type=mmap -c recovery_init_sync_method=syncfs "$@"
EOF
)
exec unshare --user --map-root-user --mount --ipc sh -c "$inside" postgres.sh "$data" "$@"
