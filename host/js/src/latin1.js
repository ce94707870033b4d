// Byte strings as the host layer hands them over (`engram:adapter/store`,
// host/js-components/adapter/wit/adapter.wit): a string of one character per byte, U+0000 to
// U+00FF. Node's Buffer converts in native code; elsewhere (a Worker without
// `nodejs_compat`, a browser) the portable way below does it: no
// TextDecoder label decodes Latin-1 itself (`latin1` is windows-1252 there,
// which differs from 0x80 to 0x9F), but UTF-16 code units of 0 to 0xFF are
// exactly those characters.

const utf16 = new TextDecoder('utf-16le');

/**
 * The bytes of a byte string, without Node's Buffer.
 * @param {string} text
 * @returns {Uint8Array}
 */
function portableBytes(text) {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/**
 * The byte string of bytes, without Node's Buffer.
 * @param {Uint8Array} bytes
 * @returns {string}
 */
function portableText(bytes) {
  // Little-endian code units, whatever the platform's order.
  const units = new Uint8Array(bytes.length * 2);
  for (let i = 0; i < bytes.length; i++) units[2 * i] = bytes[i];
  return utf16.decode(units);
}

const NodeBuffer = globalThis.Buffer;

/**
 * The bytes of a byte string (a view; it may share its buffer).
 * @type {(text: string) => Uint8Array}
 */
export const bytesOf =
  typeof NodeBuffer?.from === 'function' ? (text) => NodeBuffer.from(text, 'latin1') : portableBytes;

/**
 * The byte string of bytes.
 * @type {(bytes: Uint8Array) => string}
 */
export const textOf =
  typeof NodeBuffer?.from === 'function'
    ? (bytes) => NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
    : portableText;

/** Both conversions without Node's Buffer, as a Worker runs them. */
export const portable = Object.freeze({ bytesOf: portableBytes, textOf: portableText });
