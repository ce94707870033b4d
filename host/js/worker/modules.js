// The transpiled components (gen/, `npm run build`) as a Worker gets them.
// The Workers runtime compiles no WebAssembly from bytes: every `.wasm`
// file of gen/ is uploaded with the Worker as a compiled module (a
// `CompiledWasm` module; in wrangler, a `rules` entry of type
// "CompiledWasm"), and importing it answers its `WebAssembly.Module`.
// Everything is imported here statically, by its path (a Worker has no
// `import.meta.url` to find gen/ by, and a bundler follows only static
// paths): when a new jco writes other core modules, this list changes with
// it.

import { instantiate as engramHost } from '../gen/engram-host/engram-host.js';
import { instantiate as engramHostBuiltin } from '../gen/engram-host-builtin/engram-host-builtin.js';
import { instantiate as engramHostJspi } from '../gen/engram-host/engram-host.jspi.js';
import { instantiate as engramHostBuiltinJspi } from '../gen/engram-host-builtin/engram-host-builtin.jspi.js';
import { instantiate as engramAlgorithms } from '../gen/engram-algorithms/engram-algorithms.js';
import { instantiate as engramTokenizer } from '../gen/engram-tokenizer/engram-tokenizer.js';
import { instantiate as engramHttpApi } from '../gen/engram-http-api/engram-http-api.js';
import engramHostCore1 from '../gen/engram-host/engram-host.core.wasm';
import engramHostCore2 from '../gen/engram-host/engram-host.core2.wasm';
import engramHostCore3 from '../gen/engram-host/engram-host.core3.wasm';
import engramHostCore4 from '../gen/engram-host/engram-host.core4.wasm';
import engramHostCore5 from '../gen/engram-host/engram-host.core5.wasm';
import engramHostCore6 from '../gen/engram-host/engram-host.core6.wasm';
import engramHostCore7 from '../gen/engram-host/engram-host.core7.wasm';
import engramHostCore8 from '../gen/engram-host/engram-host.core8.wasm';
import engramHostCore9 from '../gen/engram-host/engram-host.core9.wasm';
import engramHostCore10 from '../gen/engram-host/engram-host.core10.wasm';
import engramHostCore11 from '../gen/engram-host/engram-host.core11.wasm';
import engramHostCore12 from '../gen/engram-host/engram-host.core12.wasm';
import engramHostJspiHelper1 from '../gen/engram-host/engram-host.jspi-helper1.wasm';
import engramHostBuiltinCore1 from '../gen/engram-host-builtin/engram-host-builtin.core.wasm';
import engramHostBuiltinCore2 from '../gen/engram-host-builtin/engram-host-builtin.core2.wasm';
import engramHostBuiltinCore3 from '../gen/engram-host-builtin/engram-host-builtin.core3.wasm';
import engramHostBuiltinCore4 from '../gen/engram-host-builtin/engram-host-builtin.core4.wasm';
import engramHostBuiltinCore5 from '../gen/engram-host-builtin/engram-host-builtin.core5.wasm';
import engramHostBuiltinCore6 from '../gen/engram-host-builtin/engram-host-builtin.core6.wasm';
import engramHostBuiltinCore7 from '../gen/engram-host-builtin/engram-host-builtin.core7.wasm';
import engramHostBuiltinCore8 from '../gen/engram-host-builtin/engram-host-builtin.core8.wasm';
import engramHostBuiltinCore9 from '../gen/engram-host-builtin/engram-host-builtin.core9.wasm';
import engramHostBuiltinCore10 from '../gen/engram-host-builtin/engram-host-builtin.core10.wasm';
import engramHostBuiltinCore11 from '../gen/engram-host-builtin/engram-host-builtin.core11.wasm';
import engramHostBuiltinCore12 from '../gen/engram-host-builtin/engram-host-builtin.core12.wasm';
import engramHostBuiltinCore13 from '../gen/engram-host-builtin/engram-host-builtin.core13.wasm';
import engramHostBuiltinJspiHelper1 from '../gen/engram-host-builtin/engram-host-builtin.jspi-helper1.wasm';
import engramAlgorithmsCore1 from '../gen/engram-algorithms/engram-algorithms.core.wasm';
import engramTokenizerCore1 from '../gen/engram-tokenizer/engram-tokenizer.core.wasm';
import engramHttpApiCore1 from '../gen/engram-http-api/engram-http-api.core.wasm';

