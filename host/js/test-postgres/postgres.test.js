// PostgreSQL from Node (the Rust host's store, through the addon) on a
// real database, the one ENGRAM_TEST_POSTGRES_URL names (`cargo test`
// passes it on, and runs this file only when the variable is set): the
// shared scenarios through synchronous and async domains, the engram
// command line writing the same domain at once, the writers' turns on the
// lock key every host takes (docs/store-format.md), and what an unreachable
// database or a lost connection answers. Each test works in a schema of its
// own, dropped afterwards. The tests' own connection (to look at pg_locks,
// hold a lock, end a session) is node-postgres, a test dependency only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { open, openStore } from '../src/index.js';
import { NO_EMBEDDER, embedderUrl, loadScenarios, runScenario, usesEmbedder } from '../test/scenarios.js';
import { libraryHost, testEmbedders } from '../test/node-host.js';
import { notBuilt } from '../test/built.js';
import { TEST_MODEL as HTTP_MODEL } from '../test/node-host.js';
import { TOKENS, agentPath, httpHost, startServe } from '../test/http.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const URL_VAR = 'ENGRAM_TEST_POSTGRES_URL';
const url = process.env[URL_VAR];
const engram = process.env.ENGRAM_BIN;
const missing = [
  url ? undefined : `${URL_VAR} is not set (e.g. postgres://postgres@127.0.0.1:5432/test)`,
  engram ? undefined : 'ENGRAM_BIN does not name the engram command line',
  notBuilt,
].filter(Boolean);

// Run without what it needs, this file fails saying so: it is never skipped.
test('what the PostgreSQL tests need is here', () => {
  assert.deepEqual(missing, [], missing.join('; '));
});

let next = 0;
const schemas = [];
/** A schema name no other test or run uses; dropped after the tests. */
function freshSchema(what) {
  const name = `engram_js_${what}_${process.pid}_${next++}_${Date.now() % 1e6}`;
  schemas.push(name);
  return name;
}
/** The test database's URL with `schema` first on the search path (what the command line takes). */
function withSchema(schema, extra = '') {
  const separator = url.includes('?') ? '&' : '?';
  return `${url}${separator}options=-csearch_path%3D${schema}${extra}`;
}
/** Runs `f` with a plain connection to the test database. */
async function direct(f) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await f(client);
  } finally {
    await client.end();
  }
}
test.after(async () => {
  if (!url || schemas.length === 0) return;
  await direct(async (client) => {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });
});

