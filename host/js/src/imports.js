// The import object a jco-transpiled component is instantiated with.
//
// jco's quirk: the generated TypeScript declares the imports under the
// versioned interface name (`engram:memory/audit@0.2.0`), while the
// generated JavaScript of some versions reads them under the name without
// the version (`imports['engram:memory/audit']`). This is the one place
// that knows it: every interface is offered under both names.

/** The version of the `engram:memory` package, the engine's contract. */
export const MEMORY_VERSION = '0.2.0';

/** The version of the host's own packages (`engram:js`, `engram:adapter`). */
export const WIT_VERSION = '0.1.0';

/**
 * The version of the package an interface name belongs to.
 * @param {string} name
 */
function versionOf(name) {
  return name.startsWith('engram:memory/') ? MEMORY_VERSION : WIT_VERSION;
}

/**
 * The import object for a transpiled component: each interface of
 * `interfaces` (keyed by name, with or without `@version`) under its name
 * without the version and with it, the same object under both.
 * @param {Record<string, object>} interfaces
 * @param {string} [version]
 * @returns {Record<string, object>}
 */
export function componentImports(interfaces, version = undefined) {
  const imports = {};
  for (const [name, functions] of Object.entries(interfaces)) {
    const bare = name.replace(/@[^@/]*$/, '');
    imports[bare] = functions;
    imports[`${bare}@${version ?? versionOf(bare)}`] = functions;
  }
  return imports;
}

/**
 * An export of an instantiated component, found under the interface's
 * short name, its full name, or its versioned full name.
 * @param {Record<string, any>} exports
 * @param {string} name the full interface name without version, such as
 *   `engram:js/calls`
 * @param {string} [version]
 * @returns {any}
 */
export function componentExport(exports, name, version = versionOf(name)) {
  const short = name.replace(/^.*\//, '');
  const found = exports[`${name}@${version}`] ?? exports[name] ?? exports[short];
  if (found === undefined) {
    throw new Error(`the component exports no ${name}: it has ${Object.keys(exports).join(', ')}`);
  }
  return found;
}
