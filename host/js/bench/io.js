// The Node host's per-call cost (its addon, on a SQLite file): writes `n` FACTs (JSON
// text, as a caller hands them) into a fresh store at `path`, then reads each
// back by its id, and prints one JSON line `{"write_us","read_us"}`: the
// mean µs per call. Run by the Rust bench `cargo bench --bench javascript`,
// which times the Rust host on the same requests in the same run:
// `node bench/io.js N PATH [FULL|NORMAL]`.
import { open } from '../src/index.js';

const [n, path, synchronous = 'FULL'] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
if (!Number.isInteger(n) || n < 1 || !path) {
  console.error('usage: node bench/io.js N PATH [FULL|NORMAL]');
  process.exit(2);
}

/** A write request under `id` of the FACT `user.<key>`, as the Rust bench makes it. */
const named = (id, key, i) =>
  `{"request_id":"${id}","source":{"agent_id":"bench","component":"COGNITION","actor":"USER"},"record":{"record_type":"FACT","key":"user.${key}","payload":{"semantic":{"content":"Fact number ${i} about the user","context":"bench","valid_at":1767225600000,"strength":1.0,"last_accessed":1767225600000,"access_count":0,"confidence":0.9,"privacy_tier":"public"}}}}`;
/** The i-th write request. */
const request = (i) => named(`w-${i}`, `k${i}`, i);
/** Writes, and reads of them, made untimed first, as the Rust bench does (`warm_up`): a tenth, at least 100. */
const warm = Math.max(Math.floor(n / 10), 100);

const domain = await open('bench', { store: path, sqlite: { synchronous } });

/** Writes the requests `make(i)` makes for i in 0..count: their ids. */
function writeAll(count, make) {
  const ids = [];
  for (let i = 0; i < count; i++) ids.push(domain.write(make(i)).ACCEPTED.stored_id);
  return ids;
}

/** Reads each of `ids` by its id, under request ids `<prefix>-<i>`. */
function readAll(ids, prefix) {
  for (let i = 0; i < ids.length; i++) {
    const answer = domain.read(`{"record_type":"FACT","selector":{"ById":{"id":"${ids[i]}"}},"request_id":"${prefix}-${i}"}`);
    if (answer.records?.length !== 1) throw new Error(`read ${i}: ${JSON.stringify(answer)}`);
  }
}

try {
  // The same two functions, untimed first: the Rust bench warms up alike.
  readAll(
    writeAll(warm, (i) => named(`warm-${i}`, `warm${i}`, i)),
    'warm-r',
  );
  let started = process.hrtime.bigint();
  const ids = writeAll(n, request);
  const write = process.hrtime.bigint() - started;
  started = process.hrtime.bigint();
  readAll(ids, 'r');
  const read = process.hrtime.bigint() - started;
  console.log(JSON.stringify({ write_us: Number(write) / 1e3 / n, read_us: Number(read) / 1e3 / n }));
} finally {
  domain.close();
}
