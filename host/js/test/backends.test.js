// The backend interface (src/backend.js) of a store written in JavaScript
// (the in-memory one; IndexedDB's and a Durable Object's run the same
// tests in Chromium and workerd); domains, the maintenance lock and forget
// (done by the host layer inside the component) over it, and over a store
// of the Rust host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBackend } from '../src/backends/memory.js';
import { DEFAULT_POSTGRES_OPTIONS, auditTrail, domains, open, openStore, unlock } from '../src/index.js';
import { notBuilt } from './built.js';

const BACKENDS = {
  memory: () => new MemoryBackend(),
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

// proves S-FORGET IO-W7: the same on a store of the Rust host
test('native: domains, the maintenance lock and forget', { skip: notBuilt }, async () => {
  const store = await openStore();
  const source = (agent, component = 'COGNITION') => ({ agent_id: agent, component, actor: 'USER' });
  for (const agent of ['bob', 'alice', 'al']) {
    using domain = await open(agent, { store });
    domain.write({ request_id: 'w', source: source(agent), record: { record_type: 'STATE', timestamp: 1, payload: { subject: 's', properties: {} } } });
  }
  const maintenance = await open('alice', { store, mode: 'maintenance' });
  assert.deepEqual(await domains(store), ['al', 'bob', 'alice']);
  await assert.rejects(open('alice', { store, mode: 'maintenance' }), /locked for maintenance by process/);
  const removed = maintenance.forget();
  assert.equal(removed.agent_id, 'alice');
  assert.ok(removed.removed > 1, JSON.stringify(removed));
  maintenance.close();
  assert.deepEqual(await unlock(store, 'alice'), { agent_id: 'alice', unlocked: false }, 'the lock was let go');
  assert.deepEqual(await domains(store), ['al', 'bob']);
  const [audited] = await auditTrail(store, { operation: 'FORGET' });
  assert.equal(audited.count, removed.removed);
  assert.deepEqual(audited.source, { agent_id: 'alice', component: 'MAINTENANCE', actor: 'SYSTEM' });
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

test('the PostgreSQL connection defaults are every host\'s: one for each option, in ms', () => {
  // Written by the build from engram-store's, which the Rust host opens with.
  const options = ['connectTimeout', 'idleInTransactionTimeout', 'keepalivesIdle', 'statementTimeout', 'tcpUserTimeout'];
  assert.deepEqual(Object.keys(DEFAULT_POSTGRES_OPTIONS).sort(), options);
  for (const ms of Object.values(DEFAULT_POSTGRES_OPTIONS)) assert.ok(Number.isInteger(ms) && ms > 0, String(ms));
  assert.ok(Object.isFrozen(DEFAULT_POSTGRES_OPTIONS));
});
