// `npm run build`: transpiles the components with jco into gen/ (one
// folder each), for instantiation with imports of each domain's own
// (`--instantiation async`; `--multi-memory`: the copies between the
// composed components' memories are wasm, not a JS call a byte), and writes
// gen/sqlite-schema.js from the schema every host runs (host/store/src,
// for the Durable Object store) and gen/limits.js from the limits' defaults
// of every host (limits.json, of engram-store), put beside the components
// by the Rust build. The
// components are taken from ENGRAM_JS_WASM_DIR, by default from the folder
// `cargo run -q -p engram-js-components` builds them in and prints.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachedMemoryViews, debugLogOnce, lazyInlineModules } from './lazy-modules.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const from = process.env.ENGRAM_JS_WASM_DIR
  ? resolve(root, process.env.ENGRAM_JS_WASM_DIR)
  : // Builds them, and learns the folder cargo built them in.
    execFileSync('cargo', ['run', '-q', '--locked', '-p', 'engram-js-components'], {
      cwd: resolve(root, '..', '..'),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }).trim();
const gen = join(root, 'gen');
const jco = join(root, 'node_modules', '@bytecodealliance', 'jco', 'dist', 'jco.js');

/** The components and what they are called in gen/: the engine with the
 * JSON layer and the host layer, the same with the default summarizer and
 * ranker inside, those two, and the default tokenizer (loaded when a token
 * budget first needs it), and the HTTP API's decisions (the Worker's). */
const COMPONENTS = ['engram-host', 'engram-host-builtin', 'engram-algorithms', 'engram-tokenizer', 'engram-http-api'];

/** The components that also get a JSPI build (`open(agent, {async: true})`). */
const JSPI = new Set(['engram-host', 'engram-host-builtin']);

/** What a JSPI build may wait on: the store's calls and the algorithms. */
const ASYNC_IMPORTS = [
  ...['get-many', 'scan', 'commit', 'audit-rows'].map((f) => `engram:adapter/store@0.1.0#${f}`),
  'engram:memory/summarizer@0.2.0#summarize',
  'engram:memory/ranker@0.2.0#rank',
  'engram:memory/tokenizer@0.2.0#count-tokens',
  'engram:memory/embedder@0.2.0#embed',
];

/** The calls of a JSPI build that answer promises: each that can reach the store or an algorithm. */
const ASYNC_EXPORTS = [
  ...['write', 'read', 'call', 'remember', 'recall', 'history', 'as-of', 'list', 'entities', 'relationships', 'traverse', 'export', 'import', 'expire', 'run-cycle'].map((f) => `engram:js/calls@0.1.0#${f}`),
  ...['open', 'close', 'forget', 'break-lock', 'domains', 'audit'].map((f) => `engram:adapter/domain@0.1.0#${f}`),
];

/** A file the Rust build put beside the components. */
function built(name) {
  const file = join(from, name);
  if (!existsSync(file)) {
    console.error(`build: ${file} is missing: build the components first, or set ENGRAM_JS_WASM_DIR`);
    process.exit(1);
  }
  return file;
}

for (const name of COMPONENTS) built(`${name}.wasm`);
mkdirSync(gen, { recursive: true });
for (const name of COMPONENTS) {
  const out = join(gen, name);
  rmSync(out, { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [jco, 'transpile', join(from, `${name}.wasm`), '--instantiation', 'async', '--multi-memory', '--name', name, '--quiet', '-o', out],
    { stdio: 'inherit' },
  );
  const code = join(out, `${name}.js`);
  writeFileSync(code, cachedMemoryViews(debugLogOnce(lazyInlineModules(readFileSync(code, 'utf8')))));
  console.log(`build: ${name} -> gen/${name}/`);
  if (JSPI.has(name)) jspi(name, out);
}

/**
 * `code` with every function that awaits made `async`: jco 1.35.0's JSPI
 * mode writes a resource's static function (`Turn.begin = function
 * begin(…)`) with an `await` in a function that is not async.
 * @param {string} code
 */
function asyncWhereAwaited(code) {
  return code.replace(/= function (\w+)\(([^)]*)\) \{([\s\S]*?)(?=\n {2}[^ \n])/g, (whole, name, args, body) =>
    /\bawait\b/.test(body) ? `= async function ${name}(${args}) {${body}` : whole,
  );
}

/**
 * `code` (a JSPI build, after {@link lazyInlineModules}) with each helper
 * core module jco compiles from inline bytes written beside the core
 * modules (`gen/<name>/<name>.jspi-helper<n>.wasm`) and loaded with them,
 * through the instance's core module loader, before the instance is made:
 * the JSPI build makes every instance with one
 * (`_conditionalSuspending…`), and a runtime that compiles no WebAssembly
 * from bytes (Cloudflare Workers) gets it compiled with the rest
 * (worker/modules.js).
 * @param {string} code
 * @param {string} name
 * @param {string} out the component's folder in gen/
 */
function helpersAsCoreModules(code, name, out) {
  const inline = /let (\w+)__compiled;\nconst \1__compile = \(\) => \1__compiled \?\?= new WebAssembly\.Module\(new Uint8Array\(\[([^\]]*)\]\)\);/g;
  const loads = [];
  code = code.replace(inline, (_whole, helper, bytes) => {
    const file = `${name}.jspi-helper${loads.length + 1}.wasm`;
    writeFileSync(join(out, file), Uint8Array.from(bytes.split(',').map((b) => b.trim()).filter((b) => b !== '').map(Number)));
    loads.push(`${helper}__compiled = yield getCoreModule('${file}');`);
    return `let ${helper}__compiled;\nconst ${helper}__compile = () => ${helper}__compiled;`;
  });
  const anchor = 'let gen= (function* _initGenerator () {';
  if (!code.includes(anchor)) {
    throw new Error('the generated code has no `_initGenerator` of the form jco 1.35 writes: update scripts/build.js');
  }
  return code.replace(anchor, `${anchor}\n${loads.join('\n')}`);
}

