// The transpiled components (gen/, `npm run build`) as a Worker gets them.
// The Workers runtime compiles no WebAssembly from bytes: every `.wasm`
// file of gen/ is uploaded with the Worker as a compiled module (a
// `CompiledWasm` module; in wrangler, a `rules` entry of type
// "CompiledWasm"), and importing it answers its `WebAssembly.Module`.
// Everything is imported here statically, by its path (a Worker has no
// `import.meta.url` to find gen/ by, and a bundler follows only static
// paths): when a new jco writes other core modules, this list changes with
// it.

import { instantiate as engramJs } from '../gen/engram-js/engram-js.js';
import { instantiate as engramAlgorithms } from '../gen/engram-algorithms/engram-algorithms.js';
import engramJsCore1 from '../gen/engram-js/engram-js.core.wasm';
import engramJsCore2 from '../gen/engram-js/engram-js.core2.wasm';
import engramJsCore3 from '../gen/engram-js/engram-js.core3.wasm';
import engramJsCore4 from '../gen/engram-js/engram-js.core4.wasm';
import engramJsCore5 from '../gen/engram-js/engram-js.core5.wasm';
import engramJsCore6 from '../gen/engram-js/engram-js.core6.wasm';
import engramJsCore7 from '../gen/engram-js/engram-js.core7.wasm';
import engramAlgorithmsCore1 from '../gen/engram-algorithms/engram-algorithms.core.wasm';

/**
 * The generated `instantiate` of each component, by its name in gen/.
 * @type {Readonly<Record<string, Function>>}
 */
export const instantiate = Object.freeze({
  'engram-js': engramJs,
  'engram-algorithms': engramAlgorithms,
});

/**
 * The core modules of each component, by file name: every `.wasm` file jco
 * wrote into gen/<component>/ (test/worker.test.js checks that none is
 * missing).
 * @type {Readonly<Record<string, Readonly<Record<string, WebAssembly.Module>>>>}
 */
export const CORE_MODULES = Object.freeze({
  'engram-js': Object.freeze({
    'engram-js.core.wasm': engramJsCore1,
    'engram-js.core2.wasm': engramJsCore2,
    'engram-js.core3.wasm': engramJsCore3,
    'engram-js.core4.wasm': engramJsCore4,
    'engram-js.core5.wasm': engramJsCore5,
    'engram-js.core6.wasm': engramJsCore6,
    'engram-js.core7.wasm': engramJsCore7,
  }),
  'engram-algorithms': Object.freeze({
    'engram-algorithms.core.wasm': engramAlgorithmsCore1,
  }),
});

/**
 * The compiled core module `file` of the transpiled component `component`
 * (gen/<component>/<file>): the `coreModule` option of `open`.
 * @param {string} component the component's name in gen/ (`engram-js`,
 *   `engram-algorithms`)
 * @param {string} file the core module's file name (`engram-js.core.wasm`)
 * @returns {WebAssembly.Module}
 */
export function coreModule(component, file) {
  const module = CORE_MODULES[component]?.[file];
  if (module === undefined) {
    throw new Error(`gen/${component}/${file} is not among the Worker's core modules (worker/modules.js): rebuilt with another jco?`);
  }
  return module;
}
