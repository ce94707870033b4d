-- The tables of an Engram store in PostgreSQL, the one text every host runs
-- (docs/store-format.md describes them), in the schema the store opens
-- in. A new schema gets every version below, then one row of
-- engram_schema holding the last one; a schema of an older version gets
-- the versions after its own, one of a newer version is refused. Each of
-- them starts at a line `-- version N`.

-- version 1
CREATE TABLE engram_schema (
    version    integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    one_row    boolean PRIMARY KEY DEFAULT true CHECK (one_row)
);
CREATE TABLE engram_kv (
    key   bytea PRIMARY KEY,
    value bytea NOT NULL
);
-- Agent ids, request ids and reasons are kept byte for byte (UTF-8): a
-- text column cannot hold every string a caller may send (NUL).
CREATE TABLE engram_audit (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          bigint NOT NULL,
    agent_id    bytea NOT NULL,
    request_id  bytea NOT NULL,
    operation   text NOT NULL,
    source      text,
    record_type text,
    outcome     text NOT NULL,
    stored_id   text,
    count       bigint,
    reason      bytea
);
CREATE INDEX engram_audit_agent ON engram_audit (agent_id, seq);

-- version 2: who made a call, as a server that authenticates its callers
-- names them (the token's name, never its secret); NULL where nobody was
-- named (a library, the command line, every entry written before)
ALTER TABLE engram_audit ADD COLUMN caller bytea;
