// Loading a component that jco transpiled at build time (`npm run build`,
// `--instantiation async`) into gen/<name>/: its core modules are compiled
// once per process, then every instance is made synchronously, each with
// imports of its own.

/**
 * Compiles a core module of a transpiled component.
 * @callback CoreModuleLoader
 * @param {string} component the component's name (`engram-host`,
 *   `engram-host-builtin`, `engram-algorithms`, `engram-tokenizer`)
 * @param {string} file the core module's file name in gen/<component>/
 * @returns {WebAssembly.Module | Promise<WebAssembly.Module>}
 */

/** The generated code's folder. */
const gen = () => new URL('../gen/', import.meta.url);

/** @type {CoreModuleLoader} */
async function defaultCoreModule(component, file) {
  const url = new URL(`${component}/${file}`, gen());
  if (url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return WebAssembly.compile(await readFile(url));
  }
  return WebAssembly.compileStreaming(fetch(url));
}

/**
 * A transpiled component, ready to instantiate.
 */
export class ComponentLoader {
  /**
   * @param {string} name the component's name in gen/
   * @param {object} [options]
   * @param {CoreModuleLoader} [options.coreModule] how a core module is
   *   compiled; from gen/ by default (the file system under Node, fetch
   *   elsewhere)
   * @param {(imports: object) => any} [options.instantiate] the
   *   generated `instantiate`, when the caller imported it itself (as a
   *   bundler or a Worker must)
   * @param {boolean} [options.jspi] the JSPI build (`<name>.jspi.js`,
   *   over the same core modules): imports may answer promises, exports do
   */
  constructor(name, options = {}) {
    this.name = name;
    this.jspi = options.jspi ?? false;
    this.coreModule = options.coreModule ?? defaultCoreModule;
    this.generated = options.instantiate;
    /** @type {Map<string, WebAssembly.Module>} */
    this.modules = new Map();
    /** @type {CoreModuleLoader | undefined} a loader that answers at once, where the default one is async */
    this.coreModuleNow = undefined;
  }

  /**
   * Loads the generated code (not its core modules), so that {@link now}
   * can make the first instance without waiting; under Node, with the
   * default loader, also what reads a core module's file at once.
   * @returns {Promise<void>}
   */
  async prepare() {
    if (this.generated === undefined) {
      const url = new URL(`${this.name}/${this.name}${this.jspi ? '.jspi' : ''}.js`, gen());
      const generated = await import(url.href).catch((error) => {
        throw new Error(
          `the transpiled ${this.name} component is missing (${url.pathname}): run \`npm run build\` (${error.message})`,
        );
      });
      this.generated = generated.instantiate;
    }
    if (this.coreModule === defaultCoreModule && gen().protocol === 'file:') {
      const { readFileSync } = await import('node:fs');
      this.coreModuleNow = (component, file) =>
        new WebAssembly.Module(readFileSync(new URL(`${component}/${file}`, gen())));
    }
  }

  /**
   * The first instance: loads the generated code and compiles its core
   * modules.
   * @param {object} imports
   * @returns {Promise<any>} the component's exports
   */
  async first(imports) {
    await this.prepare();
    const load = async (file) => {
      let module = this.modules.get(file);
      if (module === undefined) {
        module = await this.coreModule(this.name, file);
        this.modules.set(file, module);
      }
      return module;
    };
    return this.generated(load, imports, WebAssembly.instantiate);
  }

  /**
   * An instance made at once, its core modules compiled now if they were
   * not yet (after {@link prepare}): the loader must then answer a
   * `WebAssembly.Module`, not a promise of one.
   * @param {object} imports
   * @returns {any} the component's exports
   */
  now(imports) {
    if (this.generated === undefined) throw new Error(`${this.name}: prepare() was not awaited`);
    const load = (file) => {
      let module = this.modules.get(file);
      if (module === undefined) {
        module = (this.coreModuleNow ?? this.coreModule)(this.name, file);
        if (!(module instanceof WebAssembly.Module)) {
          throw new Error(
            `${this.name}: loaded on first use in a domain without {async: true}, its core module ${file} must be compiled at once: give a coreModule that answers a WebAssembly.Module, or open with {async: true}`,
          );
        }
        this.modules.set(file, module);
      }
      return module;
    };
    return this.#instantiate(load, imports, false);
  }

  /**
   * Another instance, made from the modules compiled by {@link first}:
   * synchronously, or (`async`, the JSPI build) maybe as a promise.
   * @param {object} imports
   * @param {boolean} [async]
   * @returns {any} the component's exports
   */
  again(imports, async = false) {
    const load = (file) => {
      const module = this.modules.get(file);
      if (module === undefined) throw new Error(`${this.name}: the core module ${file} was not compiled`);
      return module;
    };
    return this.#instantiate(load, imports, async);
  }

  /**
   * An instance from the generated code, its core modules from `load`,
   * made synchronously: a promise only where `async` allows one.
   */
  #instantiate(load, imports, async) {
    const exports = this.generated(load, imports, (module, i) => new WebAssembly.Instance(module, i));
    if (exports instanceof Promise && !async) throw new Error(`${this.name}: instantiation did not finish at once`);
    return exports;
  }
}
