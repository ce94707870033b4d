// An agent's memory in a browser tab: the domain runs on the components'
// JSPI build (`open(agent, {async: true})`) over IndexedDB (one database
// per agent, `engram:<agent>`), so what it remembers survives a reload, and
// two tabs of the page may write it at once (they take turns by a Web
// Lock). Served as static files from host/js (no bundler): `?agent=` picks
// the agent, `alice` by default.

import { hasJspi, open } from '../../src/index.js';
import { openIndexedDb } from '../../src/backends/indexeddb.js';

/** The transpiled components' folder. */
const GEN = new URL('../../gen/', import.meta.url);

/**
 * Compiles a core module of a component over fetch: streaming where the
 * server says `application/wasm`, from the bytes otherwise.
 * @type {import('../../src/component.js').CoreModuleLoader}
 */
async function coreModule(component, file) {
  const response = await fetch(new URL(`${component}/${file}`, GEN));
  if (!response.ok) throw new Error(`${component}/${file}: HTTP ${response.status}`);
  if (response.headers.get('content-type')?.startsWith('application/wasm')) return WebAssembly.compileStreaming(response);
  return WebAssembly.compile(await response.arrayBuffer());
}

const $ = (id) => document.getElementById(id);
const agent = new URLSearchParams(location.search).get('agent') || 'alice';

/** Shows what the page is doing, or what failed. */
function status(text, failed = false) {
  $('status').textContent = text;
  $('status').className = failed ? 'failed' : '';
}

/** The domain's calls, one at a time (a domain's instance runs one call at once). */
let queue = Promise.resolve();
function serially(f) {
  const run = queue.then(f);
  queue = run.catch(() => {});
  return run;
}

/** Opens the domain, or says why it cannot be. */
async function start() {
  $('agent').textContent = agent;
  $('database').textContent = `engram:${agent}`;
  if (!hasJspi()) {
    $('jspi').textContent =
      'This browser has no JavaScript Promise Integration (WebAssembly.Suspending), which an IndexedDB store needs: use a current Chromium or Firefox.';
    $('jspi').className = 'failed';
    throw new Error('no JavaScript Promise Integration');
  }
  $('jspi').textContent = 'JavaScript Promise Integration: yes';
  const store = await openIndexedDb(agent);
  return open(agent, { async: true, store, coreModule });
}

const ready = start();

/** Shows the newest entries of the domain's audit trail. */
async function showAudit() {
  const domain = await ready;
  const lines = await domain.audit({ limit: 12 });
  const rows = lines.reverse().map((line) => {
    const tr = document.createElement('tr');
    const detail = line.stored_id ?? (line.count !== undefined ? `${line.count}` : (line.reason ?? ''));
    for (const text of [new Date(line.at).toISOString().slice(11, 23), line.operation, line.outcome, line.request_id, detail]) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  });
  $('audit').replaceChildren(...rows);
}

/**
 * Remembers a turn: answers `{request_id, committed}`.
 * @param {string} message
 * @param {string} response
 * @param {object} [options]
 */
async function remember(message, response, options) {
  const domain = await ready;
  return serially(() => domain.remember(message, response, options));
}

/**
 * The memories for a question, and the prompt made of them.
 * @param {string} question
 * @param {object} [options]
 */
async function recall(question, options) {
  const domain = await ready;
  return serially(() => domain.recall(question, options));
}

/** A read request (`{record_type, selector, request_id}`): `{records}`. */
async function read(request) {
  const domain = await ready;
  return serially(() => domain.read(request));
}

/** The domain's audit trail (`{operation?, outcome?, limit?}`), oldest first. */
async function audit(query) {
  const domain = await ready;
  return domain.audit(query);
}

$('remember-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    status('Remembering…');
    const { committed } = await remember($('message').value, $('response').value);
    status(`Remembered: ${committed.join(', ')}`);
    await showAudit();
  } catch (error) {
    status(`Remember failed: ${error.message}`, true);
  }
});

$('recall-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    status('Recalling…');
    const recalled = await recall($('question').value);
    $('memories').replaceChildren(
      ...recalled.memories.map((memory) => {
        const li = document.createElement('li');
        li.textContent = memory.summary;
        return li;
      }),
    );
    $('prompt').textContent = recalled.prompt;
    status(`Recalled ${recalled.memories.length} ${recalled.memories.length === 1 ? 'memory' : 'memories'}`);
    await showAudit();
  } catch (error) {
    status(`Recall failed: ${error.message}`, true);
  }
});

ready.then(
  async () => {
    await showAudit();
    status('Ready');
    document.body.dataset.ready = 'yes';
  },
  (error) => {
    status(`Cannot open the memory: ${error.message}`, true);
    document.body.dataset.ready = 'failed';
  },
);

// For scripts driving the page (the browser test).
globalThis.engramExample = { agent, ready, remember, recall, read, audit, showAudit };
