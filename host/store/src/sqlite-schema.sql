-- The tables of an Engram store in SQLite, the one text every host runs
-- (docs/store-format.md describes them). A new file gets every version
-- below, then `PRAGMA application_id = 0x454E4752` and `PRAGMA
-- user_version` set to the last version; a file of an older version gets
-- the versions after its own. Each version starts at a line `-- version N`.

-- version 1
CREATE TABLE engram_kv (
    key   BLOB PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE engram_audit (
    seq             INTEGER PRIMARY KEY,
    at              INTEGER NOT NULL,
    agent_id        TEXT NOT NULL,
    request_id      TEXT NOT NULL,
    operation       TEXT NOT NULL,
    source          TEXT,
    record_type     TEXT,
    outcome         TEXT NOT NULL,
    stored_id       TEXT,
    count           INTEGER,
    reason          TEXT
);
CREATE INDEX engram_audit_agent ON engram_audit (agent_id, seq);

-- version 2: how far the trail file's entries are moved into engram_audit
CREATE TABLE engram_trail (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    moved INTEGER NOT NULL
);
INSERT INTO engram_trail (id, moved) VALUES (1, 0);

-- version 3: who made a call, as a server that authenticates its callers
-- names them (the token's name, never its secret); NULL where nobody was
-- named (a library, the command line, every entry written before)
ALTER TABLE engram_audit ADD COLUMN caller TEXT;

-- version 4: the audit rows in one tree, an agent's side by side, so that
-- an entry costs a write one page of the trail, not two (the table's and
-- its agent index's). `seq` orders an agent's entries; across agents it
-- orders them by time (docs/store-format.md). The rows keep their `seq`.
CREATE TABLE engram_audit_by_agent (
    agent_id    TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    request_id  TEXT NOT NULL,
    operation   TEXT NOT NULL,
    source      TEXT,
    record_type TEXT,
    outcome     TEXT NOT NULL,
    stored_id   TEXT,
    count       INTEGER,
    reason      TEXT,
    caller      TEXT,
    PRIMARY KEY (agent_id, seq)
) WITHOUT ROWID;
INSERT INTO engram_audit_by_agent (agent_id, seq, at, request_id, operation, source,
                                   record_type, outcome, stored_id, count, reason, caller)
    SELECT agent_id, seq, at, request_id, operation, source,
           record_type, outcome, stored_id, count, reason, caller
    FROM engram_audit ORDER BY agent_id, seq;
DROP TABLE engram_audit;
ALTER TABLE engram_audit_by_agent RENAME TO engram_audit;
