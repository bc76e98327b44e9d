// Node only (real-gguf.mjs also runs in the browser test's worker).
import { createHash } from 'node:crypto';
import { closeSync, createReadStream, openSync, writeSync } from 'node:fs';
import { pipeline } from 'node:stream';

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

/**
 * Answers a request for a file on disk of `size` bytes, whole or the range asked for (a GGUF's header is read first,
 * for the heap it needs), as a server of Hub files does; returns whether a range was asked for.
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 * @param {string} path
 * @param {number} size
 * @param {Record<string, string>} [headers]
 */
export function sendFile(req, res, path, size, headers = {}) {
  const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
  const [start, end] = range ? [Number(range[1]), Math.min(Number(range[2]), size - 1)] : [0, size - 1];
  res.writeHead(range ? 206 : 200, { ...headers, 'content-length': end + 1 - start });
  pipeline(createReadStream(path, { start, end }), res, () => undefined); // closed with the response, if cut short
  return !!range;
}