/**
 * The JSPI build of `name` (`--async-mode jspi`) beside its synchronous
 * one: `gen/<name>/<name>.jspi.js`, over the same core modules (the build
 * stops if they differ). The store's calls and the algorithms may answer
 * promises; every call of the JSON layer and of the host layer that can
 * reach the store answers one.
 */
function jspi(name, out) {
  const tmp = join(gen, `.${name}-jspi`);
  rmSync(tmp, { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [
      jco, 'transpile', join(from, `${name}.wasm`), '--instantiation', 'async', '--multi-memory', '--name', name, '--quiet', '-o', tmp,
      '--async-mode', 'jspi',
      '--async-imports', ...ASYNC_IMPORTS,
      '--async-exports', ...ASYNC_EXPORTS,
    ],
    { stdio: 'inherit' },
  );
  for (const file of readdirSync(tmp).filter((f) => f.endsWith('.wasm'))) {
    if (!readFileSync(join(tmp, file)).equals(readFileSync(join(out, file)))) {
      console.error(`build: the JSPI build of ${name} has another ${file}`);
      process.exit(1);
    }
  }
  const code = asyncWhereAwaited(readFileSync(join(tmp, `${name}.js`), 'utf8'));
  const file = join(out, `${name}.jspi.js`);
  writeFileSync(file, cachedMemoryViews(debugLogOnce(helpersAsCoreModules(lazyInlineModules(code), name, out))));
  rmSync(tmp, { recursive: true, force: true });
  // The JSPI build must at least parse: jco's JSPI mode is experimental.
  execFileSync(process.execPath, ['--check', file], { stdio: 'inherit' });
  console.log(`build: ${name} (JSPI) -> gen/${name}/${name}.jspi.js`);
}

// The schema's statements, version by version (the Durable Object store
// keeps its SQLite in the shared format): the text after each line
// `-- version N`, split after each `;` that ends a line.
const versions = readFileSync(built('sqlite-schema.sql'), 'utf8')
  .split(/^-- version /m)
  .slice(1)
  .map((part) => ({
    version: Number.parseInt(part, 10),
    statements: part
      .slice(part.indexOf('\n') + 1)
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('--'))
      .join('\n')
      .split(/;\s*$/m)
      .map((statement) => statement.trim())
      .filter((statement) => statement.length > 0),
  }));
writeFileSync(
  join(gen, 'sqlite-schema.js'),
  '// Written by scripts/build.js from sqlite-schema.sql (host/store/src): do not edit.\n\n' +
    '/** The statements of each version of the SQLite schema, oldest first. */\n' +
    `export const SCHEMA_VERSIONS = Object.freeze(${JSON.stringify(versions, null, 2)});\n`,
);
console.log('build: sqlite-schema.sql -> gen/sqlite-schema.js');

// The limits' defaults, named as JavaScript names them (`maxBatchOps` for
// `max_batch_ops`), and the audit trail's read bounds.
const {
  audit_limit: auditLimit,
  max_audit_limit: maxAuditLimit,
  endpoint_timeout_ms: endpointTimeoutMs,
  endpoint_batch: endpointBatch,
  ...defaults
} = JSON.parse(
  readFileSync(built('limits.json'), 'utf8'),
);
const limits = Object.fromEntries(
  Object.entries(defaults).map(([name, value]) => [name.replace(/_([a-z])/g, (_, c) => c.toUpperCase()), value]),
);
writeFileSync(
  join(gen, 'limits.js'),
  '// Written by scripts/build.js from limits.json (engram-store\'s Limits, engram-model\'s audit bounds): do not edit.\n\n' +
    '/** The limits of every host by default (docs/limits.md). */\n' +
    `export const DEFAULT_LIMITS = Object.freeze(${JSON.stringify(limits, null, 2)});\n\n` +
    '/** How many entries a read of the audit trail answers when not told, and at most. */\n' +
    `export const AUDIT_LIMIT = ${auditLimit};\nexport const MAX_AUDIT_LIMIT = ${maxAuditLimit};\n\n` +
    '/** An embeddings endpoint\'s bounds (every host\'s): how long one request may take, in ms, and how many texts it carries. */\n' +
    `export const ENDPOINT_TIMEOUT_MS = ${endpointTimeoutMs};\nexport const ENDPOINT_BATCH = ${endpointBatch};\n\n` +
    '/** How long a PostgreSQL store\'s connection waits by default, in ms (every host\'s). */\n' +
    `export const DEFAULT_POSTGRES_OPTIONS = Object.freeze(${readFileSync(built('postgres-defaults.json'), 'utf8').trim()});\n\n` +
    '/** The words every package says of a domain\'s state (engram-model\'s messages). */\n' +
    `export const MESSAGES = Object.freeze(${readFileSync(built('messages.json'), 'utf8').trim()});\n`,
);
console.log('build: limits.json, postgres-defaults.json, messages.json -> gen/limits.js');
