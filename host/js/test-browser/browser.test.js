// The example page (examples/browser) in a real headless Chromium, driven
// by playwright-core: a domain on the JSPI build over IndexedDB, served
// from this package's folder by a static server on 127.0.0.1.
//
// `ENGRAM_CHROMIUM` names the Chromium to run (Debian's `chromium`:
// /usr/bin/chromium); `ENGRAM_SCREENSHOT_DIR` the folder the page's
// screenshot goes to (a fresh temporary folder when unset). Without a
// Chromium every test fails saying so: nothing is skipped, but a scenario
// that needs the tests' embedding model when `ENGRAM_TEST_EMBEDDER_URL` does
// not name its server (the static server passes the page's requests to
// it under /embedder/, on the page's own origin: the model's server sends
// no CORS headers).
//
//   ENGRAM_CHROMIUM=/usr/bin/chromium npm run test:browser

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { NO_EMBEDDER, embedderUrl, loadScenarios, runScenario, usesEmbedder } from '../test/scenarios.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PAGE = '/examples/browser/index.html';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

/** Folders made here, removed after. */
const made = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});
function scratch(name) {
  const dir = mkdtempSync(join(tmpdir(), `engram-${name}-`));
  made.push(dir);
  return dir;
}

/** The Chromium to run, or a failure saying what is missing. */
function chromiumPath() {
  const path = process.env.ENGRAM_CHROMIUM;
  if (!path) {
    throw new Error(
      'ENGRAM_CHROMIUM is not set: it names the Chromium these tests run (Debian: apt-get install chromium, then ENGRAM_CHROMIUM=/usr/bin/chromium)',
    );
  }
  if (!existsSync(path)) {
    throw new Error(`ENGRAM_CHROMIUM names ${path}, which does not exist: install Chromium there (Debian: apt-get install chromium)`);
  }
  return path;
}

/** The static server, closed after. */
let http;
after(() => {
  http?.closeAllConnections();
  http?.close();
});

/** Where the static server passes requests on to the tests' embedding server. */
const EMBEDDER_PATH = '/embedder';

/**
 * A request of the page under {@link EMBEDDER_PATH}, passed on to the
 * tests' embedding server (`ENGRAM_TEST_EMBEDDER_URL`), its answer handed
 * back as it came.
 */
async function passToEmbedder(request, response, rest) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  try {
    const answer = await fetch(`${embedderUrl()}${rest}`, {
      method: request.method,
      headers: { 'content-type': request.headers['content-type'] ?? 'application/json' },
      body: request.method === 'GET' ? undefined : Buffer.concat(chunks),
    });
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    response.end(Buffer.from(await answer.arrayBuffer()));
  } catch (error) {
    response.writeHead(502).end(String(error?.message ?? error));
  }
}

