// Engram from Node (its addon, the Rust host, on a SQLite file) against the
// store a Node agent would otherwise write on node:sqlite: LangGraph's
// SqliteStore layout and statements (its table,
// its two indexes, `INSERT OR REPLACE` in a transaction per put, a get by
// prefix and key, a search page by `LIMIT … OFFSET`), the workload of the
// Rust bench `cargo bench --bench peers` and of Python's `bench/peers.py`,
// in one process, one run, interleaved, medians of 3 rounds, at the same
// journal and synchronous settings on both sides (WAL + FULL, WAL + NORMAL):
//
// - put: one value per call, one commit each (Engram: a FACT write under
//   the key `bench.facts.k…`; the baseline: one upsert).
// - get: one value by its key, in a scattered order, (i * 7919) % N
//   (Engram: a ByKey read; the baseline: a SELECT by prefix and key).
// - list(100): every page of 100 of the namespace, in order (Engram: `list`
//   with the key that ended the previous page as `after`; the baseline:
//   LIMIT 100 OFFSET …), per page.
//
//     node bench/peers.js [N]      # N = 2000, once `cargo test --test javascript` made the package ready
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { open } from '../src/index.js';

const n = Number(process.argv[2] ?? 2000);
if (!Number.isInteger(n) || n < 100) {
  console.error('usage: node bench/peers.js [N ≥ 100]');
  process.exit(2);
}
const ROUNDS = 3;
const PREFIX = 'bench.facts';
const content = (i) => `The user prefers option ${i} for dinner`;
const key = (i) => `k${String(i).padStart(8, '0')}`;

/** µs per call of f(i) for i < count. */
function timed(count, f) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i++) f(i);
  return Number(process.hrtime.bigint() - started) / 1e3 / count;
}

/** The baseline: LangGraph's SqliteStore as plain SQL on node:sqlite. */
function baseline(path, synchronous) {
  const db = new DatabaseSync(path);
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous};
    CREATE TABLE store (prefix text NOT NULL, key text NOT NULL, value text NOT NULL,
      created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
      expires_at TIMESTAMP, ttl_minutes REAL, PRIMARY KEY (prefix, key));
    CREATE INDEX store_prefix_idx ON store (prefix);
    CREATE INDEX idx_store_expires_at ON store (expires_at) WHERE expires_at IS NOT NULL;`);
  const upsert = db.prepare(`INSERT OR REPLACE INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
    VALUES (?, ?, ?, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, NULL, NULL)`);
  const select = db.prepare('SELECT key, value, created_at, updated_at, expires_at, ttl_minutes FROM store WHERE prefix = ? AND key IN (?)');
  const search = db.prepare(`SELECT prefix, key, value, created_at, updated_at, expires_at, ttl_minutes, NULL as score
    FROM store WHERE prefix LIKE ? ORDER BY updated_at DESC LIMIT ? OFFSET ?`);
  const put = timed(n, (i) => {
    db.exec('BEGIN');
    upsert.run(PREFIX, key(i), JSON.stringify({ content: content(i), confidence: 0.9 }));
    db.exec('COMMIT');
  });
  const get = timed(n, (i) => {
    const row = select.get(PREFIX, key((i * 7919) % n));
    if (row === undefined || JSON.parse(row.value).confidence !== 0.9) throw new Error(`get ${i}`);
  });
  const list = timed(n / 100, (p) => {
    const rows = search.all(`${PREFIX}%`, 100, p * 100).map((row) => JSON.parse(row.value));
    if (rows.length !== 100) throw new Error(`page ${p}: ${rows.length}`);
  });
  db.close();
  return { put, get, list };
}

/** Engram's Node host on its node:sqlite store. */
async function engram(path, synchronous) {
  const domain = await open('bench', { store: path, sqlite: { synchronous } });
  try {
    const put = timed(n, (i) => {
      const answer = domain.write({
        request_id: `p${i}`,
        source: { agent_id: 'bench', component: 'COGNITION', actor: 'USER' },
        record: {
          record_type: 'FACT',
          key: `${PREFIX}.${key(i)}`,
          payload: {
            semantic: {
              content: content(i), context: 'dining', valid_at: 0, strength: 1.0,
              last_accessed: 0, access_count: 0, confidence: 0.9, privacy_tier: 'public',
            },
          },
        },
      });
      if (answer.ACCEPTED === undefined) throw new Error(`put ${i}: ${JSON.stringify(answer)}`);
    });
    const get = timed(n, (i) => {
      const read = domain.read({ record_type: 'FACT', selector: { ByKey: { key: `${PREFIX}.${key((i * 7919) % n)}` } }, request_id: `g${i}` });
      if (read.records?.length !== 1) throw new Error(`get ${i}: ${JSON.stringify(read)}`);
    });
    let after;
    const list = timed(n / 100, (p) => {
      const args = { namespace: PREFIX.split('.'), limit: 100, request_id: `l${p}` };
      if (after !== undefined) args.after = after;
      const { records } = domain.list(args);
      if (records?.length !== 100) throw new Error(`page ${p}: ${records?.length}`);
      after = records[99].key;
    });
    return { put, get, list };
  } finally {
    domain.close();
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const dir = mkdtempSync(join(tmpdir(), 'engram-peers-'));
const runs = new Map();
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const synchronous of ['FULL', 'NORMAL']) {
      for (const [name, run] of [['node:sqlite, LangGraph layout', baseline], ['Engram (Node)', engram]]) {
        const label = `${name}, WAL + ${synchronous}`;
        const path = join(dir, `${name.slice(0, 4)}-${synchronous}-${round}.db`);
        if (!runs.has(label)) runs.set(label, []);
        runs.get(label).push(await run(path, synchronous));
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const medians = new Map([...runs].map(([label, r]) => [label, Object.fromEntries(['put', 'get', 'list'].map((p) => [p, median(r.map((x) => x[p]))]))]));
console.log(`peers (Node): N = ${n}, medians of ${ROUNDS} interleaved rounds, µs per call (list: per page of 100)`);
console.log(`${''.padEnd(42)} ${'put'.padStart(10)} ${'get'.padStart(10)} ${'list(100)'.padStart(12)}`);
for (const [label, m] of medians) {
  console.log(`${label.padEnd(42)} ${m.put.toFixed(1).padStart(10)} ${m.get.toFixed(1).padStart(10)} ${m.list.toFixed(1).padStart(12)}`);
}
for (const synchronous of ['FULL', 'NORMAL']) {
  const e = medians.get(`Engram (Node), WAL + ${synchronous}`);
  const b = medians.get(`node:sqlite, LangGraph layout, WAL + ${synchronous}`);
  const ratio = (p) => (b[p] / e[p]).toFixed(2);
  console.log(`Engram speed / the baseline's at WAL + ${synchronous.padEnd(6)}: put ${ratio('put')}×, get ${ratio('get')}×, list(100) ${ratio('list')}×`);
}
