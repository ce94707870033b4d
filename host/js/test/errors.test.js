// One error model, every package's: each kind of failure is an error class
// of its own with its `kind` and the Rust host's words (the Python
// package's errors have the same kinds and words: host/python/tests/
// test_errors.py), on the addon and on the wasm driver; and a domain's
// life: closed while a call runs, from its own algorithm, its lock always
// let go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EngramClosedError,
  EngramError,
  EngramInputError,
  EngramLockError,
  EngramRefusedError,
  EngramStoppedError,
  EngramStoreError,
  MemoryBackend,
  hasJspi,
  open,
  openStore,
} from '../src/index.js';
import { notBuilt } from './built.js';

/** The words the Rust host says of a domain's state (engram-model's messages). */
const CLOSED = 'the domain is closed';
const NOT_UNICODE = 'the request holds text that is not Unicode (a lone surrogate): nothing ran';

const dir = mkdtempSync(join(tmpdir(), 'engram-errors-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const STATE = (id, timestamp = 1) => ({
  request_id: id,
  source: { agent_id: 'alice', component: 'COGNITION', actor: 'USER' },
  record: { record_type: 'STATE', timestamp, payload: { subject: 's', properties: {} } },
});

const REFUSED_PLAN = { metadata: {}, steps: [{ name: 'r', stage: 'ContextSelect', kind: 'RetrieveMemory' }] };

/** Asserts `f` throws (or rejects with) an error of `type` whose kind is `kind`: the error. */
async function throwsKind(f, type, kind) {
  let caught;
  try {
    await f();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof type, `${type.name} expected, got ${caught}`);
  assert.ok(caught instanceof EngramError);
  assert.equal(caught.kind, kind);
  return caught;
}

/** A call during which the engine stopped, on each driver. */
const STOPPING = {
  // The engine's memory held to 2 MiB, and a record that needs more.
  addon: async (store) => {
    const small = await open('bob', { store, limits: { maxMemoryBytes: 2 << 20, maxRecordBytes: 16 << 20, maxBatchBytes: 64 << 20 } });
    const big = { ...STATE('w-big'), source: { agent_id: 'bob', component: 'COGNITION', actor: 'USER' } };
    big.record.payload.properties = { x: 'x'.repeat(3 << 20) };
    try {
      return small.write(big);
    } finally {
      small.close();
    }
  },
  // A store that cannot append a read's audit entry fails the call as a trap does.
  'wasm driver': async (store) => {
    const bob = await open('bob', { store });
    store.appendAudit = () => {
      throw new Error('the trail is gone');
    };
    return bob.read({ record_type: 'STATE', selector: { Latest: { limit: 1 } }, request_id: 'r-stopped' });
  },
};

const DRIVERS = {
  addon: (name) => openStore(join(dir, `${name}.db`)),
  'wasm driver': () => new MemoryBackend(),
};

for (const [driver, storeFor] of Object.entries(DRIVERS)) {
  test(`${driver}: each kind of failure is an error of its own with its kind`, { skip: notBuilt }, async () => {
    const store = await storeFor(`kinds-${driver.replace(/ /g, '-')}`);
    const alice = await open('alice', { store });
    await throwsKind(() => alice.write('{not json'), EngramInputError, 'input');
    const refused = await throwsKind(() => alice.cycle(REFUSED_PLAN), EngramRefusedError, 'refused');
    assert.ok('plan_error' in refused.answer);
    const maintenance = await open('alice', { store, mode: 'maintenance' });
    const locked = await throwsKind(() => open('alice', { store, mode: 'maintenance' }), EngramLockError, 'locked');
    assert.match(locked.message, /locked for maintenance/);
    await maintenance.close();
    await alice.close();
    const closed = await throwsKind(() => alice.recall('anything?'), EngramClosedError, 'closed');
    assert.equal(closed.message, CLOSED);

    const stopped = await throwsKind(() => STOPPING[driver](store), EngramStoppedError, 'stopped');
    assert.match(stopped.message, /its instance was stopped, and the next call gets a fresh one/);
    if (typeof store.close === 'function') await store.close();
  });

  test(`${driver}: text that is not Unicode and numbers that are not finite are refused, never rewritten`, { skip: notBuilt }, async () => {
    const store = await storeFor(`unicode-${driver.replace(/ /g, '-')}`);
    const alice = await open('alice', { store });
    for (const id of ['q\ud800', 'q\udc00']) {
      const refused = await throwsKind(() => alice.write(JSON.stringify(STATE(id)).replace('q\\ud800', id).replace('q\\udc00', id)), EngramInputError, 'input');
      assert.equal(refused.message, NOT_UNICODE);
    }
    assert.deepEqual(await alice.read({ record_type: 'STATE', selector: { Latest: { limit: 5 } }, request_id: 'r' }), { records: [] });
    await throwsKind(() => alice.remember('I parked on level 3.', 'Noted.', { time: Number.NaN }), EngramInputError, 'input');
    const budget = await throwsKind(() => alice.recall('Where?', { token_budget: Number.NaN }), EngramInputError, 'input');
    assert.match(budget.message, /token_budget is NaN/);
    await alice.close();
    if (typeof store.close === 'function') await store.close();
  });
}

