// The node:sqlite store under I/O faults injected with strace, in a Node
// process of its own: one failed unlock of the store's `-shm` file costs one
// write, not every later one; a read that fails while a new store opens is
// tried again, and one that keeps failing is named as a failed read, never
// as damage. The command line (`ENGRAM_BIN`) writes the sample memories.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

/** strace, which injects the faults: a machine without it fails these tests. */
function strace() {
  const found = spawnSync('strace', ['-V']);
  assert.equal(found.status, 0, 'strace is not on the PATH: these tests inject I/O errors with it (apt-get install strace)');
  return 'strace';
}

/** Runs `script` (an ES module) in a Node process of its own under `tracing`. */
function traced(tracing, script, ...args) {
  return spawnSync('strace', ['-f', ...tracing, process.execPath, '--input-type=module', '-e', script, '--', ...args], {
    encoding: 'utf8',
  });
}

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

const withSamples = (name) => {
  const store = join(dir, name);
  engram(store, ['write', '--agent', 'alice', '--batch', samples]);
  return store;
};
const lock = (call, kind, at) => call.includes(`l_type=${kind}, l_whence=SEEK_SET, l_start=${at}, l_len=1`);

// proves IO-W8: a REJECTED write is audited and stores nothing; the process goes on
test('one failed unlock of the -shm file costs one write, not every later one', { skip }, () => {
  strace();
  // A writer that starts the WAL afresh lets go of read mark 0 (byte 123),
  // takes mark 1 alone and lets it go: that unlock fails.
  const trace = join(dir, 'fcntl.txt');
  const dry = traced(['-o', trace, '-e', 'trace=fcntl'], WRITER, withSamples('twin.db'));
  assert.equal(dry.status, 0, dry.stderr);
  const calls = readFileSync(trace, 'utf8').split('\n').filter((line) => line.includes('fcntl('));
  const at = calls.findIndex(
    (call, i) => lock(call, 'F_UNLCK', 123) && lock(calls[i + 1] ?? '', 'F_WRLCK', 124) && lock(calls[i + 2] ?? '', 'F_UNLCK', 124),
  );
  assert.ok(at >= 0, 'a writer takes read mark 1 alone, then lets it go');
  const store = withSamples('t.db');
  const run = traced(['-o', '/dev/null', '-e', 'trace=fcntl', '-e', `inject=fcntl:error=EIO:when=${at + 3}`], WRITER, store);
  assert.equal(run.status, 0, run.stderr);
  const answers = lines(run.stdout);
  const rejected = answers.filter((a) => a === 'REJECTED').length;
  assert.equal(answers.length, 10);
  assert.ok(rejected <= 1, JSON.stringify(answers));
  const [read] = engram(store, ['read', '--agent', 'io'], JSON.stringify({ record_type: 'STATE', selector: { Latest: { limit: 50 } }, request_id: 'check' }));
  assert.equal(read.records.length, 10 - rejected, 'ACCEPTED writes stored, a REJECTED one not');
  const outcomes = engram(store, ['audit', '--agent', 'io']).filter((e) => e.operation === 'WRITE').map((e) => e.outcome);
  assert.equal(outcomes.length, 10);
  assert.equal(outcomes.filter((o) => o === 'REJECTED').length, rejected);
});

// Opens a new store at argv[1] and says so, or prints the error.
const OPENER = `
import { SqliteBackend } from ${JSON.stringify(join(src, 'backends/sqlite.js'))};
try { new SqliteBackend(process.argv[1]).close(); console.log('opened'); } catch (error) { console.log('ERR ' + error.message); }`;

test('an I/O error while a new store is read is named as one, never as damage', { skip }, () => {
  strace();
  const trace = join(dir, 'pread.txt');
  assert.equal(traced(['-o', trace, '-e', 'trace=pread64'], OPENER, join(dir, 'dry.db')).status, 0);
  const total = readFileSync(trace, 'utf8').split('\n').filter((line) => line.includes('pread64(')).length;
  let failed = 0;
  for (let n = 1; n <= total; n++) {
    for (const when of [`${n}`, `${n}+`]) {
      const run = traced(['-o', '/dev/null', '-e', 'trace=pread64', '-e', `inject=pread64:error=EIO:when=${when}`], OPENER, join(dir, `new-${n}${when.endsWith('+') ? 'on' : ''}.db`));
      if (run.status !== 0) continue; // the loader's own reads: Node never started
      const said = run.stdout.trim();
      if (said === 'opened') {
        assert.ok(!when.endsWith('+'), `pread ${when}: opened though every read failed`);
        continue;
      }
      failed += 1;
      assert.ok(said.startsWith('ERR '), said);
      assert.ok(!said.includes('damaged') && !said.split('SQLite:')[0].includes('malformed'), `pread ${when}: ${said}`);
      assert.ok(/I\/O|read/i.test(said), `pread ${when}: ${said}`);
    }
  }
  assert.ok(failed > 0, 'some injected read error must have been seen');
});

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
