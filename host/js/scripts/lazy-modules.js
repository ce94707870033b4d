// A fix-up of the JavaScript jco generates, applied by scripts/build.js.

/**
 * jco 1.35 emits, inside `instantiate`, helper core modules compiled from
 * inline bytes (`const _xModule = new WebAssembly.Module(new
 * Uint8Array([...]))`) even when nothing uses them; a runtime that
 * compiles no WebAssembly from bytes (Cloudflare Workers) then cannot
 * instantiate at all. This compiles each such module when first used
 * instead.
 * @param {string} code the generated JavaScript
 * @returns {string}
 */
export function lazyInlineModules(code) {
  const declared = /const (\w+) = new WebAssembly\.Module\(/g;
  const names = [...code.matchAll(declared)].map((m) => m[1]);
  for (const name of names) {
    code = code.replace(`const ${name} = new WebAssembly.Module(`, `let ${name}__compiled;\nconst ${name}__compile = () => ${name}__compiled ??= new WebAssembly.Module(`);
    code = code.replace(new RegExp(`\\b${name}\\b(?!__)`, 'g'), `${name}__compile()`);
  }
  return code;
}

/**
 * jco 1.35's `_debugLog`, called several times on every call across the
 * component boundary, reads `process.env.JCO_DEBUG` each time: in Node a
 * lookup in the process environment, about a quarter of a call's time.
 * This reads it once, when the module loads (setting JCO_DEBUG still turns
 * the log on, for a process started with it).
 * @param {string} code the generated JavaScript
 * @returns {string}
 */
export function debugLogOnce(code) {
  const check = 'const _debugLog = (...args) => {\n    if (!globalThis?.process?.env?.JCO_DEBUG) { return; }';
  if (!code.includes(check)) {
    throw new Error('the generated code has no `_debugLog` of the form jco 1.35 writes: update scripts/lazy-modules.js');
  }
  return code.replace(
    check,
    'const _debugOn = Boolean(globalThis?.process?.env?.JCO_DEBUG);\n  const _debugLog = (...args) => {\n    if (!_debugOn) { return; }',
  );
}
