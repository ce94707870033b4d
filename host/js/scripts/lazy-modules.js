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

/**
 * jco 1.35 reads and writes the memory of another component instance (the
 * fused adapters between the components of a composition, without
 * multi-memory) one value at a time, each through `new DataView(
 * <instance>.memory.buffer)`: a view made and dropped per byte copied, which
 * leaves the garbage collector most of a call's time. This keeps one view
 * per memory instead, made again only when the memory grew (its buffer is
 * then another).
 * @param {string} code the generated JavaScript
 * @returns {string}
 */
export function cachedMemoryViews(code) {
  const anchor = 'export function instantiate(';
  if (!code.includes(anchor)) {
    throw new Error('the generated code has no `instantiate` of the form jco 1.35 writes: update scripts/lazy-modules.js');
  }
  const helper = [
    'const _memoryViews = new WeakMap();',
    'function _memoryView(memory) {',
    '  let view = _memoryViews.get(memory);',
    '  if (view === undefined || view.buffer !== memory.buffer) _memoryViews.set(memory, (view = new DataView(memory.buffer)));',
    '  return view;',
    '}',
    '',
  ].join('\n');
  return code
    .replace(/new DataView\(([\w$.]+)\.memory\.buffer\)/g, '_memoryView($1.memory)')
    .replace(anchor, `${helper}\n${anchor}`);
}
