// The Cloudflare Workers host (worker/) in workerd itself, through
// miniflare: not mocked. Each test starts the runtime with the Worker's
// modules as they would be uploaded (ES modules, and every core module of
// gen/ as a compiled WebAssembly module) and Durable Object storage in a
// temporary folder, then talks HTTP to it.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

import { parse, stringify } from '../src/json.js';
import { notBuilt } from './built.js';
import { NO_EMBEDDER, embedderUrl, loadScenarios, runScenario, usesEmbedder } from './scenarios.js';
import { TEST_MODEL } from './node-host.js';
import { SECRETS, TOKENS, agentPath, checkAuthentication, httpHost, postWith } from './http.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const scenarioFolder = fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url));

/** The components of gen/ the Worker loads. */
const COMPONENTS = ['engram-host', 'engram-host-builtin', 'engram-algorithms', 'engram-tokenizer', 'engram-http-api'];

/** Source files the Worker never loads (they need Node: the native driver). */
const NODE_ONLY = new Set(['src/native.js', 'src/addon.js']);

/** Every file under `folder` (relative to the package), recursively. */
function filesUnder(folder) {
  const out = [];
  for (const name of readdirSync(join(root, folder)).sort()) {
    const path = join(folder, name);
    if (statSync(join(root, path)).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

/**
 * The Worker's modules, the entry first: its ES modules and the compiled
 * core modules of the components.
 * @returns {Array<{type: string, path: string}>}
 */
function workerModules() {
  const scripts = [
    'worker/index.js',
    ...filesUnder('worker').filter((p) => p.endsWith('.js') && p !== 'worker/index.js'),
    ...filesUnder('src').filter((p) => p.endsWith('.js') && !NODE_ONLY.has(p)),
  ];
  return [...scripts.map((path) => ({ type: 'ESModule', path: join(root, path) })), ...generatedModules()];
}

/** The generated modules: ES modules, and the core modules compiled. */
function generatedModules() {
  const generated = ['gen/sqlite-schema.js', 'gen/limits.js', ...COMPONENTS.flatMap((name) => filesUnder(join('gen', name)))];
  return [
    ...generated.filter((p) => p.endsWith('.js')).map((path) => ({ type: 'ESModule', path: join(root, path) })),
    ...generated.filter((p) => p.endsWith('.wasm')).map((path) => ({ type: 'CompiledWasm', path: join(root, path) })),
  ];
}

/**
 * The miniflare options of the Worker.
 * @param {string|false} persist the folder of the Durable Objects'
 *   storage, or false for storage in memory
 */
function workerOptions(persist, bindings = {}) {
  return {
    modules: workerModules(),
    modulesRoot: root,
    compatibilityDate: '2026-07-01',
    durableObjects: { ENGRAM_AGENT: { className: 'EngramAgent', useSQLite: true } },
    durableObjectsPersist: persist,
    bindings: { ENGRAM_TOKENS: TOKENS, ...bindings },
  };
}

const { Miniflare } = notBuilt ? {} : await import('miniflare');
const folders = [];
const runtimes = new Set();

/** A temporary folder, removed after the tests. */
function tempFolder() {
  const folder = mkdtempSync(join(tmpdir(), 'engram-worker-'));
  folders.push(folder);
  return folder;
}

/** Starts the Worker in workerd; `ready` resolves once it listens. */
async function start(persist, bindings) {
  const mf = new Miniflare(workerOptions(persist, bindings));
  runtimes.add(mf);
  await mf.ready;
  return mf;
}

async function stop(mf) {
  runtimes.delete(mf);
  await mf.dispose();
}

after(async () => {
  for (const mf of runtimes) await mf.dispose();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/**
 * A POST of a JSON body to the Worker: the status and the answer, parsed
 * (see {@link postWith}).
 * @param {import('miniflare').Miniflare} mf
 * @param {string} path
 * @param {object} body
 * @param {string|null} [secret]
 */
function post(mf, path, body = {}, secret = SECRETS.admin) {
  return postWith((p, init) => mf.dispatchFetch(`http://engram.test${p}`, init), path, body, secret);
}

/** A POST that must answer 200: the answer. */
async function ok(mf, path, body, secret) {
  const { status, answer } = await post(mf, path, body, secret);
  assert.equal(status, 200, `${path}: ${stringify(answer)}`);
  return answer;
}


const source = (agent) => ({ agent_id: agent, component: 'COGNITION', actor: 'USER' });

/** A STATE write request. */
function stateWrite(agent, requestId, subject) {
  return {
    request_id: requestId,
    source: source(agent),
    record: { record_type: 'STATE', timestamp: 1700000000000, payload: { subject, properties: { city: 'Lisbon' } } },
  };
}

const latestStates = (requestId) => ({ record_type: 'STATE', selector: { Latest: { limit: 10 } }, request_id: requestId });

/** The first plan of the shared cycle scenario. */
function cyclePlan() {
  const [scenario] = loadScenarios(scenarioFolder).filter((s) => s.name === 'cycle');
  return scenario.lines.find((line) => line.op === 'cycle').plan;
}

/**
 * A Worker whose Durable Object runs the backend checks of
 * test/backends.test.js on src/backends/durable-object.js, in workerd, and
 * answers `{check: "ok" | why}`.
 */
const BACKEND_PROBE = `
import { DurableObjectBackend } from '../src/backends/durable-object.js';
import { domains, open, unlock } from '../src/index.js';
import { coreModule, instantiate } from '../worker/modules.js';

const b = (...bytes) => Uint8Array.from(bytes);
const row = (request_id, extra = {}) => ({
  at: 5, agent_id: 'alice', request_id, operation: 'READ', source: null, record_type: 'STATE',
  outcome: 'RETURNED', stored_id: null, count: 0, reason: null, caller: null, ...extra,
});
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
function check(ok, what) { if (!ok) throw new Error(what); }
const keys = (pairs) => pairs.map(([k]) => Array.from(k));

const CHECKS = {
  order(store) {
    check(store.commit([], [b(2), b(1, 255), b(1), b(0x80)].map((key) => ({ type: 'put', key, value: key })), []), 'commit');
    check(same(keys(store.scan(b(), b(255), 10, false)), [[1], [1, 255], [2], [0x80]]), 'ascending');
    check(same(keys(store.scan(b(1), b(2), 10, true)), [[1, 255], [1]]), 'descending');
    check(same(keys(store.scan(b(), b(255), 2, true)), [[0x80], [2]]), 'limit');
    check(same(Array.from(store.get(b(1, 255))), [1, 255]), 'get');
    check(store.get(b(9)) === undefined, 'absent');
    check(same(store.getMany([b(9), b(2)]).map((v) => v && Array.from(v)), [null, [2]]), 'getMany');
    const big = b(7, 1, 2, 3, 7);
    check(store.get(big.subarray(1, 3)) === undefined, 'a view of an absent key');
    store.commit([], [{ type: 'put', key: big.subarray(1, 3), value: big.subarray(3, 4) }], []);
    check(same(Array.from(store.get(b(1, 2))), [3]), 'a view binds its own bytes only');
  },
  conflict(store) {
    check(store.commit([{ type: 'absent', key: b(1) }], [{ type: 'put', key: b(1), value: b(7) }], [row('w1')]) === true, 'first');
    check(store.commit([{ type: 'absent', key: b(1) }], [{ type: 'put', key: b(2), value: b(7) }], [row('w2')]) === false, 'absent');
    check(store.commit([{ type: 'holds', key: b(1), value: b(8) }], [{ type: 'delete', key: b(1) }], []) === false, 'holds');
    check(store.get(b(2)) === undefined, 'nothing changed');
    check(store.commit([{ type: 'holds', key: b(1), value: b(7) }], [{ type: 'delete', key: b(1) }], []) === true, 'holds ok');
    check(store.get(b(1)) === undefined, 'deleted');
    check(same(store.auditPage(undefined, 10).map((r) => r.request_id), ['w1']), 'audit of commits only');
  },
  rollback(store) {
    let threw = false;
    try {
      store.commit([], [{ type: 'put', key: b(5), value: b(5) }, { type: 'put', key: b(6), value: null }], [row('w9')]);
    } catch { threw = true; }
    check(threw, 'a failing op throws');
    check(store.get(b(5)) === undefined, 'all or nothing');
    check(store.auditPage(undefined, 10).length === 0, 'no audit row of a failed commit');
  },
  audit(store) {
    store.appendAudit([row('r1')]);
    store.commit([], [{ type: 'put', key: b(1), value: b(1) }], [row('w1', { operation: 'WRITE', outcome: 'ACCEPTED', stored_id: 'x', count: null })]);
    store.appendAudit([row('r2', { agent_id: 'bob' })]);
    const all = store.auditPage(undefined, 10);
    check(same(all.map((r) => r.request_id), ['r2', 'w1', 'r1']), 'newest first');
    check(all[0].seq > all[1].seq && all[1].seq > all[2].seq, 'seq rises in append order');
    const { seq, ...kept } = all[1];
    check(same(kept, row('w1', { operation: 'WRITE', outcome: 'ACCEPTED', stored_id: 'x', count: null })), 'row');
    check(same(store.auditPage(undefined, 1).map((r) => r.request_id), ['r2']), 'a page');
    check(same(store.auditPage(all[0].seq, 5).map((r) => r.request_id), ['w1', 'r1']), 'the next page');
    // Rows that name nobody are stamped with the caller of the moment.
    store.caller = 'alice-app';
    store.appendAudit([row('r3'), row('r4', { caller: 'other' })]);
    store.caller = undefined;
    store.appendAudit([row('r5')]);
    check(same(store.auditPage(undefined, 3).reverse().map((r) => [r.request_id, r.caller]), [['r3', 'alice-app'], ['r4', 'other'], ['r5', null]]), 'caller');
  },
  async domains(store) {
    const components = { coreModule, instantiate };
    for (const agent of ['bob', 'alice', 'al']) {
      store.commit([], [{ type: 'put', key: b(0, 0, 0, agent.length, ...new TextEncoder().encode(agent), 1), value: b(1) }], []);
    }
    const lock = await open('alice', { ...components, store, mode: 'maintenance' });
    check(same(await domains(store, components), ['al', 'bob', 'alice']), 'domains');
    let refused = false;
    try { await open('alice', { ...components, store, mode: 'maintenance' }); } catch { refused = true; }
    check(refused, 'the lock is held');
    check(lock.forget().removed === 1, 'forget');
    lock.close();
    check((await unlock(store, 'alice')).unlocked === false, 'released');
    check(same(await domains(store, components), ['al', 'bob']), 'forgotten');
    const [audited] = store.auditPage(undefined, 1);
    check(audited.operation === 'FORGET' && audited.count === 1, 'audited');
  },
  schema(store, storage) {
    const tables = storage.sql.exec("SELECT name FROM sqlite_master WHERE name LIKE 'engram%' ORDER BY name").toArray().map((r) => r.name);
    check(same(tables, ['engram_audit', 'engram_audit_agent', 'engram_kv', 'engram_schema']), tables.join());
    const kv = storage.sql.exec("SELECT sql FROM sqlite_master WHERE name = 'engram_kv'").one().sql;
    check(/WITHOUT ROWID/.test(kv), 'engram_kv is WITHOUT ROWID');
    check(storage.sql.exec('SELECT version FROM engram_schema').one().version === 2, 'version 2');
    // A database of version 1 (no caller in the audit rows) is upgraded, its rows kept.
    store.appendAudit([row('old')]);
    storage.sql.exec('ALTER TABLE engram_audit DROP COLUMN caller');
    storage.sql.exec('UPDATE engram_schema SET version = 1');
    const upgraded = new DurableObjectBackend(storage);
    check(storage.sql.exec('SELECT version FROM engram_schema').one().version === 2, 'upgraded to version 2');
    upgraded.caller = 'alice-app';
    upgraded.appendAudit([row('new')]);
    check(same(upgraded.auditPage(undefined, 10).reverse().map((r) => [r.request_id, r.caller]), [['old', null], ['new', 'alice-app']]), 'rows kept, callers named');
    upgraded.close();
    storage.sql.exec('UPDATE engram_schema SET version = 3');
    let refused = false;
    try { new DurableObjectBackend(storage); } catch (error) { refused = /schema version 3/.test(error.message); }
    check(refused, 'a newer schema is refused');
  },
};

export class Probe {
  constructor(ctx) { this.ctx = ctx; }
  async fetch(request) {
    const name = new URL(request.url).pathname.slice(1);
    try {
      await CHECKS[name](new DurableObjectBackend(this.ctx.storage), this.ctx.storage);
      return new Response('ok');
    } catch (error) {
      return new Response(String(error.stack ?? error));
    }
  }
}

export default {
  async fetch(request, env) {
    const name = new URL(request.url).pathname.slice(1);
    if (name === '') return Response.json(Object.keys(CHECKS));
    return env.PROBE.get(env.PROBE.idFromName(name)).fetch(request);
  },
};
`;

test('the Durable Object backend in workerd: the backend contract and the tables', { skip: notBuilt }, async () => {
  const { Miniflare: Runtime } = await import('miniflare');
  const mf = new Runtime({
    modules: [
      { type: 'ESModule', path: join(root, 'test/do-backend-probe.js'), contents: BACKEND_PROBE },
      ...[...filesUnder('src').filter((p) => p.endsWith('.js') && !NODE_ONLY.has(p)), 'worker/modules.js'].map((path) => ({
        type: 'ESModule',
        path: join(root, path),
      })),
      ...generatedModules(),
    ],
    modulesRoot: root,
    compatibilityDate: '2026-07-01',
    durableObjects: { PROBE: { className: 'Probe', useSQLite: true } },
  });
  try {
    const names = await (await mf.dispatchFetch('http://probe.test/')).json();
    assert.ok(names.length > 0);
    for (const name of names) {
      assert.equal(await (await mf.dispatchFetch(`http://probe.test/${name}`)).text(), 'ok', name);
    }
  } finally {
    await mf.dispose();
  }
});

describe('the Worker in workerd', { skip: notBuilt }, () => {
  test('worker/modules.js imports every core module of gen/', () => {
    const source = readFileSync(join(root, 'worker/modules.js'), 'utf8');
    for (const name of COMPONENTS) {
      for (const file of filesUnder(join('gen', name)).filter((p) => p.endsWith('.wasm'))) {
        assert.ok(source.includes(`'../${file}'`), `worker/modules.js does not import ${file}`);
      }
    }
  });

  test('cold start: the runtime, then the first answer', async () => {
    const began = performance.now();
    const mf = await start(tempFolder());
    const ready = performance.now();
    const answer = await ok(mf, agentPath('cold', 'read'), { request: latestStates('q-cold') });
    const answered = performance.now();
    assert.deepEqual(answer, { records: [] });
    await ok(mf, agentPath('cold', 'read'), { request: latestStates('q-warm') });
    const warm = performance.now();
    console.log(
      `cold start in workerd: runtime ready ${Math.round(ready - began)} ms, first answer ` +
        `${Math.round(answered - ready)} ms after (engine instantiated in the Durable Object), ` +
        `${Math.round(answered - began)} ms in all; a second read ${Math.round(warm - answered)} ms`,
    );
    await stop(mf);
  });

  // proves S-EXPIRY: over HTTP, on the Worker's own clock
  test('a write kept for 1 ms is answered by no read once it has passed, and expire removes it', async () => {
    const mf = await start(false);
    try {
      const written = await ok(mf, agentPath('eve', 'write'), {
        request: stateWrite('eve', 'w1', 'brief.note'),
        expire_after: 1,
      });
      const id = written.ACCEPTED?.stored_id;
      assert.equal(typeof id, 'string', stringify(written));
      await ok(mf, agentPath('eve', 'write'), { request: stateWrite('eve', 'w2', 'kept.note') });
      // The first expires 1 ms after it was written: wait past it.
      await new Promise((resolve) => setTimeout(resolve, 20));
      const read = await ok(mf, agentPath('eve', 'read'), { request: latestStates('q1') });
      assert.deepEqual(read.records.map((r) => r.payload.subject), ['kept.note']);
      assert.deepEqual(await ok(mf, agentPath('eve', 'expire'), {}), { agent_id: 'eve', expired: 1 });
      const trail = await ok(mf, '/audit', { audit_agent: 'eve', operation: 'EXPIRE' });
      assert.deepEqual(trail.map((e) => [e.outcome, e.stored_id]), [['EXPIRED', id]]);
      const refused = await post(mf, agentPath('eve', 'write'), { request: stateWrite('eve', 'w3', 'x'), expire_after: 0 });
      assert.equal(refused.status, 400, stringify(refused.answer));
      // A deployed Worker runs by its own clock: no caller moves it back.
      const moved = await post(mf, agentPath('eve', 'read'), { request: latestStates('q2'), now: 0 });
      assert.equal(moved.status, 400, stringify(moved.answer));
    } finally {
      await stop(mf);
    }
  });

  // proves IO-W6
  test('an HTTP write, then a read; a cycle runs; two agents cannot see each other; the data survives a restart', async () => {
    const folder = tempFolder();
    let mf = await start(folder);

    const written = await ok(mf, agentPath('alice', 'write'), { request: stateWrite('alice', 'w1', 'trip.current') });
    const id = written.ACCEPTED?.stored_id;
    assert.equal(typeof id, 'string', stringify(written));
    const read = await ok(mf, agentPath('alice', 'read'), {
      request: { record_type: 'STATE', selector: { ById: { id } }, request_id: 'q1' },
    });
    assert.equal(read.records.length, 1);
    assert.equal(read.records[0].id, id);
    assert.equal(read.records[0].payload.subject, 'trip.current');

    const lines = await ok(mf, agentPath('alice', 'cycle'), {
      plan: cyclePlan(),
      message: 'I booked the Hotel Avenida in Lisbon for our anniversary in May.',
      response: 'Lovely! The Hotel Avenida is close to the old town.',
      session: 's1',
      request_id: 'turn-1',
    });
    const committed = lines.at(-1).committed;
    assert.ok(Array.isArray(committed) && committed.length === 1, stringify(lines));
    const memory = await ok(mf, agentPath('alice', 'read'), {
      request: { record_type: 'EVENT', selector: { ById: { id: committed[0] } }, request_id: 'q2' },
    });
    assert.equal(memory.records.length, 1);

    // Bob's object is another database: nothing of Alice's is there, not
    // even by id.
    assert.deepEqual(await ok(mf, agentPath('bob', 'read'), { request: latestStates('q3') }), { records: [] });
    assert.deepEqual(
      await ok(mf, agentPath('bob', 'read'), {
        request: { record_type: 'STATE', selector: { ById: { id } }, request_id: 'q4' },
      }),
      { records: [] },
    );
    const bobs = await ok(mf, agentPath('bob', 'write'), { request: stateWrite('bob', 'w1', 'bob.only') });
    assert.notEqual(bobs.ACCEPTED?.stored_id, undefined);
    const alices = await ok(mf, agentPath('alice', 'read'), { request: latestStates('q5') });
    assert.deepEqual(alices.records.map((r) => r.id), [id]);
    // A write in Bob's name into Alice's domain is refused (IO-W6).
    assert.equal(await ok(mf, agentPath('alice', 'write'), { request: stateWrite('bob', 'w2', 'intrusion') }), 'REJECTED');

    // The runtime stops; a new one on the same storage finds it all.
    await stop(mf);
    mf = await start(folder);
    const again = await ok(mf, agentPath('alice', 'read'), { request: latestStates('q6') });
    assert.deepEqual(again.records.map((r) => r.id), [id]);
    const memoryAgain = await ok(mf, agentPath('alice', 'read'), {
      request: { record_type: 'EVENT', selector: { ById: { id: committed[0] } }, request_id: 'q7' },
    });
    assert.deepEqual(memoryAgain, memory);
    const replay = await ok(mf, agentPath('alice', 'write'), { request: stateWrite('alice', 'w1', 'trip.current') });
    assert.deepEqual(replay, written, 'a retried request id is answered with the first id (IO-W2)');
    const audit = await ok(mf, '/audit', { audit_agent: 'alice', operation: 'WRITE', limit: 100 });
    assert.ok(audit.some((entry) => entry.outcome === 'ACCEPTED' && entry.stored_id === id), stringify(audit));
    await stop(mf);
  });

  test('the HTTP API answers errors as errors', async () => {
    const mf = await start(false);
    const bad = await post(mf, agentPath('alice', 'write'), { text: '{"record_type":', input: 'body' });
    assert.equal(bad.status, 400);
    assert.match(bad.answer.input_error, /^body/);
    assert.equal((await post(mf, agentPath('alice', 'nothing'), {})).status, 404);
    assert.equal((await post(mf, '/export', {})).status, 400);
    assert.equal((await post(mf, agentPath('x'.repeat(257), 'read'), { request: latestStates('q') })).status, 400);
    assert.equal((await post(mf, '/agents/%E0%A4%A/read', { request: latestStates('q') })).status, 400);
    assert.equal((await post(mf, agentPath('alice', 'read'), { request: latestStates('q'), tier_ceiling: 'secret' })).status, 400);
    const get = await mf.dispatchFetch(`http://engram.test${agentPath('alice', 'read')}`);
    assert.equal(get.status, 405);
    await get.text();
    await stop(mf);
  });

  // proves S-AUTH
  test('S-AUTH: every call needs a bearer token that reaches its agent at its level; a refused call leaves no trace', async () => {
    const mf = await start(false);
    await checkAuthentication((path, init) => mf.dispatchFetch(`http://engram.test${path}`, init));
    await stop(mf);
  });

  test('a Worker with no tokens serves nobody', async () => {
    const mf = await start(false, { ENGRAM_TOKENS: '' });
    const { status, answer } = await post(mf, agentPath('alice', 'read'), { request: latestStates('q') });
    assert.equal(status, 500);
    assert.match(answer.host_error, /ENGRAM_TOKENS: no token/);
    await stop(mf);
  });

  // proves IO-W2, S-EXPORT
  test('calls that arrive together are each answered with an id of their own; an export imports into another agent only under its id', async () => {
    const mf = await start(false);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => ok(mf, agentPath('carol', 'write'), { request: stateWrite('carol', `c${i}`, `s${i}`) })),
    );
    const ids = answers.map((answer) => answer.ACCEPTED?.stored_id);
    assert.equal(new Set(ids).size, 8, stringify(answers));
    const read = await ok(mf, agentPath('carol', 'read'), { request: latestStates('q1') });
    assert.deepEqual(new Set(read.records.map((r) => r.id)), new Set(ids));
    const lines = await ok(mf, '/export', { agents: ['carol'] });
    assert.ok(lines.length >= 8 && lines.every((line) => line.agent_id === 'carol'));
    const misplaced = await post(mf, agentPath('dave', 'import'), { lines });
    assert.equal(misplaced.status, 400, 'export lines of carol are not imported into dave');
    assert.deepEqual(await ok(mf, '/import', { lines: lines.map((line) => ({ ...line, agent_id: 'dave' })) }), [
      { agent_id: 'dave', items: lines.length, new: lines.length },
    ]);
    await stop(mf);
  });

  // proves S-VECTOR: a Worker with an embedder (its bindings) embeds by default, records the model, and refuses another
  test("a Worker with an embedder: its domains record the bindings' model, a call may say false, another model is refused", async (t) => {
    const url = embedderUrl();
    if (url === undefined) return t.skip(NO_EMBEDDER);
    const mf = await start(false, { ENGRAM_EMBEDDER_URL: url, ENGRAM_EMBEDDER_MODEL: TEST_MODEL.name });
    try {
      assert.equal(await ok(mf, agentPath('erin', 'vector_model'), {}), null);
      await ok(mf, agentPath('erin', 'remember'), { message: 'We adopted a kitten last week, she is called Miso.', response: 'Congratulations!' });
      // The dimension was learned from the endpoint.
      assert.deepEqual(await ok(mf, agentPath('erin', 'vector_model'), { embedder: false }), TEST_MODEL);
      const found = await ok(mf, agentPath('erin', 'recall'), { question: 'What pet do we have at home?', top_k: 1 });
      assert.match(found.memories[0]?.summary ?? '', /kitten/, stringify(found));
      const keywords = await ok(mf, agentPath('erin', 'recall'), { question: 'What pet do we have at home?', top_k: 1, embedder: false });
      assert.deepEqual(keywords.memories, []);
      const other = await post(mf, agentPath('erin', 'recall'), { question: 'What pet?', embedder: 'another-model' });
      assert.equal(other.status, 400, stringify(other.answer));
      assert.match(other.answer.input_error, /e5-small/);
      // A memory stored without the embedder has no vector until reembed makes them all again.
      await ok(mf, agentPath('erin', 'remember'), { message: 'My sister Ana moved to Porto in March.', response: 'Good to know.', embedder: false });
      assert.deepEqual(await ok(mf, agentPath('erin', 'reembed'), { batch: 1 }), { agent_id: 'erin', embedded: 2 });
    } finally {
      await stop(mf);
    }
  });

  for (const scenario of notBuilt ? [] : loadScenarios(scenarioFolder)) {
    test(`scenario ${scenario.name} over HTTP`, async (t) => {
      // A scenario that names the tests' embedder runs on a Worker whose
      // embedder is that model's server: workerd reaches it on 127.0.0.1.
      const embedder = usesEmbedder(scenario);
      const url = embedderUrl();
      if (embedder && url === undefined) return t.skip(NO_EMBEDDER);
      const bindings = embedder
        ? { ENGRAM_EMBEDDER_URL: url, ENGRAM_EMBEDDER_MODEL: TEST_MODEL.name, ENGRAM_EMBEDDER_DIMENSION: String(TEST_MODEL.dimension) }
        : {};
      // Lines with `now` move the Worker's clock, which only this binding allows.
      const mf = await start(false, { ENGRAM_CLOCK_FROM_REQUEST: 'on', ...bindings });
      try {
        const { ran } = await runScenario(scenario, httpHost((path, body) => post(mf, path, body), { embedder }));
        assert.ok(ran > 0);
      } finally {
        await stop(mf);
      }
    });
  }
});
