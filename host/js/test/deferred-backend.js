// A backend that answers every call with a promise, settled on a later turn
// of the event loop, over a synchronous one: the shape of a store whose I/O
// is asynchronous (a network database, IndexedDB), for a domain opened with
// `{async: true}`. What it does is the inner backend's, done when the
// promise settles, not when the call is made.

/** The next turn of the event loop: `setImmediate` where there is one (Node). */
const later = globalThis.setImmediate ?? ((f) => setTimeout(f, 0));

/**
 * @implements {import('../src/backend.js').Backend}
 */
export class DeferredBackend {
  /** @param {import('../backend.js').Backend} inner */
  constructor(inner) {
    this.inner = inner;
  }

  /** `this.inner[method](...args)`, run on a later turn of the event loop. */
  #later(method, args) {
    return new Promise((resolve, reject) =>
      later(() => {
        try {
          resolve(this.inner[method](...args));
        } catch (error) {
          reject(error);
        }
      }),
    );
  }

  get(...args) {
    return this.#later('get', args);
  }

  getMany(...args) {
    return this.#later('getMany', args);
  }

  scan(...args) {
    return this.#later('scan', args);
  }

  commit(...args) {
    return this.#later('commit', args);
  }

  appendAudit(...args) {
    return this.#later('appendAudit', args);
  }

  auditPage(...args) {
    return this.#later('auditPage', args);
  }

  close() {
    return this.#later('close', []);
  }
}
