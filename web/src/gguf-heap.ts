// The heap a GGUF's weights will take, from its headers alone, read a few megabytes at a time from wherever the file
// is (a range request, a Blob's slice): how a model too large is refused before its download or its read. The engine
// counts it (cpp/src/models/gguf_checkpoint.hpp's gguf_weight_bytes), as the load then checks it.
import type { RawModule } from './raw.js';

/** A GGUF file's size and a way to its first bytes. */
export interface GgufHead {
  name: string;
  size: number;
  /** The file's bytes [0, end), end ≤ size. */
  read(end: number): Promise<Uint8Array>;
}

// The first read of each file: a small vocabulary's header; a 256k-token one's (Gemma's) is about 7 MiB.
const FIRST_READ = 2 ** 21;

/** The heap bytes the weights of a GGUF (one file, or every part of a split one) take once loaded. */
export async function ggufWeightBytes(module: RawModule, op: string, parts: GgufHead[]): Promise<number> {
  const heads = await Promise.all(parts.map((p) => p.read(Math.min(p.size, FIRST_READ))));
  for (;;) {
    const r = module.ggufWeightBytes(parts.map(({ name, size }, i) => ({ name, size, head: heads[i] })));
    if ('error' in r) throw new Error(r.error.startsWith(`${op}: `) ? r.error : `${op}: ${r.error}`);
    if ('weightBytes' in r) return r.weightBytes;
    // A header runs past the bytes read: read that part further, at least twice as far, so that a long one takes
    // few reads.
    const { part, needBytes } = r;
    heads[part] = await parts[part].read(Math.min(parts[part].size, Math.max(needBytes, 2 * heads[part].length)));
  }
}

/** A Blob's (a dropped File's) first bytes. */
export const blobHead = (name: string, blob: Blob): GgufHead => ({
  name,
  size: blob.size,
  read: async (end) => new Uint8Array(await blob.slice(0, end).arrayBuffer()),
});
