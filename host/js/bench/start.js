// What the npm package costs at start in Node, step by step: the time of each
// step of the common path (import, open, remember, recall), then of the first
// recall with a token budget (the only call that loads the tokenizer's
// table), with the process's resident memory and how much of the addon is
// resident after each. `node bench/start.js [FOLDER]` (a fresh store in
// FOLDER, a temporary folder by default); run it twice to see the engine
// loaded from the compiled cache instead of compiled. Linux (/proc).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** How much of the files mapped whose path holds `part` is resident, in MB. */
function residentMb(part) {
  let total = 0;
  let inside = false;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = line.split(/\s+/);
    if (/^[0-9a-f]+-[0-9a-f]+$/.test(head[0])) inside = line.includes(part);
    else if (inside && line.startsWith('Rss:')) total += Number(head[1]);
  }
  return total / 1024;
}

function step(name, since) {
  const ms = (performance.now() - since).toFixed(1).padStart(8);
  const rss = (process.memoryUsage().rss / 2 ** 20).toFixed(1).padStart(6);
  console.log(`${name.padEnd(44)} ${ms} ms  RSS ${rss} MB  addon resident ${residentMb('.node').toFixed(1).padStart(5)} MB`);
}

const folder = process.argv[2] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'engram-start-'));
let since = performance.now();
const { open } = await import('engram-memory');
step("import('engram-memory')", since);
since = performance.now();
const alice = await open('alice', { store: path.join(folder, 'engram.db') });
step("open('alice', { store })", since);
since = performance.now();
alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!');
step('remember', since);
since = performance.now();
alice.recall('Which hotel did I book?');
step('recall', since);
since = performance.now();
alice.recall('Which hotel did I book?', { token_budget: 100 });
step('recall({ token_budget: 100 }): the first count', since);
since = performance.now();
alice.recall('Which hotel did I book?', { token_budget: 100 });
step('recall({ token_budget: 100 }) again', since);