/**
 * The generated `instantiate` of each component, by its name in gen/; of
 * the JSPI build of the engine's (`<name>.jspi`, over the same core
 * modules), by that name: what a domain with an embedder, which awaits its
 * endpoint, runs on.
 * @type {Readonly<Record<string, Function>>}
 */
export const instantiate = Object.freeze({
  'engram-host': engramHost,
  'engram-host-builtin': engramHostBuiltin,
  'engram-host.jspi': engramHostJspi,
  'engram-host-builtin.jspi': engramHostBuiltinJspi,
  'engram-algorithms': engramAlgorithms,
  'engram-tokenizer': engramTokenizer,
  'engram-http-api': engramHttpApi,
});

/**
 * The core modules of each component, by file name: every `.wasm` file jco
 * wrote into gen/<component>/, and the helper its JSPI build makes its
 * instances with (`<component>.jspi-helper1.wasm`, scripts/build.js)
 * (test/worker.test.js checks that none is missing).
 * @type {Readonly<Record<string, Readonly<Record<string, WebAssembly.Module>>>>}
 */
export const CORE_MODULES = Object.freeze({
  'engram-host': Object.freeze({
    'engram-host.core.wasm': engramHostCore1,
    'engram-host.core2.wasm': engramHostCore2,
    'engram-host.core3.wasm': engramHostCore3,
    'engram-host.core4.wasm': engramHostCore4,
    'engram-host.core5.wasm': engramHostCore5,
    'engram-host.core6.wasm': engramHostCore6,
    'engram-host.core7.wasm': engramHostCore7,
    'engram-host.core8.wasm': engramHostCore8,
    'engram-host.core9.wasm': engramHostCore9,
    'engram-host.core10.wasm': engramHostCore10,
    'engram-host.core11.wasm': engramHostCore11,
    'engram-host.core12.wasm': engramHostCore12,
    'engram-host.jspi-helper1.wasm': engramHostJspiHelper1,
  }),
  'engram-host-builtin': Object.freeze({
    'engram-host-builtin.core.wasm': engramHostBuiltinCore1,
    'engram-host-builtin.core2.wasm': engramHostBuiltinCore2,
    'engram-host-builtin.core3.wasm': engramHostBuiltinCore3,
    'engram-host-builtin.core4.wasm': engramHostBuiltinCore4,
    'engram-host-builtin.core5.wasm': engramHostBuiltinCore5,
    'engram-host-builtin.core6.wasm': engramHostBuiltinCore6,
    'engram-host-builtin.core7.wasm': engramHostBuiltinCore7,
    'engram-host-builtin.core8.wasm': engramHostBuiltinCore8,
    'engram-host-builtin.core9.wasm': engramHostBuiltinCore9,
    'engram-host-builtin.core10.wasm': engramHostBuiltinCore10,
    'engram-host-builtin.core11.wasm': engramHostBuiltinCore11,
    'engram-host-builtin.core12.wasm': engramHostBuiltinCore12,
    'engram-host-builtin.core13.wasm': engramHostBuiltinCore13,
    'engram-host-builtin.jspi-helper1.wasm': engramHostBuiltinJspiHelper1,
  }),
  'engram-algorithms': Object.freeze({
    'engram-algorithms.core.wasm': engramAlgorithmsCore1,
  }),
  'engram-tokenizer': Object.freeze({
    'engram-tokenizer.core.wasm': engramTokenizerCore1,
  }),
  'engram-http-api': Object.freeze({
    'engram-http-api.core.wasm': engramHttpApiCore1,
  }),
});

/**
 * The compiled core module `file` of the transpiled component `component`
 * (gen/<component>/<file>): the `coreModule` option of `open`.
 * @param {string} component the component's name in gen/ (`engram-host`,
 *   `engram-host-builtin`, `engram-algorithms`, `engram-tokenizer`,
 *   `engram-http-api`)
 * @param {string} file the core module's file name (`engram-host.core.wasm`)
 * @returns {WebAssembly.Module}
 */
export function coreModule(component, file) {
  const module = CORE_MODULES[component]?.[file];
  if (module === undefined) {
    throw new Error(`gen/${component}/${file} is not among the Worker's core modules (worker/modules.js): rebuilt with another jco?`);
  }
  return module;
}