/** The package's folder over HTTP on 127.0.0.1 (a secure context: IndexedDB, Web Locks); its origin. */
const server = (async () => {
  if (!existsSync(join(ROOT, 'gen', 'engram-host-builtin'))) {
    throw new Error('the transpiled components are missing (gen/): run `npm run build` first');
  }
  http = createServer(async (request, response) => {
    const { pathname } = new URL(request.url, 'http://host');
    if (pathname.startsWith(`${EMBEDDER_PATH}/`) && embedderUrl() !== undefined) {
      await passToEmbedder(request, response, pathname.slice(EMBEDDER_PATH.length));
      return;
    }
    const path = normalize(decodeURIComponent(pathname));
    const file = join(ROOT, path);
    if (!file.startsWith(ROOT) || file.includes(`${sep}node_modules${sep}`)) {
      response.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${http.address().port}`;
})();
// Awaited by each test, which fails with its error.
server.catch(() => {});

/** A Chromium whose profile (and so its IndexedDB) lives in `dir`. */
function launch(dir) {
  return chromium.launchPersistentContext(dir, { executablePath: chromiumPath(), headless: true, args: ARGS });
}

/**
 * The example page of `agent` in a tab of `context`, once its domain is
 * open; what the page logs as errors fails the test.
 */
async function openPage(context, agent) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.errors = errors;
  await page.goto(`${await server}${PAGE}?agent=${encodeURIComponent(agent)}`);
  await ready(page);
  return page;
}

/** Waits until the page's domain is open; fails with what the page said when it could not be. */
async function ready(page) {
  await page.waitForFunction(() => document.body.dataset.ready !== undefined, undefined, { timeout: 60_000 });
  const state = await page.evaluate(() => ({ ready: document.body.dataset.ready, status: document.getElementById('status').textContent }));
  assert.equal(state.ready, 'yes', `the page could not open the memory: ${state.status}; ${page.errors.join('; ')}`);
}

/** Remembers a turn through the page's form; the status line after. */
async function rememberByForm(page, message, response) {
  await page.fill('#message', message);
  await page.fill('#response', response);
  await page.click('#remember');
  await page.waitForFunction(() => /^Remember(ed|\sfailed)/.test(document.getElementById('status').textContent));
  return page.textContent('#status');
}

/** Recalls through the page's form: the prompt it shows. */
async function recallByForm(page, question) {
  await page.fill('#question', question);
  await page.click('#recall');
  await page.waitForFunction(() => /^Recall(ed|\sfailed)/.test(document.getElementById('status').textContent));
  const status = await page.textContent('#status');
  assert.match(status, /^Recalled/, status);
  return page.textContent('#prompt');
}

// proves B5-S1: what a reload and a restart find in IndexedDB is the turn's summary, never its raw text
test('B5-S1: a turn remembered on the page is recalled after a reload and after the browser restarts, and its raw text is not stored', async () => {
  const profile = scratch('chromium-profile');
  const fact = 'I booked the Hotel Avenida in Lisbon for May.';
  const reply = 'Lovely, close to the old town.';
  let context = await launch(profile);
  try {
    let page = await openPage(context, 'alice');
    const remembered = await rememberByForm(page, fact, reply);
    assert.match(remembered, /^Remembered: \S+/, remembered);

    await page.reload();
    await ready(page);
    let prompt = await recallByForm(page, 'Which hotel did I book in Lisbon?');
    assert.match(prompt, /Hotel Avenida/, `after a reload the recall finds the turn; the prompt: ${prompt}`);
    const audit = await page.evaluate(() => engramExample.audit({ operation: 'WRITE' }));
    assert.deepEqual(
      audit.map((line) => line.outcome),
      ['ACCEPTED'],
      JSON.stringify(audit),
    );

    await context.close();
    context = await launch(profile);
    page = await openPage(context, 'alice');
    prompt = await recallByForm(page, 'Which hotel did I book in Lisbon?');
    assert.match(prompt, /Hotel Avenida/, `after the browser restarted the recall finds the turn; the prompt: ${prompt}`);

    // Every value of the database, as text: the summary is there, the raw turn is not.
    const held = await page.evaluate(
      () =>
        new Promise((resolve, reject) => {
          const request = indexedDB.open('engram:alice');
          request.onerror = () => reject(request.error);
          request.onsuccess = () => {
            const values = request.result.transaction('kv').objectStore('kv').getAll();
            values.onsuccess = () => {
              resolve(values.result.map((value) => new TextDecoder().decode(value)).join('\n'));
              request.result.close();
            };
          };
        }),
    );
    assert.match(held, /Hotel Avenida/);
    for (const raw of [fact, reply]) assert.ok(!held.includes(raw), `the database holds the raw text ${JSON.stringify(raw)}`);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

// proves IO-W6: one agent domain per database: another agent's page, same origin, recalls nothing of alice's
test("IO-W6: each agent's domain is a database of its own: bob's page recalls nothing alice remembered", async () => {
  const context = await launch(scratch('chromium-profile'));
  try {
    const alice = await openPage(context, 'alice');
    await rememberByForm(alice, 'My passport number ends in 4471.', 'Noted.');
    const bob = await openPage(context, 'bob');
    const recalled = await bob.evaluate(() => engramExample.recall('What does my passport number end in?'));
    assert.deepEqual(recalled.memories, [], JSON.stringify(recalled));
    const names = await bob.evaluate(async () => (await indexedDB.databases()).map((db) => db.name).sort());
    assert.deepEqual(names, ['engram:alice', 'engram:bob']);
    const own = await alice.evaluate(() => engramExample.recall('What does my passport number end in?'));
    assert.equal(own.memories.length, 1, JSON.stringify(own));
  } finally {
    await context.close();
  }
});

// proves IO-W2 IO-W8: two tabs writing one domain at once lose nothing (each write ACCEPTED and kept), and a turn both tabs remember under one request_id is stored once
test('IO-W2 IO-W8: two tabs remember 20 turns each at once into one domain, all 40 are kept and audited ACCEPTED, and the tabs take turns', async () => {
  const context = await launch(scratch('chromium-profile'));
  try {
    const tabs = [await openPage(context, 'carol'), await openPage(context, 'carol')];
    const TURNS = 20;
    const runs = await Promise.all(
      tabs.map((page, tab) =>
        page.evaluate(
          async ({ tab, turns }) => {
            // Counts the store's commits whose preconditions failed: writers
            // that take turns (the Web Lock) never undo each other's reads.
            const store = (await engramExample.ready).store;
            const commit = store.commit.bind(store);
            const commits = { done: 0, conflicts: 0 };
            store.commit = async (...args) => {
              const committed = await commit(...args);
              commits.done += 1;
              if (!committed) commits.conflicts += 1;
              return committed;
            };
            const answers = [];
            const began = performance.timeOrigin + performance.now();
            for (let i = 0; i < turns; i++) {
              answers.push(await engramExample.remember(`Zephyr note ${tab}-${i}: the colour of box ${tab}-${i} is teal.`, 'Noted.'));
            }
            // The same turn, with the same request_id, from both tabs.
            answers.push(await engramExample.remember('Zephyr note shared: the meeting moved to Friday.', 'Noted.', { request_id: 'both-tabs' }));
            const ended = performance.timeOrigin + performance.now();
            return { answers, commits, began, ended };
          },
          { tab, turns: TURNS },
        ),
      ),
    );
    assert.ok(
      runs[0].began < runs[1].ended && runs[1].began < runs[0].ended,
      `the tabs wrote at once: ${runs.map((run) => `${run.began}..${run.ended}`).join(', ')}`,
    );
    assert.deepEqual(
      runs.map((run) => run.commits.conflicts),
      [0, 0],
      `no commit of one tab found its reads changed by the other: ${JSON.stringify(runs.map((run) => run.commits))}`,
    );
    const answers = runs.map((run) => run.answers);
    for (const list of answers) for (const answer of list) assert.equal(answer.committed.length, 1, JSON.stringify(answer));
    assert.deepEqual(answers[0].at(-1).committed, answers[1].at(-1).committed, 'the shared request_id answers the same memory in both tabs');

    const distinct = new Set(answers.flat().map((answer) => answer.committed[0]));
    assert.equal(distinct.size, 2 * TURNS + 1);
    const recalled = await tabs[1].evaluate(() => engramExample.recall('zephyr note', { top_k: 100 }));
    assert.equal(recalled.memories.length, 2 * TURNS + 1, `the memories kept: ${recalled.memories.map((m) => m.summary).join(' | ')}`);
    assert.deepEqual(new Set(recalled.memories.map((m) => m.id)), distinct);
    const stored = await tabs[0].evaluate(() =>
      engramExample.read({ record_type: 'EVENT', selector: { Latest: { limit: 100 } }, request_id: 'count' }),
    );
    assert.deepEqual(new Set(stored.records.map((record) => record.id)), distinct, JSON.stringify(stored));

    const writes = await tabs[0].evaluate(() => engramExample.audit({ operation: 'WRITE', limit: 1000 }));
    const outcomes = {};
    for (const line of writes) outcomes[line.outcome] = (outcomes[line.outcome] ?? 0) + 1;
    assert.deepEqual(outcomes, { ACCEPTED: 2 * TURNS + 1, REPLAYED: 1 }, JSON.stringify(writes));
    assert.deepEqual(tabs.flatMap((page) => page.errors), []);
  } finally {
    await context.close();
  }
});

test('the example page renders its memory, recall and audit trail (a screenshot is taken)', async (t) => {
  // Kept after the run, to be looked at.
  const dir = process.env.ENGRAM_SCREENSHOT_DIR || mkdtempSync(join(tmpdir(), 'engram-screenshot-'));
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'engram-browser-example.png');
  rmSync(path, { force: true });
  const context = await launch(scratch('chromium-profile'));
  try {
    const page = await openPage(context, 'alice');
    await page.setViewportSize({ width: 1000, height: 900 });
    await rememberByForm(page, 'I booked the Hotel Avenida in Lisbon for May.', 'Lovely, close to the old town.');
    await rememberByForm(page, 'My sister Ana lives in Porto and loves hiking.', 'Porto has great trails nearby.');
    const prompt = await recallByForm(page, 'Which hotel did I book in Lisbon?');
    assert.match(prompt, /Hotel Avenida/);
    assert.match(await page.textContent('#jspi'), /JavaScript Promise Integration: yes/);
    const rows = await page.locator('#audit tr').count();
    assert.ok(rows >= 3, `the audit trail shows ${rows} rows`);
    await page.screenshot({ path, fullPage: true });
    const png = readFileSync(path);
    assert.ok(statSync(path).size > 1000, `the screenshot ${path} is ${png.length} bytes`);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
    t.diagnostic(`screenshot: ${path}`);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('the page says so where the browser has no JavaScript Promise Integration', async () => {
  const context = await launch(scratch('chromium-profile'));
  try {
    const page = await context.newPage();
    // A browser without JSPI: no WebAssembly.Suspending.
    await page.addInitScript(() => delete WebAssembly.Suspending);
    await page.goto(`${await server}${PAGE}`);
    await page.waitForFunction(() => document.body.dataset.ready !== undefined, undefined, { timeout: 60_000 });
    assert.equal(await page.evaluate(() => document.body.dataset.ready), 'failed');
    assert.match(await page.textContent('#jspi'), /no JavaScript Promise Integration/);
    assert.match(await page.textContent('#status'), /Cannot open the memory/);
  } finally {
    await context.close();
  }
});

// The store itself against the in-memory one, on a seeded random run:
// binary keys in bytewise order (0x80 and up after 0x7f, a prefix before
// its extensions, the empty key first), ranges both ways with limits, and
// commits all or nothing (a failed precondition changes neither the keys
// nor the trail).
test('the IndexedDB store answers as the in-memory store does: bytewise key order, ranges, commits all or nothing', async () => {
  const context = await launch(scratch('chromium-profile'));
  try {
    const page = await openPage(context, 'store-check');
    const report = await page.evaluate(async () => {
      const { IndexedDbBackend } = await import('/src/backends/indexeddb.js');
      const { MemoryBackend } = await import('/src/backends/memory.js');
      const idb = await IndexedDbBackend.open('store-check');
      const memory = new MemoryBackend();
      // mulberry32, seeded: the same run every time.
      let seed = 7;
      const random = (n) => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) % n;
      };
      const BYTES = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff];
      const key = () => Uint8Array.from({ length: random(4) }, () => BYTES[random(BYTES.length)]);
      const show = (value) => JSON.stringify(value, (_k, v) => (v instanceof Uint8Array ? [...v] : v));
      const differences = [];
      const same = (what, a, b) => {
        if (show(a) !== show(b)) differences.push(`${what}: IndexedDB ${show(a)}, memory ${show(b)}`);
      };
      let conflicts = 0;
      for (let step = 0; step < 300; step++) {
        const choice = random(3);
        if (choice === 0) {
          const preconditions = [];
          for (let i = random(3); i > 0; i--) {
            const k = key();
            const held = memory.get(k);
            if (random(4) === 0) preconditions.push({ type: 'absent', key: k });
            else if (held !== undefined) preconditions.push({ type: 'holds', key: k, value: random(5) === 0 ? Uint8Array.of(9) : held });
          }
          const ops = [];
          for (let i = random(4); i > 0; i--) {
            ops.push(random(3) === 0 ? { type: 'delete', key: key() } : { type: 'put', key: key(), value: Uint8Array.of(step & 0xff, i) });
          }
          const rows = [{ at: step, agent_id: 'a', request_id: `r${step}`, operation: 'WRITE', source: null, record_type: null, outcome: 'ACCEPTED', stored_id: `${step}`, count: null, reason: null }];
          const committed = await idb.commit(preconditions, ops, rows);
          if (!committed) conflicts += 1;
          same(`commit ${step}`, committed, memory.commit(preconditions, ops, rows));
        } else if (choice === 1) {
          const [start, end, limit, descending] = [key(), key(), [1, 2, 5, 1000][random(4)], random(2) === 1];
          same(`scan ${step} ${show([start, end, limit, descending])}`, await idb.scan(start, end, limit, descending), memory.scan(start, end, limit, descending));
        } else {
          const keys = [key(), key(), key()];
          same(`getMany ${step}`, await idb.getMany(keys), memory.getMany(keys));
        }
      }
      same('the whole store', await idb.scan(new Uint8Array(), Uint8Array.of(0xff, 0xff, 0xff, 0xff), 100000, false), memory.scan(new Uint8Array(), Uint8Array.of(0xff, 0xff, 0xff, 0xff), 100000, false));
      // Each store numbers its rows its own way (`seq`); the rows are the same.
      const rows = (page) => page.map(({ seq, ...row }) => row);
      same('the trail', rows(await idb.auditPage(undefined, 1000)), rows(memory.auditPage(undefined, 1000)));
      const [idbFirst, memoryFirst] = [await idb.auditPage(undefined, 5), memory.auditPage(undefined, 5)];
      same('the newest 5 of the trail', rows(idbFirst), rows(memoryFirst));
      same('the next 5', rows(await idb.auditPage(idbFirst.at(-1).seq, 5)), rows(memory.auditPage(memoryFirst.at(-1).seq, 5)));
      const pairs = memory.pairs.length;
      await idb.close();
      return { differences, conflicts, pairs };
    });
    assert.deepEqual(report.differences, []);
    assert.ok(report.conflicts > 5 && report.pairs > 20, `the run had ${report.conflicts} failed preconditions and ${report.pairs} keys`);
  } finally {
    await context.close();
  }
});

// Every shared scenario (tests/scenarios), each line naming its rule in its
// note, on the JSPI build over an IndexedDB store in Chromium: the Node side
// runs the scenario, each call is made in the page. A scenario's agents share
// its one database here (a store holds any number of domains; the example
// page keeps one per database).
const scenarios = loadScenarios(fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url)));
let scenarioBrowser;
after(() => scenarioBrowser?.then((context) => context.close()).catch(() => {}));

/** A tab of one browser shared by the scenarios, on the package's origin. */
function scenarioPage() {
  scenarioBrowser ??= launch(scratch('chromium-profile'));
  return scenarioBrowser.then(async (context) => {
    const page = context.pages()[0] ?? (await context.newPage());
    if (!page.url().startsWith(await server)) await page.goto(`${await server}/examples/browser/index.html?agent=scenario-runner`);
    return page;
  });
}

test('the shared scenarios are there', () => assert.ok(scenarios.length >= 8, `${scenarios.length} scenarios`));

for (const scenario of scenarios) {
  test(`indexeddb in Chromium: ${scenario.name}`, async (t) => {
    const embedder = embedderUrl() === undefined ? undefined : EMBEDDER_PATH;
    if (usesEmbedder(scenario) && embedder === undefined) return t.skip(NO_EMBEDDER);
    const page = await scenarioPage();
    await page.evaluate(async ({ name, embedder }) => {
      const { IndexedDbBackend } = await import('/src/backends/indexeddb.js');
      const { libraryHost, testEmbedders } = await import('/test/node-host.js');
      const backend = await IndexedDbBackend.open(`scenario:${name}`);
      // The tests' embedder, fetched from the page, on its own origin.
      const embedders = embedder === undefined ? {} : await testEmbedders(new URL(embedder, location.origin).href);
      globalThis.scenarioHost = { backend, host: libraryHost(backend, { async: true, embedders }) };
    }, { name: scenario.name, embedder });
    try {
      const host = {
        async call(line) {
          const answer = await page.evaluate(async (line) => {
            try {
              return { lines: await globalThis.scenarioHost.host.call(line) };
            } catch (error) {
              return { error: String(error?.message ?? error) };
            }
          }, line);
          if (answer.error !== undefined) throw new Error(answer.error);
          return answer.lines;
        },
      };
      const { ran } = await runScenario(scenario, host);
      assert.ok(ran > 0);
    } finally {
      await page.evaluate(() => globalThis.scenarioHost.backend.close());
    }
  });
}
