// Node only (real-gguf.mjs also runs in the browser test's worker).
import { createHash } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';

/**
 * Writes bytes past 2 GiB, which one fs.writeFileSync cannot.
 * @param {string} path
 * @param {Uint8Array} bytes
 */
export function writeInPieces(path, bytes) {
  const fd = openSync(path, 'w');
  try {
    for (let at = 0; at < bytes.length; at += 1 << 30) writeSync(fd, bytes, at, Math.min(1 << 30, bytes.length - at));
  } finally {
    closeSync(fd);
  }
}

/**
 * The SHA-256 of bytes past 2 GiB, which one hash.update cannot take.
 * @param {Uint8Array} bytes
 */
export function sha256InPieces(bytes) {
  const hash = createHash('sha256');
  for (let at = 0; at < bytes.length; at += 2 ** 30) hash.update(bytes.subarray(at, at + 2 ** 30));
  return hash.digest('hex');
}
