"""The fenced store (CONTRACT.md §9): one SQLite database under the data dir, every state change
one transaction that first checks no newer incarnation has opened the store; the data-dir check
(§2-4); and what start-up does to an attempt that was in flight (§4-8).

A task's decision (CONTRACT.md §12) is kept only as far as recovery needs it (execution.py says
why): `DISPATCHED` records the decided tool's name and kind always, and its arguments only for a
kind without lookup or a safely repeatable one; for a kind with lookup `arguments` stays NULL."""

import contextlib
import os
import sqlite3
import sys
import threading

from .net import fenced, log

SCHEMA = """
CREATE TABLE IF NOT EXISTS fence (  -- the newest incarnation that opened the store (section 9)
    only INTEGER PRIMARY KEY CHECK (only = 1),
    incarnation INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS operations (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,  -- submission order = processing order
    id              TEXT NOT NULL UNIQUE,
    request         TEXT NOT NULL,   -- canonical JSON of the submission, to detect a 409
    tenant          TEXT NOT NULL,
    actor           TEXT NOT NULL,
    tool_name       TEXT,            -- a task's: NULL until a decision is dispatched
    tool_kind       TEXT,
    arguments       TEXT,            -- JSON, passed to the provider unchanged; a task's: see the docstring
    task            TEXT,            -- JSON {prompt, tools} of a task (section 12), else NULL
    destinations    TEXT NOT NULL,   -- JSON list, in submission order
    execution       TEXT NOT NULL,
    paused          INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT NOT NULL,
    provider_ref    TEXT,
    result          TEXT,            -- JSON
    failure         TEXT,            -- reason text, NULL unless FAILED
    next_at         REAL NOT NULL DEFAULT 0,  -- wall clock: not before this time
    -- After a restore (CONTRACT.md section 13): 1 it was in the backup not yet attempted, 2
    -- accepted by a restored incarnation; the lost host may have attempted either.
    maybe_sent      INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS deliveries (
    operation_id    TEXT NOT NULL,
    position        INTEGER NOT NULL,
    destination     TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT NOT NULL,
    last_error      TEXT,
    next_at         REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (operation_id, destination)
);
CREATE TABLE IF NOT EXISTS audit (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id    TEXT NOT NULL,
    event           TEXT NOT NULL,
    detail          TEXT NOT NULL
);
"""


def check_data_dir(data_dir):
    """Exits naming `data_dir` when it is missing or unreadable (§2-4). Never made here: the
    harness makes it before the first start, so a missing one means the state is gone, and
    starting afresh would forget what was accepted. Call it before starting anything that may
    write there (an engine's server, a database): started first, it would make the directory
    afresh, and this check would then find an empty one."""
    if not os.path.isdir(data_dir) or not os.access(data_dir, os.R_OK | os.W_OK | os.X_OK):
        sys.exit(f"KILLPOINT_DATA_DIR {data_dir} is missing or unreadable; refusing to start afresh")


class Store:
    """One SQLite connection shared by all threads behind one lock: the load is tiny, and one
    connection rules out SQLITE_BUSY between the runtime's own threads. Nothing slow (network,
    probe) runs under the lock. A framework's engine keeps its own database beside it."""

    def __init__(self, data_dir, incarnation):
        check_data_dir(data_dir)
        self.incarnation = incarnation
        self.lock = threading.Lock()
        # isolation_level=None: BEGIN/COMMIT are written here, so a transaction is exactly what
        # `tx()` encloses and nothing is left open by the sqlite3 module's implicit rules.
        self.db = sqlite3.connect(os.path.join(data_dir, "runtime.sqlite3"),
                                  isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # a COMMIT is on disk before anything goes on
        self.db.executescript("BEGIN IMMEDIATE;" + SCHEMA + "COMMIT;")
        # Raise the fence: from this commit on, an older incarnation's transactions fail.
        self.db.execute("BEGIN IMMEDIATE")
        row = self.db.execute("SELECT incarnation FROM fence").fetchone()
        if row is not None and row[0] > incarnation:
            fenced(f"incarnation {row[0]} has already opened the store")
        self.db.execute("INSERT INTO fence (only, incarnation) VALUES (1, ?) ON CONFLICT (only) "
                        "DO UPDATE SET incarnation = excluded.incarnation", (incarnation,))
        self.db.execute("COMMIT")

    @contextlib.contextmanager
    def tx(self):
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            # The fence, checked under the write lock of the transaction it guards.
            newest = self.db.execute("SELECT incarnation FROM fence").fetchone()[0]
            if newest != self.incarnation:
                fenced(f"the store is fenced by incarnation {newest}")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    @contextlib.contextmanager
    def read(self):
        with self.lock:
            yield self.db

    def operation(self, op_id):
        with self.read() as db:
            return db.execute("SELECT * FROM operations WHERE id = ?", (op_id,)).fetchone()


def audit(db, op_id, event, detail):
    db.execute("INSERT INTO audit (operation_id, event, detail) VALUES (?, ?, ?)",
               (op_id, event, detail))


def recover(store):
    """On start (§4-8): an attempt still DISPATCHED died with its answer unknown. A SENT delivery
    needs nothing here: the outbox sends it again, with its key."""
    with store.tx() as db:
        rows = db.execute("SELECT id, attempts FROM operations WHERE execution = 'DISPATCHED'").fetchall()
        for row in rows:
            db.execute("UPDATE operations SET execution = 'UNKNOWN', next_at = 0 WHERE id = ?", (row["id"],))
            audit(db, row["id"], "unknown", f"attempt {row['attempts']} was in flight at restart")
    if rows:
        log(f"recovered {len(rows)} in-flight attempt(s) as UNKNOWN")
    restored = os.environ.get("KILLPOINT_RESTORED")
    if restored:
        # Before the ready line (§13-2): what the backup holds unattempted may have been sent by
        # the lost host after the backup was taken.
        with store.tx() as db:
            ids = [r["id"] for r in db.execute("SELECT id FROM operations WHERE execution = 'INTENT_RECORDED'")]
            for op_id in ids:
                db.execute("UPDATE operations SET maybe_sent = 1 WHERE id = ?", (op_id,))
                audit(db, op_id, "restored", f"{restored}: the lost host may have attempted it")
        log(f"started on a restored backup ({restored}): {len(ids)} operation(s) reconciled first")
