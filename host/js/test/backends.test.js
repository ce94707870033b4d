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
    assert.deepEqual(store.auditPage(undefined, 10).map((r) => r.request_id), ['w1']);
    store.close();
  });

  test(`${name}: audit rows: commits and appends kept as given, in order, paged newest first`, () => {
    const store = make();
    store.appendAudit([row('r1')]);
    const w1 = row('w1', { operation: 'WRITE', outcome: 'ACCEPTED', stored_id: 'x', count: null });
    store.commit([], [{ type: 'put', key: b(1), value: b(1) }], [w1]);
    store.appendAudit([row('r2', { agent_id: 'bob' }), row('r3')]);
    const all = store.auditPage(undefined, 10);
    assert.deepEqual(all.map((r) => r.request_id), ['r3', 'r2', 'w1', 'r1']);
    assert.ok(all.every((r, i) => i === 0 || r.seq < all[i - 1].seq), 'seq rises in append order');
    const { seq, ...kept } = all[2];
    assert.deepEqual(kept, w1, 'a row comes back as it was given');
    const first = store.auditPage(undefined, 2);
    assert.deepEqual(first.map((r) => r.request_id), ['r3', 'r2']);
    assert.deepEqual(store.auditPage(first[1].seq, 2).map((r) => r.request_id), ['w1', 'r1'], 'the next page');
    assert.deepEqual(store.auditPage(all[3].seq, 2), [], 'nothing before the oldest');
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
    const [audited] = store.auditPage(undefined, 1);
    assert.equal(audited.operation, 'FORGET');
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

/** What a call throws: its class and words, or what it answered. */
async function outcomeOf(f) {
  try {
    return ['answered', await f()];
  } catch (error) {
    return [error.constructor.name, error.message];
  }
}

// The trail of a store written in JavaScript is read by the host layer
// (engram_model::audit, as the Rust host reads its own): the same lines,
// filters, limits and refusals as the addon's over the same calls.
test('a store written in JavaScript answers audit queries as a store of the Rust host does', { skip: notBuilt }, async () => {
  const answers = {};
  for (const [driver, store] of [['addon', await openStore()], ['wasm driver', new MemoryBackend()]]) {
    const source = (agent) => ({ agent_id: agent, component: 'COGNITION', actor: 'USER' });
    const state = (id, agent, timestamp) => ({ request_id: id, source: source(agent), record: { record_type: 'STATE', timestamp, payload: { subject: 's', properties: {} } } });
    const alice = await open('alice', { store });
    const bob = await open('bob', { store });
    alice.write(state('w1', 'alice', 1));
    alice.write(state('w1', 'alice', 1));
    alice.write(state('w-other', 'bob', 2));
    bob.write(state('w2', 'bob', 3));
    alice.read({ record_type: 'STATE', selector: { Latest: { limit: 5 } }, request_id: 'r1' });
    // The time and the record ids differ from store to store; whether a line has an id does not.
    const timeless = (lines) => lines.map(({ at, stored_id, ...line }) => ({ ...line, stored: stored_id !== undefined }));
    const all = await auditTrail(store, {});
    const queries = [{}, { agent: 'alice' }, { operation: 'WRITE' }, { outcome: 'REJECTED' }, { agent: 'bob', outcome: 'ACCEPTED' }, { limit: 2 }];
    const refused = [{ limit: 0 }, { limit: 100001 }, { limit: 1.5 }, { agnt: 'alice' }, { operation: 'write' }];
    answers[driver] = {
      queries: await Promise.all(queries.map(async (query) => timeless(await auditTrail(store, query)))),
      since: (await auditTrail(store, { since: all[2].at })).length === all.filter((line) => line.at >= all[2].at).length,
      until: (await auditTrail(store, { until: all[2].at })).length === all.filter((line) => line.at < all[2].at).length,
      domain: timeless(alice.audit({ agent: 'bob', operation: 'WRITE' })),
      refused: await Promise.all(refused.map((query) => outcomeOf(() => auditTrail(store, query)))),
      refusedInDomain: await outcomeOf(() => alice.audit({ limit: 0 })),
    };
    await alice.close();
    await bob.close();
    store.close();
  }
  assert.equal(answers.addon.queries[0].length, 5, JSON.stringify(answers.addon.queries[0]));
  assert.ok(answers.addon.since && answers.addon.until);
  assert.deepEqual(answers.addon.refusedInDomain, ['EngramInputError', 'audit: the limit must be 1 to 100000']);
  assert.deepEqual(answers['wasm driver'], answers.addon);
});

// Rows the package's stores kept before the host layer read the trail
// (made by the package itself then) read back as they did.
test('audit rows kept by an earlier version of a store written in JavaScript read back the same', { skip: notBuilt }, async () => {
  const store = new MemoryBackend();
  const source = '{"agent_id":"alice","component":"COGNITION","actor":"USER"}';
  store.audit.push(
    { at: 5, agent_id: 'alice', request_id: 'w0', operation: 'WRITE', source, record_type: 'STATE', outcome: 'ACCEPTED', stored_id: 'x', count: null, reason: null, caller: null },
    // Before audit rows named their caller.
    { at: 6, agent_id: 'alice', request_id: 'r0', operation: 'READ', source: null, record_type: 'STATE', outcome: 'RETURNED', stored_id: null, count: 1, reason: null },
  );
  assert.deepEqual(await auditTrail(store, {}), [
    { at: 5, agent_id: 'alice', request_id: 'w0', operation: 'WRITE', source: JSON.parse(source), record_type: 'STATE', outcome: 'ACCEPTED', stored_id: 'x' },
    { at: 6, agent_id: 'alice', request_id: 'r0', operation: 'READ', record_type: 'STATE', outcome: 'RETURNED', count: 1 },
  ]);
  assert.deepEqual(await auditTrail(store, { since: 6 }), [{ at: 6, agent_id: 'alice', request_id: 'r0', operation: 'READ', record_type: 'STATE', outcome: 'RETURNED', count: 1 }]);
});