/** The engram command line on `store`; its exit code, standard output and error. */
function cli(store, args, input = '') {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.ENGRAM_STORE;
    delete env.ENGRAM_AGENT;
    const child = spawn(engram, ['--store', store, ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

/**
 * The lock key of `agent`'s domain as docs/store-format.md defines it: 64
 * bits of FNV-1a of the domain's prefix (the agent id's length, 4 bytes
 * big-endian, then the id), from the basis 0xcbf29ce484222325 ^
 * 0x656e6772616d, as a signed number. Written here from the document, to
 * show that every host takes the key it defines.
 */
function lockKey(agent) {
  const id = Buffer.from(agent, 'utf8');
  const prefix = Buffer.concat([Buffer.from([0, 0, 0, 0]), id]);
  prefix.writeUInt32BE(id.length, 0);
  let hash = 0xcbf29ce484222325n ^ 0x656e6772616dn;
  for (const byte of prefix) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  return BigInt.asIntN(64, hash);
}

/**
 * How many sessions wait for the advisory lock `key` now: PostgreSQL
 * shows a bigint key as its high and low 32 bits.
 */
async function waiting(client, key) {
  const unsigned = BigInt.asUintN(64, key);
  const [high, low] = [Number(unsigned >> 32n), Number(unsigned & 0xffffffffn)];
  const { rows } = await client.query(
    "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND objid = $2 AND objsubid = 1",
    [high, low],
  );
  return rows[0].n;
}

/** Whether `n` sessions wait for the advisory lock `key` within 30 s (until `gone()`). */
async function waitedOn(key, gone, n = 1) {
  return direct(async (client) => {
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline && !gone()) {
      if ((await waiting(client, key)) >= n) return true;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return false;
  });
}

const ready = missing.length === 0 ? {} : { skip: missing.join('; ') };
const folder = fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url));
const scenarios = missing.length === 0 ? loadScenarios(folder) : [];

// Every shared scenario on PostgreSQL, through synchronous and async domains
// (meaning.jsonl with the tests' embedder at ENGRAM_TEST_EMBEDDER_URL, skipped
// without it).
for (const async of [false, true]) {
  for (const scenario of scenarios) {
    test(`${async ? 'async' : 'sync'} postgres: ${scenario.name}`, async (t) => {
      const embedder = embedderUrl();
      if (usesEmbedder(scenario) && embedder === undefined) return t.skip(NO_EMBEDDER);
      const embedders = embedder === undefined ? {} : await testEmbedders(embedder);
      const store = await openStore(url, { postgres: { schema: freshSchema('scenario') } });
      try {
        const { ran } = await runScenario(scenario, libraryHost(store, { async, embedders }));
        assert.ok(ran > 0);
      } finally {
        store.close();
      }
    });
  }
}

const state = (requestId, i) => ({
  request_id: requestId,
  source: { agent_id: 'alice', component: 'COGNITION', actor: 'USER' },
  record: { record_type: 'STATE', timestamp: 1_700_000_000_000 + i, payload: { subject: requestId, properties: { n: i } } },
});

// proves IO-W2 IO-W8 IO-G1: a Node process and the engram command line writing one PostgreSQL domain at once
// take turns: every write ACCEPTED, none lost, no id handed out twice, each audited once
test('io_w8 a Node process and the command line writing one PostgreSQL domain at once keep every write', ready, async () => {
  const store = withSchema(freshSchema('mixed'));
  // The command line compiles the engine at its first run on a machine:
  // done here, so that the writers below start together.
  const warm = await cli(store, ['read', '--agent', 'someone-else'], JSON.stringify({ record_type: 'STATE', selector: { Latest: { limit: 1 } }, request_id: 'warm' }));
  assert.equal(warm.code, 0, warm.stderr);
  const count = 150;
  const batch = Array.from({ length: count }, (_, i) => JSON.stringify(state(`c-${i}`, i))).join('\n');
  const domain = await open('alice', { store, async: true });
  const acknowledged = new Map();
  try {
    const command = cli(store, ['write', '--agent', 'alice', '--batch'], batch);
    for (let i = 0; i < count; i++) {
      const answer = await domain.write(state(`n-${i}`, i));
      acknowledged.set(`n-${i}`, answer.ACCEPTED.stored_id);
      await domain.read({ record_type: 'STATE', selector: { Latest: { limit: 1 } }, request_id: `n-${i}-r` });
    }
    const done = await command;
    assert.equal(done.code, 0, done.stderr);
    done.stdout
      .trim()
      .split('\n')
      .forEach((line, i) => acknowledged.set(`c-${i}`, JSON.parse(line).ACCEPTED.stored_id));
    assert.equal(acknowledged.size, 2 * count, `only ${acknowledged.size} of ${2 * count} writes were ACCEPTED`);
    assert.equal(new Set(acknowledged.values()).size, 2 * count, 'an id was handed out twice');
    for (const [requestId, id] of acknowledged) {
      const read = await domain.read({ record_type: 'STATE', selector: { ById: { id } }, request_id: 'check' });
      assert.deepEqual(read.records.map((r) => r.id), [id], requestId);
    }
    const trail = await domain.audit({ limit: 100000 });
    const accepted = trail.filter((e) => e.operation === 'WRITE' && e.outcome === 'ACCEPTED').map((e) => e.request_id);
    assert.deepEqual([...accepted].sort(), [...acknowledged.keys()].sort(), 'each acknowledged write audited once');
    // The writers ran at once: their writes interleave in the trail.
    const switches = accepted.filter((id, i) => i > 0 && id[0] !== accepted[i - 1][0]).length;
    assert.ok(switches > 1, `the writers did not overlap: ${switches} switches`);
    const reads = trail.filter((e) => e.operation === 'READ' && e.request_id.startsWith('n-'));
    assert.equal(new Set(reads.map((e) => e.request_id)).size, count, 'each read audited once');
    assert.equal(reads.length, count, 'each read audited once');
  } finally {
    await domain.close();
  }
});

// proves IO-W8 IO-G1: Node's writers of a domain and the command line's take turns on the one
// advisory lock key docs/store-format.md defines: while another session holds it, both wait for it,
// and both go on, ACCEPTED, when it is let go
test('a Node writer and the command line wait on the same lock key of a domain', ready, async () => {
  const url = withSchema(freshSchema('lockwait'));
  const domain = await open('alice', { store: url, async: true });
  try {
    await domain.write(state('first', 0));
    const warm = await cli(url, ['read', '--agent', 'someone-else'], JSON.stringify({ record_type: 'STATE', selector: { Latest: { limit: 1 } }, request_id: 'warm' }));
    assert.equal(warm.code, 0, warm.stderr);
    const key = lockKey('alice');
    await direct(async (holder) => {
      await holder.query('SELECT pg_advisory_lock($1)', [key.toString()]);
      let settled = 0;
      const node = domain.write(state('from-node', 1)).finally(() => (settled += 1));
      const command = cli(url, ['write', '--agent', 'alice'], JSON.stringify(state('from-cli', 2))).finally(() => (settled += 1));
      assert.ok(await waitedOn(key, () => settled > 0, 2), "Node's and the command line's writers did not both wait for the domain's lock");
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(settled, 0, 'a writer wrote while another session held the domain');
      await holder.query('SELECT pg_advisory_unlock($1)', [key.toString()]);
      assert.ok('ACCEPTED' in (await node));
      const done = await command;
      assert.equal(done.code, 0, done.stderr);
      assert.ok('ACCEPTED' in JSON.parse(done.stdout));
    });
  } finally {
    await domain.close();
  }
});

// A connection lost under a call (killed while the write waits for its domain's turn) fails that call
// with the store's words and stores nothing of it; the next call connects again, and nothing
// acknowledged is lost.
test('a connection lost under a call fails that call, and the next call connects again', ready, async () => {
  const name = `engram_js_lost_${process.pid}`;
  const domain = await open('alice', { store: withSchema(freshSchema('lost'), `&application_name=${name}`), async: true });
  try {
    const first = await domain.write(state('before', 0));
    const key = lockKey('alice');
    await direct(async (holder) => {
      await holder.query('SELECT pg_advisory_lock($1)', [key.toString()]);
      const during = domain.write(state('during', 1));
      const outcome = during.then(
        () => undefined,
        (error) => error,
      );
      assert.ok(await waitedOn(key, () => false), "the write did not wait for the domain's lock");
      await holder.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]);
      const failed = await outcome;
      assert.ok(failed instanceof Error, 'the call whose connection was lost did not fail');
      // The server's FATAL, or the socket's end when it closes before the client reads the FATAL.
      assert.match(failed.message, /terminating connection|connection closed/);
      assert.doesNotMatch(failed.message, /\n/);
      await holder.query('SELECT pg_advisory_unlock($1)', [key.toString()]);
    });
    const after = await domain.write(state('after', 2));
    assert.ok('ACCEPTED' in after);
    const stored = await domain.read({ record_type: 'STATE', selector: { Latest: { limit: 10 } }, request_id: 'check' });
    assert.deepEqual(
      stored.records.map((r) => r.id).sort(),
      [first.ACCEPTED.stored_id, after.ACCEPTED.stored_id].sort(),
    );
  } finally {
    await domain.close();
  }
});

