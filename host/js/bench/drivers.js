// What each way of running a domain costs, in one run: `n` writes of a
// FACT then `n` reads by id, on the Rust host (the addon: synchronous, and
// async on the domain's own thread) and on the wasm driver (a store written
// in JavaScript: synchronous, async on the JSPI build, and async on a store
// whose every call answers on a later turn of the event loop). Prints one
// JSON line per case, mean µs per call and the ratio to the synchronous
// domain of the Rust host: `node bench/drivers.js [N]` (N = 2000), on a
// Node with JSPI (24 or later) for the JSPI cases. With
// ENGRAM_TEST_POSTGRES_URL set, domains on PostgreSQL too (in a schema of
// their own each, dropped after).
import { MemoryBackend, open, openStore } from '../src/index.js';
import { DeferredBackend } from '../test/deferred-backend.js';

const postgres = process.env.ENGRAM_TEST_POSTGRES_URL;
const schemas = [];

const n = Number(process.argv[2] ?? 2000);

/** The i-th write request. */
const request = (i) =>
  `{"request_id":"w-${i}","source":{"agent_id":"bench","component":"COGNITION","actor":"USER"},"record":{"record_type":"FACT","key":"user.k${i}","payload":{"semantic":{"content":"Fact number ${i} about the user","context":"bench","valid_at":1767225600000,"strength":1.0,"last_accessed":1767225600000,"access_count":0,"confidence":0.9,"privacy_tier":"public"}}}}`;

/** Mean µs per write and per read of `n` each on a fresh domain. */
async function run(options) {
  const domain = await open('bench', options);
  try {
    const ids = [];
    let started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) ids.push((await domain.write(request(i))).ACCEPTED.stored_id);
    const write = process.hrtime.bigint() - started;
    started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      await domain.read(`{"record_type":"FACT","selector":{"ById":{"id":"${ids[i]}"}},"request_id":"r-${i}"}`);
    }
    const read = process.hrtime.bigint() - started;
    return { write_us: Number(write) / 1000 / n, read_us: Number(read) / 1000 / n };
  } finally {
    await domain.close();
  }
}

/** Each case: its name, and how a fresh domain of it is opened. */
const cases = [
  ['native, sync, memory', async () => ({ store: await openStore() })],
  ['native, async, memory', async () => ({ store: await openStore(), async: true })],
  ['wasm, sync, memory store in JavaScript', () => ({ store: new MemoryBackend() })],
  ['wasm, async (JSPI), memory store in JavaScript', () => ({ store: new MemoryBackend(), async: true })],
  ['wasm, async (JSPI), store answering on a later turn', () => ({ store: new DeferredBackend(new MemoryBackend()), async: true })],
];
if (postgres) {
  const url = () => {
    const schema = `engram_bench_${process.pid}_${schemas.length}`;
    schemas.push(schema);
    return `${postgres}${postgres.includes('?') ? '&' : '?'}options=-csearch_path%3D${schema}`;
  };
  cases.push(['native, sync, PostgreSQL', () => ({ store: url() })]);
  cases.push(['native, async, PostgreSQL', () => ({ store: url(), async: true })]);
}
await run({ store: new MemoryBackend() }); // warm-up: compiles the components
await run({ store: await openStore() }); // and loads the addon's engine
// Three rounds, the cases interleaved; the median of each.
const rounds = cases.map(() => []);
for (let round = 0; round < 3; round++) {
  for (const [i, [, make]] of cases.entries()) rounds[i].push(await run(await make()));
}
const median = (xs) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)];
const round1 = (x) => Math.round(x * 10) / 10;
const [base] = rounds.map((r) => ({ write_us: median(r.map((x) => x.write_us)), read_us: median(r.map((x) => x.read_us)) }));
for (const [i, [name]] of cases.entries()) {
  const write_us = median(rounds[i].map((x) => x.write_us));
  const read_us = median(rounds[i].map((x) => x.read_us));
  console.log(
    JSON.stringify({
      case: name,
      n,
      write_us: round1(write_us),
      read_us: round1(read_us),
      write_ratio: round1(write_us / base.write_us),
      read_ratio: round1(read_us / base.read_us),
    }),
  );
}

if (schemas.length > 0) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: postgres });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}
