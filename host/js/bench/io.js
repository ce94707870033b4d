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

/** The i-th write request, as the Rust bench makes it. */
const request = (i) =>
  `{"request_id":"w-${i}","source":{"agent_id":"bench","component":"COGNITION","actor":"USER"},"record":{"record_type":"FACT","key":"user.k${i}","payload":{"semantic":{"content":"Fact number ${i} about the user","context":"bench","valid_at":1767225600000,"strength":1.0,"last_accessed":1767225600000,"access_count":0,"confidence":0.9,"privacy_tier":"public"}}}}`;

const domain = await open('bench', { store: path, sqlite: { synchronous } });
try {
  const ids = [];
  let started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const answer = domain.write(request(i));
    ids.push(answer.ACCEPTED.stored_id);
  }
  const write = process.hrtime.bigint() - started;
  started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const answer = domain.read(`{"record_type":"FACT","selector":{"ById":{"id":"${ids[i]}"}},"request_id":"r-${i}"}`);
    if (answer.records?.length !== 1) throw new Error(`read ${i}: ${JSON.stringify(answer)}`);
  }
  const read = process.hrtime.bigint() - started;
  console.log(JSON.stringify({ write_us: Number(write) / 1e3 / n, read_us: Number(read) / 1e3 / n }));
} finally {
  domain.close();
}
