// The checksums a browser computes over a Hub download as it arrives, against Node's (OpenSSL's) on the same bytes:
// every length around the 64-byte block and the 56-byte padding boundary, fed whole and in uneven pieces.
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';

import { createHasher } from '../../dist/digest.js';

const ALGORITHMS = ['sha256', 'sha1'] as const;

describe.each(ALGORITHMS)('%s fed in pieces', (algorithm) => {
  const reference = (bytes: Uint8Array) => createHash(algorithm).update(bytes).digest('hex');

  it('equals node:crypto for every length from 0 to 300 bytes, fed whole', () => {
    const bytes = randomBytes(300);
    for (let n = 0; n <= 300; n++) {
      const h = createHasher(algorithm);
      h.update(bytes.subarray(0, n));
      expect(h.hex(), `${n} bytes`).toBe(reference(bytes.subarray(0, n)));
    }
  });

  it('equals node:crypto on 1 MiB fed in pieces of every size from 0 to 200 bytes and larger', () => {
    const bytes = randomBytes(2 ** 20 + 13);
    const h = createHasher(algorithm);
    let at = 0;
    for (let k = 0; at < bytes.length; k++) {
      const size = k < 201 ? k : 4099 + (k % 7) * 65536;
      h.update(bytes.subarray(at, at + size));
      at += size;
    }
    expect(h.hex()).toBe(reference(bytes));
  });

  it('gives the standard vectors of FIPS 180-4', () => {
    const abc = new TextEncoder().encode('abc');
    const h = createHasher(algorithm);
    h.update(abc);
    expect(h.hex()).toBe(
      algorithm === 'sha256'
        ? 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
        : 'a9993e364706816aba3e25717850c26c9cd0d89d',
    );
  });
});
