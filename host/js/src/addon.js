// The Node-API addon (the Rust host, host/node): loaded from the package of
// this platform (`engram-memory-linux-x64-gnu` and its siblings, which npm
// installs with engram-memory as optional dependencies, each only where it
// runs), or from a build beside the package (`cargo run -p engram-dist`, or
// the tests, put `engram-memory.<platform>.node` in the package's folder).

import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * The platform's name as the addon packages are named: `linux-x64-gnu`,
 * `linux-arm64-musl`, `darwin-arm64`, `win32-x64-msvc`.
 * @returns {string}
 */
export function platform() {
  const { platform: os, arch } = process;
  if (os === 'linux') return `${os}-${arch}-${glibc() ? 'gnu' : 'musl'}`;
  if (os === 'win32') return `${os}-${arch}-msvc`;
  return `${os}-${arch}`;
}

/** Whether this Linux's C library is glibc (what Node's report says of it), not musl. */
function glibc() {
  return Boolean(process.report?.getReport?.()?.header?.glibcVersionRuntime);
}

let loaded;

/**
 * The addon's exports (`NativeStore`, `NativeDomain`, `main`), loaded once.
 * @returns {any}
 */
export function addon() {
  if (loaded !== undefined) return loaded;
  const name = platform();
  const tried = [];
  for (const place of [`../engram-memory.${name}.node`, `engram-memory-${name}`]) {
    try {
      loaded = require(place);
      return loaded;
    } catch (error) {
      if (error?.code !== 'MODULE_NOT_FOUND' && !String(error?.message).includes(place)) throw error;
      tried.push(place);
    }
  }
  throw new Error(
    `engram-memory has no native addon for ${name}: install engram-memory-${name} beside engram-memory ` +
      `(npm installs it with engram-memory where it runs), or build it from a checkout: cargo run -p engram-dist`,
  );
}
