// Whether `npm run build` has transpiled the components into gen/: the
// tests that run the engine need it.
import { existsSync } from 'node:fs';

/** Why the engine's tests cannot run, or undefined when they can. */
export const notBuilt = ['engram-host', 'engram-host-builtin', 'engram-algorithms', 'engram-tokenizer'].every((name) =>
  existsSync(new URL(`../gen/${name}/${name}.js`, import.meta.url)),
)
  ? undefined
  : 'the components are not transpiled: run `npm run build` first';
