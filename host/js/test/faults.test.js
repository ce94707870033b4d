// A SQLite file shared by Node processes: a store one process holds open
// keeps its writes while others open, write and close it. (The store is the
// Rust host's, whose I/O faults tests/io_faults.rs injects.) The command
// line (`ENGRAM_BIN`) writes the sample memories.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { notBuilt } from './built.js';

const bin = process.env.ENGRAM_BIN;
const skip = notBuilt ?? (bin ? undefined : 'ENGRAM_BIN does not name the `engram` binary');
const dir = mkdtempSync(join(tmpdir(), 'engram-faults-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const src = fileURLToPath(new URL('../src/', import.meta.url));
const samples = fileURLToPath(new URL('../../../samples/memories.jsonl', import.meta.url));

const lines = (text) => text.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line));
const engram = (store, args, input = '') => lines(execFileSync(bin, ['--store', store, ...args], { input, encoding: 'utf8' }));

// Ten STATE writes of agent `io`, an answer a line.
const WRITER = `
import { open } from ${JSON.stringify(join(src, 'index.js'))};
const domain = await open('io', { store: process.argv[1] });
for (let i = 1; i <= 10; i++) {
  console.log(JSON.stringify(domain.write({ request_id: 'io-' + i,
    source: { agent_id: 'io', component: 'COGNITION', actor: 'USER' },
    record: { record_type: 'STATE', timestamp: i, payload: { subject: 's', properties: {} } } })));
}
domain.close();`;


// proves S-FILE IO-W8: a store one process holds open keeps every write it acknowledged while
// other processes open the file, write and close it (a host that opened and closed the file itself
// would let go of SQLite's lock on it, and another process's close would delete the WAL under it)
test('a store held open keeps its writes while other processes open, write and close it', { skip }, async () => {
  const { open } = await import(join(src, 'index.js'));
  const store = join(dir, 'held.db');
  engram(store, ['write', '--agent', 'alice', '--batch', samples]); // the file exists, in WAL mode
  const alice = await open('alice', { store });
  try {
    const mine = [];
    for (let round = 0; round < 3; round++) {
      const other = spawnSync(process.execPath, ['--input-type=module', '-e', WRITER, '--', store], { encoding: 'utf8' });
      assert.equal(other.status, 0, other.stderr);
      assert.ok(existsSync(`${store}-wal`), `round ${round}: another process's close deleted the WAL under an open store`);
      const answer = alice.write({
        request_id: `mine-${round}`,
        source: { agent_id: 'alice', component: 'COGNITION', actor: 'USER' },
        record: { record_type: 'STATE', timestamp: round, payload: { subject: 'mine', properties: {} } },
      });
      mine.push(answer.ACCEPTED.stored_id);
    }
    const seen = engram(store, ['read', '--agent', 'alice'], '{"record_type":"STATE","selector":{"Limit":{"limit":50}},"request_id":"q"}');
    const ids = new Set(seen[0].records.map((record) => record.id));
    for (const id of mine) assert.ok(ids.has(id), `${id} is lost`);
  } finally {
    alice.close();
  }
});
