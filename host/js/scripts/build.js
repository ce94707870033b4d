// `npm run build`: transpiles the components with jco into gen/ (one
// folder each), for instantiation with imports of each domain's own
// (`--instantiation async`), and writes gen/sqlite-schema.js from the
// SQLite schema every host runs (host/store/src/sqlite-schema.sql, put
// beside the components by the Rust build). The components are taken from
// ENGRAM_JS_WASM_DIR, by default ../../target/js relative to host/js,
// where the Rust build puts them.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { debugLogOnce, lazyInlineModules } from './lazy-modules.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const from = resolve(root, process.env.ENGRAM_JS_WASM_DIR ?? join('..', '..', 'target', 'js'));
const gen = join(root, 'gen');
const jco = join(root, 'node_modules', '@bytecodealliance', 'jco', 'dist', 'jco.js');

/** The components and what they are called in gen/. */
const COMPONENTS = ['engram-js', 'engram-algorithms'];

for (const name of COMPONENTS) {
  const wasm = join(from, `${name}.wasm`);
  if (!existsSync(wasm)) {
    console.error(`build: ${wasm} is missing: build the components first, or set ENGRAM_JS_WASM_DIR`);
    process.exit(1);
  }
}
mkdirSync(gen, { recursive: true });
for (const name of COMPONENTS) {
  const out = join(gen, name);
  rmSync(out, { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [jco, 'transpile', join(from, `${name}.wasm`), '--instantiation', 'async', '--name', name, '--quiet', '-o', out],
    { stdio: 'inherit' },
  );
  const code = join(out, `${name}.js`);
  writeFileSync(code, debugLogOnce(lazyInlineModules(readFileSync(code, 'utf8'))));
  console.log(`build: ${name} -> gen/${name}/`);
}

// The schema's statements, version by version: the text after each line
// `-- version N`, split after each `;` that ends a line.
const schemaFile = join(from, 'sqlite-schema.sql');
if (!existsSync(schemaFile)) {
  console.error(`build: ${schemaFile} is missing: build the components first, or set ENGRAM_JS_WASM_DIR`);
  process.exit(1);
}
const versions = readFileSync(schemaFile, 'utf8')
  .split(/^-- version /m)
  .slice(1)
  .map((part) => ({
    version: Number.parseInt(part, 10),
    statements: part
      .slice(part.indexOf('\n') + 1)
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
