// This machine's memory bandwidth, as one process sees it now, best of three passes over 256 MiB:
// - copied: Buffer.copy (a memcpy), counted as memcpy counts, bytes copied per second. This is what
//   the issue asks for, but a copy also writes, so it understates what a read-only pass can reach.
// - read: Buffer.compare of two equal buffers (a memcmp), bytes read per second. A decoding step only
//   reads its weights, so this is the bound: read bandwidth / weight bytes tokens per second.
const SIZE = 256 * 2 ** 20;
let buffers = null;

function best(pass, bytes) {
  let top = 0;
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    pass(i);
    top = Math.max(top, bytes / ((performance.now() - start) / 1e3));
  }
  return top;
}

/** Bytes per second: { copied, read }. */
export function memoryBandwidth() {
  // every page touched before timing; [0] and [1] equal so that compare reads both to the end
  buffers ??= [Buffer.alloc(SIZE, 1), Buffer.alloc(SIZE, 1), Buffer.alloc(SIZE, 2)];
  const copied = best((i) => buffers[i % 2].copy(buffers[2]), SIZE);
  const read = best(() => {
    if (Buffer.compare(buffers[0], buffers[1]) !== 0) throw new Error('bandwidth: buffers differ');
  }, 2 * SIZE);
  return { copied, read };
}
