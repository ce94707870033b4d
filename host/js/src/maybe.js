// One code path for a domain whose calls answer at once (the synchronous
// build of the components) and one whose calls answer promises (the JSPI
// build, `open(agent, {async: true})`): code written as a generator that
// yields each value it waits for runs either way.

/**
 * Whether `value` is a promise (or any thenable).
 * @param {unknown} value
 * @returns {value is PromiseLike<unknown>}
 */
export function isPromise(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function';
}

/**
 * `f(value)`: at once, or once `value` settles when it is a promise.
 * @template T, U
 * @param {T | PromiseLike<T>} value
 * @param {(value: T) => U} f
 * @returns {U | Promise<Awaited<U>>}
 */
export function then(value, f) {
  return isPromise(value) ? Promise.resolve(value).then(f) : f(value);
}

/**
 * `run()`, then `ok` with its value or `fail` with what it threw (or, for
 * a promise, what it settles with): at once when `run` answers at once.
 * @template T, U
 * @param {() => T | PromiseLike<T>} run
 * @param {(value: T) => U} ok
 * @param {(error: unknown) => U} fail
 * @returns {U | Promise<U>}
 */
export function settle(run, ok, fail) {
  let value;
  try {
    value = run();
  } catch (error) {
    return fail(error);
  }
  return isPromise(value) ? Promise.resolve(value).then(ok, fail) : ok(value);
}

/**
 * `answer`, unless it is a promise and its caller cannot wait (`wait`
 * false): then what `refusal()` makes is thrown, and the promise's own
 * failure, if any, passed over.
 * @template T
 * @param {T} answer
 * @param {boolean} wait
 * @param {() => Error} refusal
 * @returns {T}
 */
export function atOnce(answer, wait, refusal) {
  if (!wait && isPromise(answer)) {
    Promise.resolve(answer).catch(() => {});
    throw refusal();
  }
  return answer;
}

/**
 * Runs `steps`, a generator that yields each value it waits for and gets
 * it back settled: at once (each yielded value handed back as it is), or,
 * when `wait`, as an async function would, a rejection thrown back in
 * where it was yielded.
 * @template T
 * @param {Generator<unknown, T, any>} steps
 * @param {boolean} wait
 * @returns {T | Promise<T>}
 */
export function drive(steps, wait) {
  if (!wait) {
    let step = steps.next();
    while (!step.done) step = steps.next(step.value);
    return step.value;
  }
  return (async () => {
    let step = steps.next();
    while (!step.done) {
      let settled;
      try {
        settled = await step.value;
      } catch (error) {
        step = steps.throw(error);
        continue;
      }
      step = steps.next(settled);
    }
    return step.value;
  })();
}
