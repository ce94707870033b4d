// The backend interface (src/backend.js), the same tests for each backend,
// and the SQLite file format of docs/store-format.md; domains, the
// maintenance lock and forget (done by the host layer inside the
// component) over each backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, appendFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MemoryBackend } from '../src/backends/memory.js';
import { SqliteBackend } from '../src/backends/sqlite.js';
import { domains, open, unlock } from '../src/index.js';
import { notBuilt } from './built.js';

const dir = mkdtempSync(join(tmpdir(), 'engram-js-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const BACKENDS = {
  memory: () => new MemoryBackend(),
  sqlite: () => new SqliteBackend(join(dir, `store-${n++}.db`)),
};
const b = (...bytes) => Uint8Array.from(bytes);
/** A key of an agent's domain in the store format: the id's length (4 bytes, big-endian), the id, then `rest`. */
const domainKey = (agent, ...rest) => b(0, 0, 0, agent.length, ...Buffer.from(agent), ...rest);
const row = (request_id, extra = {}) => ({
  at: 5, agent_id: 'alice', request_id, operation: 'READ', source: null, record_type: 'STATE',
  outcome: 'RETURNED', stored_id: null, count: 0, reason: null, ...extra,
});

for (const [name, make] of Object.entries(BACKENDS)) {
  test(`${name}: bytewise order, scans both ways, limits`, () => {
    const store = make();
    assert.equal(store.commit([], [b(2), b(1, 255), b(1), b(0x80)].map((key) => ({ type: 'put', key, value: key })), []), true);
    const keys = (pairs) => pairs.map(([k]) => Array.from(k));
    assert.deepEqual(keys(store.scan(b(), b(255), 10, false)), [[1], [1, 255], [2], [0x80]]);
    assert.deepEqual(keys(store.scan(b(1), b(2), 10, true)), [[1, 255], [1]]);
    assert.deepEqual(keys(store.scan(b(), b(255), 2, true)), [[0x80], [2]]);
    assert.deepEqual(Array.from(store.get(b(1, 255))), [1, 255]);
    assert.equal(store.get(b(9)), undefined);
    assert.deepEqual(store.getMany([b(9), b(2)]).map((v) => v && Array.from(v)), [undefined, [2]]);
    store.close();
  });

  test(`${name}: a failed precondition changes nothing and is a conflict`, () => {
    const store = make();
    assert.equal(store.commit([{ type: 'absent', key: b(1) }], [{ type: 'put', key: b(1), value: b(7) }], [row('w1')]), true);
    assert.equal(store.commit([{ type: 'absent', key: b(1) }], [{ type: 'put', key: b(2), value: b(7) }], [row('w2')]), false);
    assert.equal(store.commit([{ type: 'holds', key: b(1), value: b(8) }], [{ type: 'delete', key: b(1) }], []), false);
    assert.equal(store.get(b(2)), undefined);
    assert.equal(store.commit([{ type: 'holds', key: b(1), value: b(7) }], [{ type: 'delete', key: b(1) }], []), true);
    assert.equal(store.get(b(1)), undefined);
    assert.deepEqual(store.auditRows({}).map((r) => r.request_id), ['w1']);
    store.close();
  });

  test(`${name}: audit rows: commits and appends in order, filters, the newest first cut`, () => {
    const store = make();
    store.appendAudit([row('r1')]);
    store.commit([], [{ type: 'put', key: b(1), value: b(1) }], [row('w1', { operation: 'WRITE', outcome: 'ACCEPTED', stored_id: 'x', count: null })]);
    store.appendAudit([row('r2', { agent_id: 'bob' })]);
    assert.deepEqual(store.auditRows({}).map((r) => r.request_id), ['r1', 'w1', 'r2']);
    assert.deepEqual(store.auditRows({ agent: 'alice' }).map((r) => r.request_id), ['r1', 'w1']);
    assert.deepEqual(store.auditRows({ operation: 'WRITE' })[0], row('w1', { operation: 'WRITE', outcome: 'ACCEPTED', stored_id: 'x', count: null }));
    assert.deepEqual(store.auditRows({ limit: 1 }).map((r) => r.request_id), ['r2']);
    store.close();
  });

  test(`${name}: domains, the maintenance lock and forget`, { skip: notBuilt }, async () => {
    const store = make();
    for (const agent of ['bob', 'alice', 'al']) {
      store.commit([], [{ type: 'put', key: domainKey(agent, 1), value: b(1) }], []);
    }
    const maintenance = await open('alice', { store, mode: 'maintenance' });
    assert.deepEqual(await domains(store), ['al', 'bob', 'alice']);
    await assert.rejects(open('alice', { store, mode: 'maintenance' }), /locked for maintenance by process/);
    assert.deepEqual(maintenance.forget(), { agent_id: 'alice', removed: 1 });
    maintenance.close();
    assert.deepEqual(await unlock(store, 'alice'), { agent_id: 'alice', unlocked: false }, 'the lock was let go');
    assert.deepEqual(await domains(store), ['al', 'bob']);
    const [audited] = store.auditRows({ operation: 'FORGET' });
    assert.equal(audited.count, 1);
    assert.equal(audited.source, '{"agent_id":"alice","component":"MAINTENANCE","actor":"SYSTEM"}');
    store.close();
  });
}

test('sqlite: the file format every host shares', () => {
  const path = join(dir, 'format.db');
  new SqliteBackend(path).close();
  const db = new DatabaseSync(path);
  assert.equal(db.prepare('PRAGMA application_id').get().application_id, 0x454e4752);
  assert.equal(db.prepare('PRAGMA user_version').get().user_version, 2);
  assert.equal(db.prepare('PRAGMA journal_mode').get().journal_mode, 'wal');
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type IN ('table','index') ORDER BY name").all().map((r) => r.name);
  assert.deepEqual(tables, ['engram_audit', 'engram_audit_agent', 'engram_kv', 'engram_trail']);
  assert.equal(db.prepare('SELECT moved FROM engram_trail WHERE id = 1').get().moved, 0);
  db.close();
  const header = readFileSync(path).subarray(18, 20);
  assert.deepEqual(Array.from(header), [2, 2]);
});

// proves S-FILE
test('sqlite: synchronous FULL by default, NORMAL on request', () => {
  const full = new SqliteBackend(join(dir, 'full.db'));
  assert.equal(full.db.prepare('PRAGMA synchronous').get().synchronous, 2);
  full.close();
  const normal = new SqliteBackend(join(dir, 'normal.db'), { synchronous: 'NORMAL' });
  assert.equal(normal.db.prepare('PRAGMA synchronous').get().synchronous, 1);
  normal.close();
});

// proves S-FILE
test('sqlite: another database, or a newer schema, is refused and left alone', () => {
  const other = join(dir, 'other.db');
  const db = new DatabaseSync(other);
  db.exec('CREATE TABLE t (x)');
  db.close();
  assert.throws(() => new SqliteBackend(other), /not an Engram store/);
  const newer = join(dir, 'newer.db');
  new SqliteBackend(newer).close();
  const db2 = new DatabaseSync(newer);
  db2.exec('PRAGMA user_version = 3');
  db2.close();
  assert.throws(() => new SqliteBackend(newer), /schema version 3/);
  const text = join(dir, 'text.db');
  writeFileSync(text, 'hello, this is not a database at all, not even close to one.....................................................................');
  assert.throws(() => new SqliteBackend(text), /not an Engram store/);
});

// proves S-FILE
test('sqlite: a version-1 store is upgraded, and its trail file moved from the start', () => {
  const path = join(dir, 'version1.db');
  new SqliteBackend(path).close();
  const db = new DatabaseSync(path);
  db.exec('DROP TABLE engram_trail; PRAGMA user_version = 1');
  db.close();
  const line = { at: 7, agent_id: 'alice', request_id: 'old-read', operation: 'READ', record_type: 'FACT', outcome: 'RETURNED', count: 0 };
  writeFileSync(`${path}-trail`, `${JSON.stringify(line)}\n`);
  const store = new SqliteBackend(path);
  assert.equal(store.db.prepare('PRAGMA user_version').get().user_version, 2);
  assert.deepEqual(store.auditRows({}).map((row) => row.request_id), ['old-read']);
  assert.equal(readFileSync(`${path}-trail`).length, 0);
  store.close();
});

// proves S-AUDIT
test('sqlite: read entries go to the trail file, and the next commit moves them ahead of its own; a torn line is skipped', () => {
  const path = join(dir, 'trail.db');
  const store = new SqliteBackend(path);
  store.appendAudit([row('r1'), row('r2', { source: '{"agent_id":"alice","component":"COGNITION","actor":"USER"}' })]);
  const lines = readFileSync(`${path}-trail`, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines[0], { at: 5, agent_id: 'alice', request_id: 'r1', operation: 'READ', record_type: 'STATE', outcome: 'RETURNED', count: 0 });
  assert.deepEqual(lines[1].source, { agent_id: 'alice', component: 'COGNITION', actor: 'USER' });
  appendFileSync(`${path}-trail`, '{"at":5,"agent_id":"ali');
  store.commit([], [{ type: 'put', key: b(1), value: b(1) }], [row('w1', { operation: 'WRITE' })]);
  assert.equal(readFileSync(`${path}-trail`, 'utf8'), '');
  const db = new DatabaseSync(path);
  const rows = db.prepare('SELECT request_id, source FROM engram_audit ORDER BY seq').all();
  assert.deepEqual(rows.map((r) => r.request_id), ['r1', 'r2', 'w1']);
  assert.equal(rows[1].source, '{"agent_id":"alice","component":"COGNITION","actor":"USER"}');
  db.close();
  store.appendAudit([row('r3')]);
  assert.deepEqual(store.auditRows({}).map((r) => r.request_id), ['r1', 'r2', 'w1', 'r3']);
  assert.equal(readFileSync(`${path}-trail`, 'utf8'), '');
  store.close();
});

test('the lock area is above every domain', { skip: notBuilt }, async () => {
  const store = new MemoryBackend();
  const alice = await open('alice', { store, mode: 'maintenance' });
  const source = { agent_id: 'alice', component: 'MAINTENANCE', actor: 'USER' };
  const written = alice.write({ request_id: 'm1', source, record: { record_type: 'STATE', timestamp: 1, payload: { subject: 's', properties: {} } } });
  assert.ok(written.ACCEPTED, JSON.stringify(written));
  const keys = store.scan(b(), b(0xff, 0xff), 1000, false).map(([key]) => Array.from(key));
  alice.close();
  const prefix = [0, 0, 0, 5, 97, 108, 105, 99, 101];
  const lock = keys.at(-1);
  assert.equal(lock[0], 0xff, 'the lock is above the domain');
  assert.deepEqual(lock.slice(-prefix.length), prefix, "the lock names the domain's prefix");
  assert.ok(keys.length > 1 && keys.slice(0, -1).every((key) => prefix.every((byte, i) => key[i] === byte)));
  assert.equal(store.scan(b(0xff), b(0xff, 0xff), 10, false).length, 0, 'the lock was let go');
});