test('addon: a store of no path and a setting that is no setting are input errors naming what is wrong', { skip: notBuilt }, async () => {
  const empty = await throwsKind(() => openStore(''), EngramInputError, 'input');
  assert.equal(empty.message, "a SQLite store's path is empty: name a file");
  const store = await throwsKind(() => openStore(dir), EngramStoreError, 'store');
  assert.ok(store.message.includes(dir), store.message);
  const misspelled = await throwsKind(() => open('alice', { limits: { maxBatchOp: 5 } }), EngramInputError, 'input');
  assert.match(misspelled.message, /"max_batch_op"/);
  assert.match(misspelled.message, /max_batch_ops/);
  const clock = await throwsKind(async () => (await open('alice', { clock: () => Number.NaN })).remember('a', 'b'), EngramInputError, 'input');
  assert.match(clock.message, /the clock answered NaN/);
});

/** A store of each driver for the domain life tests: a SQLite file of the addon's, or one written in JavaScript. */
const LIFE_STORES = {
  addon: async (name) => ({ store: await openStore(join(dir, `${name}.db`)), path: join(dir, `${name}.db`) }),
  'wasm driver': async () => ({ store: new MemoryBackend() }),
};

for (const [driver, storeFor] of Object.entries(LIFE_STORES)) {
  // proves IO-W7: the maintenance lock always goes with the domain that took it
  test(`${driver}: a maintenance domain closed by its own ranker lets its lock go`, { skip: notBuilt }, async () => {
    const { store, path } = await storeFor('closed-by-ranker');
    const online = await open('alice', { store });
    online.remember('I parked on level 3.', 'Noted.');
    let maintenance;
    const during = [];
    const ranker = (keywords, candidates, k) => {
      maintenance.close();
      // The close takes effect as the call answers: the lock holds till then.
      during.push(online.write(STATE('during', 2)));
      return candidates.slice(0, k).map((c) => c.id);
    };
    maintenance = await open('alice', { store, mode: 'maintenance', ranker });
    const recalled = maintenance.recall('Where did I park?');
    assert.deepEqual(during, ['REJECTED'], 'the ranker ran, closed its domain, and the lock held while its call ran');
    assert.ok(recalled.memories.length > 0, 'the call that closed its domain still answers');
    await throwsKind(() => maintenance.recall('Where did I park?'), EngramClosedError, 'closed');
    maintenance.close();
    assert.ok('ACCEPTED' in online.write(STATE('after', 3)), 'online writes are let in again');
    await online.close();
    store.close();
    const bin = process.env.ENGRAM_BIN;
    if (path !== undefined && bin !== undefined) {
      const written = execFileSync(bin, ['--store', path, 'write', '--agent', 'alice'], { input: JSON.stringify(STATE('cli', 4)) }).toString();
      assert.match(written, /ACCEPTED/, 'and from another process');
    }
  });

  test(`${driver}: an async domain closed by its own ranker while its call waits does not stall, and lets its lock go`, { skip: notBuilt ?? (driver === 'wasm driver' && !hasJspi() && 'no JSPI here') }, async () => {
    const { store } = await storeFor('closed-async');
    const online = await open('alice', { store, async: true });
    await online.remember('I parked on level 3.', 'Noted.');
    let maintenance;
    const during = [];
    const ranker = async (keywords, candidates, k) => {
      await maintenance.close();
      // The close takes effect as the call answers: the lock holds till then.
      during.push(await online.write(STATE('during', 2)));
      return candidates.slice(0, k).map((c) => c.id);
    };
    maintenance = await open('alice', { store, mode: 'maintenance', ranker, async: true });
    const recalled = await maintenance.recall('Where did I park?');
    assert.deepEqual(during, ['REJECTED'], 'the ranker ran, closed its domain, and the lock held while its call ran');
    assert.ok(recalled.memories.length > 0);
    await throwsKind(() => maintenance.recall('again?'), EngramClosedError, 'closed');
    // The domain let the lock go as its call answered (the addon's thread, soon after).
    let reopened;
    for (let i = 0; i < 100 && reopened === undefined; i += 1) {
      try {
        reopened = await open('alice', { store, mode: 'maintenance' });
      } catch (error) {
        if (!(error instanceof EngramLockError)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    assert.ok(reopened !== undefined, 'the lock went');
    await reopened.close();
    assert.ok('ACCEPTED' in (await online.write(STATE('after', 3))), 'online writes are let in again');
    await online.close();
    store.close();
  });

  test(`${driver}: a call of a domain from its own algorithm is a lock error`, { skip: notBuilt }, async () => {
    const { store } = await storeFor('reentered');
    let alice;
    const seen = [];
    const ranker = (keywords, candidates, k) => {
      try {
        alice.recall('again?');
      } catch (error) {
        seen.push(error);
      }
      return candidates.slice(0, k).map((c) => c.id);
    };
    alice = await open('alice', { store, ranker });
    alice.remember('I parked on level 3.', 'Noted.');
    alice.recall('Where did I park?');
    assert.equal(seen.length, 1);
    assert.ok(seen[0] instanceof EngramLockError && /under way/.test(seen[0].message), String(seen[0]));
    await alice.close();
    store.close();
  });
}