test('opening an unreachable database or a schema of other tables says why in one line', ready, async () => {
  await assert.rejects(openStore('postgres://someone:secret@127.0.0.1:1/nothing', { postgres: { connectTimeout: 2000 } }), (error) => {
    assert.match(error.message, /^postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/nothing: cannot connect/);
    assert.doesNotMatch(error.message, /secret|\n/);
    return true;
  });
  const foreign = freshSchema('foreign');
  await direct((client) => client.query(`CREATE SCHEMA ${foreign}; CREATE TABLE ${foreign}.engram_kv (x int)`));
  await assert.rejects(openStore(url, { postgres: { schema: foreign } }), /not an Engram store/);
  await assert.rejects(openStore(url, { postgres: { schema: 'Not-A-Schema' } }), /not a schema name Engram uses/);
  // A synchronous domain works on PostgreSQL too: the Rust store's calls block, as the command line's do.
  using domain = await open('alice', { store: withSchema(freshSchema('sync')) });
  assert.ok('ACCEPTED' in domain.write(state('sync', 0)));
});

/** The tests' tokens in a file, for `engram serve`. */
function tokensFile() {
  const folder = mkdtempSync(join(tmpdir(), 'engram-serve-pg-'));
  test.after(() => rmSync(folder, { recursive: true, force: true }));
  const file = join(folder, 'tokens.jsonl');
  writeFileSync(file, `${TOKENS}\n`);
  return file;
}

for (const scenario of scenarios) {
  test(`scenario ${scenario.name} over HTTP on engram serve on PostgreSQL`, async (t) => {
    const embedder = usesEmbedder(scenario);
    const embedding = embedderUrl();
    if (embedder && embedding === undefined) return t.skip(NO_EMBEDDER);
    const args = ['--clock-from-request', ...(embedder ? ['--embedder-url', embedding, '--embedder-model', HTTP_MODEL.name] : [])];
    const server = await startServe(engram, withSchema(freshSchema('serve')), tokensFile(), args);
    try {
      const { ran } = await runScenario(scenario, httpHost(server.post, { embedder }));
      assert.ok(ran > 0);
    } finally {
      await server.stop();
    }
  });
}

// proves IO-W2
test('two engram serve processes on one database serve one memory: a write through one is read through the other, a replay answered the same', { skip: missing.length > 0 }, async () => {
  const store = withSchema(freshSchema('two_servers'));
  const tokens = tokensFile();
  const [one, two] = [await startServe(engram, store, tokens), await startServe(engram, store, tokens)];
  try {
    const remember = { message: 'I booked the Hotel Avenida in Lisbon.', response: 'Lovely!', request_id: 'turn-1' };
    const first = await one.post(agentPath('alice', 'remember'), remember);
    assert.equal(first.status, 200, JSON.stringify(first.answer));
    const again = await two.post(agentPath('alice', 'remember'), remember);
    assert.deepEqual(again.answer, first.answer, 'a replay through the other server is answered the same');
    const recall = await two.post(agentPath('alice', 'recall'), { question: 'Which hotel did I book?' });
    assert.deepEqual(recall.answer.memories.map((m) => m.id), first.answer.committed);
    const trail = await one.post('/audit', { audit_agent: 'alice', operation: 'WRITE' });
    assert.deepEqual(trail.answer.map((entry) => entry.outcome), ['ACCEPTED', 'REPLAYED']);
  } finally {
    await one.stop();
    await two.stop();
  }
});
