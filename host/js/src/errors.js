// The errors of the package's calls: one class a kind of failure, the
// kinds and their words the Python package's (`kind`: `input`, `refused`,
// `stopped`, `locked`, `store`, `closed`). The Rust host answers a failure
// framed by its kind (a letter, then the words); `ofFrame` makes the error
// of a frame, in one place.

import { MESSAGES } from '../gen/limits.js';

/** Every error of a call of this package. */
export class EngramError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = new.target.name;
  }

  /** The kind of failure, as every package names it. */
  get kind() {
    return 'engram';
  }
}

/**
 * The input of a call is not a valid request (or a domain's settings, or
 * a store's options): nothing ran. Its message names the input (and the
 * line of a batch) and the problem.
 */
export class EngramInputError extends EngramError {
  get kind() {
    return 'input';
  }
}

/**
 * The contract refused a call: nothing was persisted. `answer` is the
 * line the command line prints for it (`{plan_error}`, `{cycle_error}`,
 * `{error}`), parsed.
 */
export class EngramRefusedError extends EngramError {
  /**
   * @param {string} line
   * @param {unknown} answer the line, parsed
   */
  constructor(line, answer) {
    super(line);
    /** The refusal, parsed. */
    this.answer = answer;
  }

  get kind() {
    return 'refused';
  }
}

/**
 * The engine's instance stopped during the call (a trap, or a call of the
 * host that failed where the contract has no error to give): the call did
 * not answer, and the domain's next call gets a fresh instance. A single
 * write or read that stopped so is audited FAILED with why.
 */
export class EngramStoppedError extends EngramError {
  get kind() {
    return 'stopped';
  }
}

/**
 * The domain's maintenance lock is held by someone else, or was broken; or
 * a call of the domain is under way on this thread (from its own
 * summarizer, ranker, tokenizer, embedder or store): try again later.
 */
export class EngramLockError extends EngramError {
  get kind() {
    return 'locked';
  }
}

/** A store that cannot be opened or used: the message, one line, names the store and why. */
export class EngramStoreError extends EngramError {
  get kind() {
    return 'store';
  }
}

/** The domain (or the store) was closed: nothing ran. */
export class EngramClosedError extends EngramError {
  get kind() {
    return 'closed';
  }
}

/** A call of a closed domain. */
export function closedError() {
  return new EngramClosedError(MESSAGES.closed);
}

/**
 * The error of a failure framed by the Rust host (`I` input, `S` stopped,
 * `K` locked, `F` store, `C` closed, then the words; `R` refused, then its
 * line: a domain that may not open); undefined for any other text. The
 * refusal of a call is its answer's, made where answers are read.
 * @param {string} framed
 * @returns {EngramError | undefined}
 */
export function ofFrame(framed) {
  const text = framed.slice(1);
  switch (framed.charCodeAt(0)) {
    case 0x49: // I
      return new EngramInputError(text);
    case 0x52: // R
      return new EngramRefusedError(text, JSON.parse(text));
    case 0x53: // S
      return new EngramStoppedError(text);
    case 0x4b: // K
      return new EngramLockError(text);
    case 0x46: // F
      return new EngramStoreError(text);
    case 0x43: // C
      return new EngramClosedError(text);
    default:
      return undefined;
  }
}

/**
 * Refuses text that is not Unicode (a lone surrogate) before it crosses
 * into the host, where it would be rewritten: two different ids must never
 * become one.
 * @param {string} text
 * @returns {string}
 */
export function unicode(text) {
  if (!text.isWellFormed()) throw new EngramInputError(MESSAGES.not_unicode);
  return text;
}
