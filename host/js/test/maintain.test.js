// Store-wide maintenance (IO-W7): export, import and expire of a store take
// each domain's maintenance lock. On a store the Rust host opened they run
// there in one crossing (engram::surface::maintain); on a store written in
// JavaScript, domain by domain here. Either way a store-wide call answers
// what each domain answered, and fails by kind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngramInputError, EngramLockError, MemoryBackend, domains, exportStore, expireStore, importStore, open, openStore } from '../src/index.js';
import { notBuilt } from './built.js';

const dir = mkdtempSync(join(tmpdir(), 'engram-maintain-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** A store of each driver: a SQLite file the Rust host opened, and a backend written in JavaScript. */
const STORES = {
  addon: (name) => openStore(join(dir, `${name}.db`)),
  'wasm driver': async () => new MemoryBackend(),
};

for (const [driver, storeOf] of Object.entries(STORES)) {
  test(`${driver}: io_w7 a store-wide export, import and expire answer each domain, and fail by kind`, { skip: notBuilt }, async () => {
    const store = await storeOf('source');
    for (const [agent, city] of [
      ['alice', 'Lisbon'],
      ['bob', 'Porto'],
    ]) {
      const domain = await open(agent, { store });
      domain.remember(`I live in ${city}`, 'Noted.');
      domain.close();
    }
    // Domains in the store's key order (an agent's id is kept after its length).
    const agents = await domains(store);
    assert.deepEqual(agents, ['bob', 'alice']);
    const exported = await exportStore(store);
    assert.deepEqual([...new Set(exported.map((line) => line.agent_id))], agents);
    assert.deepEqual(
      await exportStore(store, { agents: ['bob'] }),
      exported.filter((line) => line.agent_id === 'bob'),
    );

    const held = await open('bob', { store, mode: 'maintenance' });
    assert.equal(held.mode, 'maintenance');
    await assert.rejects(exportStore(store), (error) => error instanceof EngramLockError && /locked for maintenance/.test(error.message));
    await assert.rejects(expireStore(store, { agents: ['bob'] }), EngramLockError);
    held.close();
    await assert.rejects(importStore(store, [{ agent_id: 'carol', item: { kind: 'no such kind' } }]), EngramInputError);

    const copy = await storeOf('copy');
    const count = (agent) => exported.filter((line) => line.agent_id === agent).length;
    assert.deepEqual(
      await importStore(copy, exported),
      agents.map((agent) => ({ agent_id: agent, items: count(agent), new: count(agent) })),
    );
    assert.deepEqual(await exportStore(copy), exported);
    assert.deepEqual(
      await expireStore(copy),
      agents.map((agent) => ({ agent_id: agent, expired: 0 })),
    );
    const online = await open('alice', { store: copy });
    assert.equal(online.mode, 'online');
    online.close();
    store.close?.();
    copy.close?.();
  });
}

test('io_w7 a store-wide import of lines that are not export lines is refused in the same words on both drivers', { skip: notBuilt }, async () => {
  const messages = [];
  for (const [driver, storeOf] of Object.entries(STORES)) {
    const store = await storeOf(`refused-${driver.replace(' ', '-')}`);
    for (const lines of [[{ item: {} }], 'not lines']) {
      await assert.rejects(importStore(store, lines), (error) => {
        assert.ok(error instanceof EngramInputError, `${driver}: ${error}`);
        assert.match(error.message, /^import: not valid arguments: /);
        messages.push([driver, error.message]);
        return true;
      });
    }
    // Nothing was opened for maintenance: the store takes online writes.
    const domain = await open('alice', { store });
    assert.equal(domain.mode, 'online');
    domain.close();
    store.close?.();
  }
  const [addon, wasm] = [messages.slice(0, 2), messages.slice(2)].map((list) => list.map(([, message]) => message));
  assert.deepEqual(wasm, addon);
});
