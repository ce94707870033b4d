// One store file, two hosts: a store written from Node is read by the
// native `engram` command line, and one written by the command line is read
// from Node (docs/store-format.md). The command line is the binary that
// `ENGRAM_BIN` names (`cargo test` sets it); without it these tests skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { open } from '../src/index.js';
import { notBuilt } from './built.js';

const bin = process.env.ENGRAM_BIN;
const skip = notBuilt ?? (bin ? undefined : 'ENGRAM_BIN does not name the `engram` binary');
const dir = mkdtempSync(join(tmpdir(), 'engram-interop-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the command line on `store`; its standard output's lines, parsed. */
function engram(store, args, input = '') {
  const out = execFileSync(bin, ['--store', store, ...args], { input, encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

const source = (agent) => ({ agent_id: agent, component: 'COGNITION', actor: 'USER' });
const fact = (agent, request_id, content) => ({
  request_id,
  source: source(agent),
  record: {
    record_type: 'FACT',
    key: 'user.diet',
    payload: {
      semantic: {
        content,
        context: 'dining',
        valid_at: 1767225600000,
        strength: 1.0,
        last_accessed: 1767225600000,
        access_count: 0,
        sources: [],
        confidence: 0.9,
        privacy_tier: 'public',
      },
    },
  },
});
const byKey = (request_id) => ({ record_type: 'FACT', selector: { ByKey: { key: 'user.diet' } }, request_id });

// proves S-FILE, IO-W2, IO-W6: one file format, retries and domains across hosts
test('a store written from Node is read by the engram command line', { skip }, async () => {
  const store = join(dir, 'from-node.db');
  const domain = await open('alice', { store });
  let written;
  let read;
  try {
    written = domain.write(fact('alice', 'w1', 'Alice is vegetarian'));
    read = domain.read(byKey('q-node'));
  } finally {
    domain.close();
  }
  const id = written.ACCEPTED.stored_id;

  // The file carries the format's marks.
  const db = new DatabaseSync(store, { readOnly: true });
  assert.equal(db.prepare('PRAGMA application_id').get().application_id, 0x454e4752);
  assert.equal(db.prepare('PRAGMA user_version').get().user_version, 4);
  assert.equal(db.prepare('PRAGMA journal_mode').get().journal_mode, 'wal');
  db.close();

  // The command line answers the same record, byte for byte the same JSON.
  const [answer] = engram(store, ['read', '--agent', 'alice'], JSON.stringify(byKey('q-cli')));
  assert.deepEqual(answer, read);
  assert.equal(answer.records[0].id, id);
  // A retry of Node's request id through the command line answers Node's id (IO-W2).
  const [retry] = engram(store, ['write', '--agent', 'alice'], JSON.stringify(fact('alice', 'w1', 'Alice is vegetarian')));
  assert.deepEqual(retry, { ACCEPTED: { stored_id: id } });
  // Another agent's domain does not see it (IO-W6).
  const [bob] = engram(store, ['read', '--agent', 'bob'], JSON.stringify(byKey('q-bob')));
  assert.deepEqual(bob, { records: [] });
  // Node's audit entries are in the trail the command line reads, in order:
  // its write, its read (left in the trail file), then the command line's.
  const trail = engram(store, ['audit', '--agent', 'alice']).map((e) => [e.request_id, e.operation, e.outcome]);
  assert.deepEqual(trail, [
    ['w1', 'WRITE', 'ACCEPTED'],
    ['q-node', 'READ', 'RETURNED'],
    ['q-cli', 'READ', 'RETURNED'],
    ['w1', 'WRITE', 'REPLAYED'],
  ]);
});

// proves S-FILE, IO-W2
test('a store written by the engram command line is read from Node', { skip }, async () => {
  const store = join(dir, 'from-cli.db');
  const [written] = engram(store, ['write', '--agent', 'bob'], JSON.stringify(fact('bob', 'w1', 'Bob eats fish')));
  const id = written.ACCEPTED.stored_id;
  const [cli] = engram(store, ['read', '--agent', 'bob'], JSON.stringify(byKey('q-cli')));
  const domain = await open('bob', { store });
  try {
    const read = domain.read(byKey('q-node'));
    assert.deepEqual(read, cli);
    assert.equal(read.records[0].id, id);
    // The same request id from Node is a retry of the command line's write (IO-W2).
    assert.deepEqual(domain.write(fact('bob', 'w1', 'Bob eats fish')), { ACCEPTED: { stored_id: id } });
    const trail = domain.audit().map((e) => [e.request_id, e.operation, e.outcome]);
    assert.deepEqual(trail, [
      ['w1', 'WRITE', 'ACCEPTED'],
      ['q-cli', 'READ', 'RETURNED'],
      ['q-node', 'READ', 'RETURNED'],
      ['w1', 'WRITE', 'REPLAYED'],
    ]);
  } finally {
    domain.close();
  }
});

// proves S-FILE: a store of schema version 3, written by the build before
// version 4 (tests/fixtures/store-v3.sh), opens from Node holding its
// records and its agent's whole trail, the entries pending in its trail file
// after those in the file
test('a version 3 store written by the build before opens from Node', { skip }, async () => {
  const fixtures = new URL('../../../tests/fixtures/', import.meta.url);
  const store = join(dir, 'v3.db');
  copyFileSync(new URL('store-v3.db', fixtures), store);
  copyFileSync(new URL('store-v3.db-trail', fixtures), `${store}-trail`);
  const domain = await open('alice', { store });
  try {
    const reads = ['q-1', 'q-2', 'q-3', 'q-4'];
    const trail = domain.audit({ limit: 1000 }).map((e) => e.request_id);
    assert.deepEqual(trail, [1, 2, 3, 4, 5, 6, 7].map((n) => `alice-000${n}`).concat(reads, reads));
    const read = domain.read(byKey('n-1'));
    assert.equal(read.records[0].payload.semantic.content, 'Alice is vegetarian');
  } finally {
    domain.close();
  }
  const db = new DatabaseSync(store);
  try {
    assert.equal(db.prepare('PRAGMA user_version').get().user_version, 4);
  } finally {
    db.close();
  }
});

/** The schema a store holds: every table and index with its SQL text. */
function schemaOf(path) {
  const db = new DatabaseSync(path);
  try {
    return db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name').all();
  } finally {
    db.close();
  }
}

// proves S-FILE: one schema text, run by every host: a store Node creates
// holds, table by table, the SQL the command line's holds
test('a store created from Node has the schema text of one the command line creates', { skip }, async () => {
  const fromNode = join(dir, 'schema-node.db');
  const fromCli = join(dir, 'schema-cli.db');
  const domain = await open('alice', { store: fromNode });
  domain.close();
  engram(fromCli, ['write', '--agent', 'alice'], JSON.stringify(fact('alice', 'w1', 'Alice is vegetarian')));
  const node = schemaOf(fromNode);
  assert.deepEqual(
    node.map((row) => row.name),
    ['engram_audit', 'engram_kv', 'engram_trail'],
  );
  assert.deepEqual(node, schemaOf(fromCli));
});
