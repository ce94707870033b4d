// The library over the real engine (no mocks), on both drivers where both
// apply: the Rust host (the addon) and the wasm driver (a store written in
// JavaScript): timestamps at the ends of i64, a trap and the fresh instance
// after it, the algorithms a user gives, cycles stage by stage,
// maintenance and a store given by path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { EngramInputError, EngramRefusedError, EngramStoppedError, MemoryBackend, auditTrail, open, openStore, exportStore } from '../src/index.js';
import { notBuilt } from './built.js';
import { defaultTokenizer } from '../src/algorithms.js';

const skip = notBuilt;

/** A fresh store of each driver: the Rust host's in memory, and one written in JavaScript. */
const STORES = { native: () => openStore(), wasm: () => new MemoryBackend() };
const dir = mkdtempSync(join(tmpdir(), 'engram-engine-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const source = { agent_id: 'alice', component: 'COGNITION', actor: 'USER' };
const state = (request_id, timestamp, properties = {}) => ({
  request_id, source, record: { record_type: 'STATE', timestamp, payload: { subject: 's', properties } },
});
const I64_MIN = -9223372036854775808n;
const I64_MAX = 9223372036854775807n;
const PLAN = {
  metadata: {},
  steps: [
    { name: 'summary', stage: 'SummarizeMemory', kind: { SummarizeMemory: { of: 'turn' } } },
    { name: 'persist', stage: 'PersistMemory', kind: 'PersistMemory', inputs: ['summary'] },
  ],
};

for (const [driver, makeStore] of Object.entries(STORES))
// proves IO-T1: timestamps are signed 64-bit, exact at both ends
test(`${driver}: STATE timestamps at i64 min and max round-trip exactly, as BigInt`, { skip }, async () => {
  using alice = await open('alice', { store: await makeStore() });
  const min = alice.write(state('w-min', I64_MIN));
  const max = alice.write(`{"request_id":"w-max","source":{"agent_id":"alice","component":"COGNITION","actor":"USER"},"record":{"record_type":"STATE","timestamp":9223372036854775807,"payload":{"subject":"s","properties":{}}}}`);
  assert.ok(min.ACCEPTED && max.ACCEPTED, JSON.stringify([min, max]));
  const answer = alice.read({ record_type: 'STATE', selector: { ByTimeRange: { from: I64_MIN, to: I64_MAX, limit: 10 } }, request_id: 'r' });
  assert.deepEqual(answer.records.map((r) => r.timestamp).sort((a, b) => (a < b ? -1 : 1)), [I64_MIN, I64_MAX]);
  assert.deepEqual(answer.records.map((r) => r.id).sort(), [min.ACCEPTED.stored_id, max.ACCEPTED.stored_id].sort());
});

// Floats whose shortest text a fast parser reads as a neighbour (serde_json
// without `float_roundtrip` reads about a third of all doubles so): written
// from JavaScript, read back as the very values written, on both drivers.
for (const [driver, makeStore] of Object.entries(STORES))
test(`${driver}: a FACT's strength written from JavaScript is read back as the very float written`, { skip }, async () => {
  using alice = await open('alice', { store: await makeStore() });
  const floats = [1.0715660391465826e-75, 3.0261999441573203e-52, 1.2345678901234568e-300, 0.1 + 0.2, 5e-324, 1 / 3];
  floats.forEach((strength, i) => {
    const written = alice.write({ request_id: `f${i}`, source, record: { record_type: 'FACT', key: `user.f${i}`, payload: { semantic: {
      content: 'Alice is vegetarian', context: 'test', valid_at: 1000, strength, last_accessed: 1000, access_count: 0,
      confidence: 0.5, privacy_tier: 'public' } } } });
    assert.ok(written.ACCEPTED, JSON.stringify(written));
    const { records } = alice.read({ record_type: 'FACT', selector: { ByKey: { key: `user.f${i}` } }, request_id: `q${i}` });
    assert.equal(records[0].payload.semantic.strength, strength);
  });
});

test('a request given as text keeps its numbers as written', { skip }, async () => {
  using alice = await open('alice');
  const text = JSON.stringify(state('w', 1)).replace('"properties":{}', '"properties":{"n":1e5}');
  const { ACCEPTED } = alice.write(text);
  const { records } = alice.read({ record_type: 'STATE', selector: { ById: { id: ACCEPTED.stored_id } }, request_id: 'r' });
  assert.equal(records[0].payload.properties.n, 1e5);
});

test('malformed input raises the input error and runs nothing', { skip }, async () => {
  using alice = await open('alice', { input: 'standard input' });
  assert.throws(() => alice.read('{"selector":{"Limit":{"limit":1}},"request_id":"q"}'), (e) =>
    e instanceof EngramInputError && /standard input: .*missing field `record_type`/.test(e.message));
});

// proves S-TRAP: the host layer hands a read's audit row to the host after
// the call; a store that cannot append it fails the call as a trap does
test('a trail the store cannot append to fails the call; the next call has a fresh instance', { skip }, async () => {
  const backend = new MemoryBackend();
  let failing = false;
  const appendAudit = backend.appendAudit.bind(backend);
  backend.appendAudit = (rows) => {
    if (failing) throw new WebAssembly.RuntimeError('the trail is gone');
    appendAudit(rows);
  };
  using alice = await open('alice', { store: backend });
  failing = true;
  assert.throws(
    () => alice.read({ record_type: 'STATE', selector: { Latest: { limit: 1 } }, request_id: 'r1' }),
    (e) => e instanceof EngramStoppedError && e.kind === 'stopped' && /the trail is gone; its instance was stopped/.test(e.message),
  );
  failing = false;
  const answer = alice.read({ record_type: 'STATE', selector: { Latest: { limit: 1 } }, request_id: 'r2' });
  assert.equal(alice._generation, 1, 'a fresh instance answered');
  assert.deepEqual(answer, { records: [] });
  assert.ok(alice.write(state('w', 1)).ACCEPTED);
});

// proves S-TRAP: a call whose instance stopped still has its audit entry
test('a write during which the engine stopped is audited FAILED, with why', { skip }, async () => {
  // The clock is an import without an error of its own: its throwing
  // traps the instance (once: the entry is then stamped by it).
  let failing = false;
  const clock = () => {
    if (failing) {
      failing = false;
      throw new WebAssembly.RuntimeError('the clock is gone');
    }
    return Date.now();
  };
  using alice = await open('alice', { store: new MemoryBackend(), clock });
  failing = true;
  assert.throws(() => alice.write(state('w-stopped', 1)), (e) => e instanceof EngramStoppedError && /the clock is gone/.test(e.message));
  const entry = alice.audit().find((e) => e.request_id === 'w-stopped');
  assert.equal(entry?.operation, 'WRITE');
  assert.equal(entry?.outcome, 'FAILED');
  assert.equal(entry?.record_type, 'STATE');
  assert.deepEqual(entry?.source, { agent_id: 'alice', component: 'COGNITION', actor: 'USER' });
  assert.match(entry?.reason ?? '', /the clock is gone; its instance was stopped/);
  assert.ok(alice.write(state('w-after', 2)).ACCEPTED, 'a fresh instance writes');
});

for (const [driver, makeStore] of Object.entries(STORES))
test(`${driver}: the summarizer and ranker a user gives are the ones the cycle calls`, { skip }, async () => {
  const calls = [];
  using alice = await open('alice', {
    store: await makeStore(),
    summarizer: (message, response) => {
      calls.push([message, response]);
      return { summary: 'a short summary', keywords: ['short'] };
    },
    ranker: (keywords, candidates, k) => candidates.slice(0, k).map((c) => c.id),
  });
  const lines = alice.runCycle({ plan: PLAN, message: 'hello there you', response: 'hi back to you', session: 's', request_id: 't1' });
  assert.deepEqual(calls, [['hello there you', 'hi back to you']]);
  assert.equal(lines.at(-1).committed.length, 1);
  const failing = await open('bob', { store: await makeStore(), summarizer: () => { throw new Error('no words'); }, ranker: () => [] });
  const refused = failing.runCycle({ plan: PLAN, message: 'm', response: 'r', session: 's', request_id: 't2' });
  assert.equal(refused.at(-1).cycle_error, 'SummarizerFailed("no words")', JSON.stringify(refused));
  failing.close();
});

const RECALL = (budget) => ({
  metadata: { top_k: 3, ...(budget === undefined ? {} : { token_budget: budget }) },
  steps: [
    { name: 'query', stage: 'ContextSelect', kind: { SummarizeMemory: { of: 'user_message' } } },
    { name: 'retrieve', stage: 'ContextSelect', kind: 'RetrieveMemory', inputs: ['query'] },
    { name: 'select', stage: 'ContextSelect', kind: 'ContextSelect', inputs: ['retrieve'] },
    { name: 'prompt', stage: 'PromptAssemble', kind: 'PromptAssemble', inputs: ['select'] },
  ],
});
const memory = (i, summary) => ({
  request_id: `m${i}`, source, record: { record_type: 'EVENT', timestamp: 1767225600000 + 60000 * i,
    payload: { ingested: { session_ref: 's', summary, keywords: ['flight', 'pari'] } } },
});
const promptOf = (lines) => lines[1].steps[0].output.prompt;

for (const [driver, makeStore] of Object.entries(STORES))
// proves B5-F3 B5-P4: a caller's tokenizer counts the memory lines, whole prefix by prefix, and the budget bounds them
test(`${driver}: the tokenizer a user gives bounds the prompt to the token budget of the plan`, { skip }, async () => {
  const asked = [];
  using alice = await open('alice', { store: await makeStore(), tokenizer: (text) => { asked.push(text); return new TextEncoder().encode(text).length; } });
  ['Flight to Paris booked for 14 May.', 'Sarah wants a window seat on every flight to Paris.', 'Return flight from Paris on the 17th.']
    .forEach((summary, i) => assert.ok(alice.write(memory(i, summary)).ACCEPTED));
  const ask = (budget, request_id) => promptOf(alice.runCycle({ plan: RECALL(budget), message: 'My flight to Paris?', session: 's', request_id }));
  const all = ask(undefined, 'all');
  assert.equal(all.left_out, 0);
  assert.deepEqual(asked, [], 'no budget: the tokenizer is never called');
  // Each memory's time in ISO 8601 UTC, to the second.
  const iso = (ms) => new Date(Number(ms)).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const lines = all.context.map((m) => `- [${iso(m.timestamp)}] ${m.summary}`);
  const two = lines.slice(0, 2).join('\n');
  const cut = ask(new TextEncoder().encode(two).length, 'cut');
  assert.deepEqual(cut.context, all.context.slice(0, 2));
  assert.equal(cut.left_out, 1);
  assert.equal(cut.text, `Relevant memories:\n${two}\n\nUser: My flight to Paris?`);
  assert.deepEqual(asked, [lines[0], two, lines.join('\n')]);
  using failing = await open('bob', { store: await makeStore(), tokenizer: () => { throw new Error('no tokens today'); } });
  failing.write({ ...memory(0, 'Flight to Paris booked.'), source: { ...source, agent_id: 'bob' } });
  const refused = failing.runCycle({ plan: RECALL(100), message: 'My flight to Paris?', session: 's', request_id: 'f' });
  assert.equal(refused.at(-1).cycle_error, 'TokenizerFailed("no tokens today")');
});

test('the default tokenizer is o200k_base, as in every host', { skip }, async () => {
  const tokenizer = await defaultTokenizer();
  // The counts the Rust host's O200kTokenizer gives (host/algorithms).
  assert.equal(tokenizer('hello world'), 2);
  assert.equal(tokenizer('- [1767225600000] Sarah is vegetarian'), 11);
});

for (const [driver, makeStore] of Object.entries(STORES))
// proves B5-P4: the refusal names the rule
test(`${driver}: a cycle stage by stage, disposable; a refused plan throws its plan_error`, { skip }, async () => {
  using alice = await open('alice', { store: await makeStore() });
  {
    using cycle = alice.cycle(PLAN, { session: 's', request_id: 'c1' });
    const stage = cycle.runStage('SummarizeMemory', { message: 'I booked the Hotel Avenida in Lisbon.', response: 'Lovely, enjoy Lisbon.' });
    assert.equal(stage.stage, 'SummarizeMemory');
    assert.ok(cycle.output('summary').summarized);
    cycle.runStage('PersistMemory', {});
    assert.equal(cycle.commit().committed.length, 1);
  }
  {
    using cycle = alice.cycle(PLAN, { session: 's', request_id: 'c2' });
    cycle.runStage('SummarizeMemory', { message: 'Sarah is vegetarian.', response: 'Noted.' });
  }
  const events = alice.read({ record_type: 'EVENT', selector: { Limit: { limit: 10 } }, request_id: 'r' });
  assert.equal(events.records.length, 1, 'a cycle dropped without commit persisted nothing');
  const retrieving = { metadata: {}, steps: [{ name: 'q', stage: 'ContextSelect', kind: { SummarizeMemory: { of: 'user_message' } } }, { name: 'r', stage: 'ContextSelect', kind: 'RetrieveMemory', inputs: ['q'] }] };
  assert.throws(() => alice.cycle(retrieving), (e) => e instanceof EngramRefusedError && e.answer.plan_error.rule === 'B5-P4');
  const gone = alice.cycle(PLAN);
  gone[Symbol.dispose]();
  assert.throws(() => gone.runStage('SummarizeMemory', { message: 'm', response: 'r' }), /the cycle is gone/);
});

for (const [driver, makeStore] of Object.entries(STORES))
// proves IO-W7, S-MODE
test(`${driver}: maintenance: the lock keeps online writes out until the maintenance domain closes`, { skip }, async () => {
  const backend = await makeStore();
  const online = await open('alice', { store: backend });
  const maintenance = await open('alice', { store: backend, mode: 'maintenance' });
  assert.equal(online.write(state('w1', 1)), 'REJECTED');
  await assert.rejects(open('alice', { store: backend, mode: 'maintenance' }), /locked for maintenance/);
  assert.ok(maintenance.write({ ...state('m1', 1), source: { ...source, component: 'MAINTENANCE' } }).ACCEPTED);
  maintenance.close();
  assert.ok(online.write(state('w2', 2)).ACCEPTED);
  online.close();
  const lines = await exportStore(backend);
  assert.ok(lines.length > 0 && lines.every((l) => l.agent_id === 'alice'));
  const [rejected] = await auditTrail(backend, { outcome: 'REJECTED' });
  assert.match(rejected.reason, /locked for maintenance/);
  backend.close();
});

// proves S-FILE
test('a store given by path is a SQLite file of the shared format, closed with the domain', { skip }, async () => {
  const path = join(dir, 'by-path.db');
  {
    using alice = await open('alice', { store: path });
    assert.ok(alice.write(state('w', 1)).ACCEPTED);
    assert.deepEqual(alice.read({ record_type: 'STATE', selector: { Latest: { limit: 1 } }, request_id: 'r' }).records.length, 1);
    assert.equal(alice.audit().length, 2);
  }
  const db = new DatabaseSync(path);
  assert.equal(db.prepare('PRAGMA application_id').get().application_id, 0x454e4752);
  assert.equal(db.prepare('PRAGMA user_version').get().user_version, 4);
  assert.equal(db.prepare('PRAGMA journal_mode').get().journal_mode, 'wal');
  assert.equal(db.prepare('SELECT count(*) AS n FROM engram_kv').get().n > 0, true);
  db.close();
});

// proves MT-2: transaction time strictly increases in a domain, whatever the host's clock does
test('a clock that never moves or goes backwards still gives every FACT version a later transaction time', { skip }, async () => {
  const fact = (request_id, key, content) => ({
    request_id, source, record: { record_type: 'FACT', key, payload: { semantic: {
      content, context: 'test', valid_at: 1000, strength: 1.0, last_accessed: 1000, access_count: 0,
      confidence: 0.5, privacy_tier: 'public' } } },
  });
  const clocks = {
    frozen: () => () => 5000,
    backwards: () => { let now = 9_000_000; return () => (now -= 1000); },
  };
  for (const [name, clock] of Object.entries(clocks)) {
    for (const store of [new MemoryBackend(), join(dir, `clock-${name}.db`), await openStore()]) {
      using alice = await open('alice', { store, clock: clock() });
      const written = [['user.mood', 'calm'], ['user.city', 'Porto'], ['user.mood', 'glad'], ['user.city', 'Lisbon'], ['user.mood', 'tired']]
        .map(([key, content], i) => alice.write(fact(`w${i}`, key, content)).ACCEPTED.stored_id);
      const held = new Map();
      for (const key of ['user.mood', 'user.city']) {
        const chain = alice.history({ key, limit: 10 }).records.reverse();
        chain.forEach((version, i) => {
          assert.equal(version.superseded_at, chain[i + 1]?.created_at, `${name}: ${key}: closed at its successor's time`);
          held.set(version.id, version);
        });
      }
      const times = written.map((id) => held.get(id).created_at);
      assert.ok(times.every((t, i) => i === 0 || t > times[i - 1]), `${name}: ${times}`);
      for (const id of written) {
        const { key, created_at } = held.get(id);
        assert.deepEqual(alice.asOf({ key, known: created_at, limit: 10 }).records.map((r) => r.id), [id]);
      }
    }
  }
});

for (const [driver, makeStore] of Object.entries(STORES))
// proves IO-W2
test(`${driver}: remember twice with one request id stores one memory, and recall finds it with its ISO time`, { skip }, async () => {
  using alice = await open('alice', { store: await makeStore() });
  const turn = ['I booked the Hotel Avenida in Lisbon.', 'Lovely!'];
  const when = new Date(Date.UTC(2026, 0, 1, 9, 30));
  const first = alice.remember(...turn, { request_id: 't1', session: 'trip', time: when });
  assert.equal(first.request_id, 't1');
  assert.equal(first.committed.length, 1);
  assert.deepEqual(alice.remember(...turn, { request_id: 't1', session: 'trip', time: when }), first);
  const fresh = alice.remember('Sarah is vegetarian.', 'Noted.');
  assert.match(fresh.request_id, /^remember-[0-9a-f]{32}$/);
  const recalled = alice.recall('Which hotel did I book?', { top_k: 2 });
  assert.deepEqual(recalled.memories, [{ id: first.committed[0], summary: 'User booked Hotel Avenida in Lisbon.', timestamp: when.getTime() }]);
  assert.ok(recalled.prompt.split('\n').includes('- [2026-01-01T09:30:00Z] User booked Hotel Avenida in Lisbon.'), recalled.prompt);
  assert.equal(recalled.left_out, 0);
  assert.throws(() => alice.recall('anything', { top_k: 0 }), EngramRefusedError);
  assert.throws(() => alice.remember('Another turn.', 'Indeed.', { request_id: 't1' }), (error) => {
    assert.ok(error instanceof EngramRefusedError);
    assert.deepEqual(error.answer, { cycle_error: 'CommitFailed' });
    return true;
  });
  const events = alice.read({ record_type: 'EVENT', selector: { Latest: { limit: 10 } }, request_id: 'r' }).records;
  assert.equal(events.length, 2);
  assert.ok(events.every((r) => !JSON.stringify(r).includes(turn[0])), 'the raw turn is never stored');
});
