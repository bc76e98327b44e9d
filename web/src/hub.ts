// Fetching a model's files from the Hugging Face Hub (or any server with the
// same URL layout: <baseUrl>/<id>/resolve/<revision>/<file>), with progress,
// a length and checksum check as the bytes arrive, and a cache that only ever holds complete, checked downloads.
// Weight files go to the platform's storage as they arrive and are read back in pieces, never whole in memory.
import type { Hasher } from './digest.js';
import { type FilePieces, release, releaseAll, WEIGHTS_FILE } from './file-pieces.js';
import type { GgufHead } from './gguf-heap.js';
import type { HubProgress, HubSource } from './types.js';

export const DEFAULT_HUB = 'https://huggingface.co';

/** Where a platform keeps Hub downloads between runs, and where a weight file's download goes as it arrives. */
export interface HubStorage {
  /** A small file kept from an earlier download. */
  get(url: string): Promise<Uint8Array | undefined>;
  put(url: string, bytes: Uint8Array): Promise<void>;
  /** A weight file kept from an earlier download, to be read in pieces where the platform can. */
  getWeights(url: string): Promise<Uint8Array | FilePieces | undefined>;
  /** Where a weight file's download is written as it arrives; once finished, kept under `url` when `keep`. */
  spool(url: string, keep: boolean): Promise<Spool>;
  /** A checksum fed the download a chunk at a time. */
  hasher(algorithm: 'sha256' | 'sha1'): Hasher;
}

/** A download being written; nothing of it is kept unless it finishes. */
export interface Spool {
  write(chunk: Uint8Array): Promise<void>;
  /** The bytes written, to be read (in pieces where the platform can); kept when asked, from here on. */
  finish(): Promise<Uint8Array | FilePieces>;
  /** Drops what was written: a download that failed, or whose checksum is wrong. */
  discard(): Promise<void>;
}

/** A download held in memory: a small file, or a weight file where the platform has nowhere else to put it. */
export function memorySpool(): Spool {
  const chunks: Uint8Array[] = [];
  return {
    write: async (chunk) => void chunks.push(chunk),
    finish: async () => concat(chunks),
    discard: async () => void chunks.splice(0),
  };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const bytes = new Uint8Array(chunks.reduce((sum, c) => sum + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return bytes;
}

// "bert-base-uncased", "sentence-transformers/all-MiniLM-L6-v2": one or two path
// segments of letters, digits, '-', '_', '.', never '..' or a leading '.'.
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(\/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?$/;
const REVISION = /^[A-Za-z0-9][A-Za-z0-9_.\/-]{0,127}$/;

export function checkHubSource(source: HubSource, op = 'loadModel'): { id: string; base: string; revision: string } {
  const { hub: id, baseUrl = DEFAULT_HUB, revision = 'main' } = source;
  if (typeof id !== 'string' || !ID.test(id) || id.includes('..'))
    throw new Error(`${op}: ${JSON.stringify(id)} is not a Hub model id like "bert-base-uncased" or "org/name"`);
  if (typeof revision !== 'string' || !REVISION.test(revision) || revision.includes('..'))
    throw new Error(`${op}: revision ${JSON.stringify(revision)} is not a branch, tag or commit name`);
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new Error(`${op}: baseUrl ${JSON.stringify(baseUrl)} is not a URL`);
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:')
    throw new Error(`${op}: baseUrl must be http(s), got ${base.protocol}`);
  const { file } = source;
  if (file !== undefined && (typeof file !== 'string' || !GGUF.test(file) || file.split('/').includes('..')))
    throw new Error(`${op}: file ${JSON.stringify(file)} is not a .gguf file's path in the repository`);
  return { id, base: base.href.replace(/\/$/, ''), revision };
}

/** A GGUF's path in a repository. */
const GGUF = /^[A-Za-z0-9_.\/-]{1,255}\.gguf$/;

/** The files of a GGUF: the one asked for, or every part of a split one (`-00001-of-00003.gguf`). */
function ggufParts(file: string): string[] {
  const split = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(file);
  if (!split) return [file];
  const count = Number(split[3]);
  const pad = (k: number) => String(k).padStart(5, '0');
  return Array.from({ length: count }, (_, k) => `${split[1]}-${pad(k + 1)}-of-${split[3]}.gguf`);
}

/** Where the Hub serves a repository's file. */
const resolveUrl = (base: string, id: string, revision: string, name: string) =>
  `${base}/${id}/resolve/${encodeURIComponent(revision)}/${name}`;

class NotFound extends Error {}

/**
 * Downloads one file into `write` as it arrives, reporting progress; refuses a body shorter or longer than its
 * content-length. Returns its length.
 */
async function download(
  url: string,
  name: string,
  report: (loaded: number, total: number | undefined) => void,
  write: (chunk: Uint8Array) => Promise<void>,
): Promise<number> {
  let response: Response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new Error(`loadModel: could not reach ${url} (${(err as Error).message}); are you offline?`);
  }
  if (response.status === 404) throw new NotFound(`loadModel: ${name} not found (HTTP 404 at ${url})`);
  if (!response.ok) throw new Error(`loadModel: downloading ${name} failed (HTTP ${response.status} at ${url})`);
  const header = response.headers.get('content-length');
  const total = header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
  const loaded = await streamBody(response, name, total, write, (loaded) => report(loaded, total));
  if (total !== undefined && loaded !== total)
    throw new Error(`loadModel: the download of ${name} is truncated: ${loaded} bytes of the ${total} announced`);
  return loaded;
}

/**
 * A Hub file's first bytes: a range request, read no further than asked whether or not the server honours the range
 * (one that does not sends the whole file from its start, and is cancelled there).
 */
function hubHead(url: string, name: string, size: number, op: string): GgufHead {
  return {
    name,
    size,
    read: async (end) => {
      let response: Response;
      try {
        response = await fetch(url, { headers: { range: `bytes=0-${end - 1}` } });
      } catch (err) {
        throw new Error(`${op}: could not reach ${url} (${(err as Error).message}); are you offline?`);
      }
      if (!response.ok) throw new Error(`${op}: reading ${name}'s header failed (HTTP ${response.status} at ${url})`);
      const chunks: Uint8Array[] = [];
      let got = 0;
      const reader = response.body!.getReader();
      while (got < end) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        got += value.length;
      }
      await reader.cancel();
      if (got < end) throw new Error(`${op}: ${name} ends at byte ${got}, before the ${size} bytes the Hub lists`);
      const head = new Uint8Array(end);
      let at = 0;
      for (const c of chunks) {
        head.set(c.subarray(0, end - at), at);
        at += Math.min(c.length, end - at);
      }
      return head;
    },
  };
}

/**
 * A response's body into `write` as it arrives, calling `report` with the bytes received so far after each chunk;
 * `total` (the size announced, if any) only goes into the message when the body is cut short. Returns its length.
 */
async function streamBody(
  response: Response,
  name: string,
  total: number | undefined,
  write: (chunk: Uint8Array) => Promise<void>,
  report: (loaded: number) => void,
): Promise<number> {
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    await write(bytes);
    report(bytes.length);
    return bytes.length;
  }
  const reader = response.body.getReader();
  let loaded = 0;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (err) {
      throw new Error(
        `loadModel: the download of ${name} was cut short after ${loaded} bytes${total ? ` of ${total}` : ''} (${(err as Error).message})`,
      );
    }
    if (chunk.done) return loaded;
    try {
      await write(chunk.value);
    } catch (err) {
      await reader.cancel().catch(() => undefined);
      throw err;
    }
    loaded += chunk.value.length;
    report(loaded);
  }
}

/** A response's body, whole (the default model's small files). */
export async function readBody(
  response: Response,
  name: string,
  total: number | undefined,
  report: (loaded: number) => void,
): Promise<Uint8Array> {
  const spool = memorySpool();
  await streamBody(response, name, total, spool.write, report);
  return (await spool.finish()) as Uint8Array;
}

/**
 * What the Hub says a file must be: its size and checksum, the SHA-256 of LFS files (the
 * weights) or, for the others, the git blob id (SHA-1 of "blob <size>\0" + bytes).
 */
interface Expected {
  size: number;
  kind: 'sha256' | 'git-blob';
  hex: string;
}

/** The repository's files at a revision, from `<base>/api/models/<id>/revision/<revision>?blobs=true`. */
type Listing = Map<string, Expected>;

const HEX = (n: number) => new RegExp(`^[0-9a-f]{${n}}$`);

/** Fetches the listing; undefined when the server cannot be reached (offline: the cache may still serve). */
async function fetchListing(
  base: string,
  id: string,
  revision: string,
  op = 'loadModel',
): Promise<Listing | undefined> {
  const url = `${base}/api/models/${id}/revision/${encodeURIComponent(revision)}?blobs=true`;
  let response: Response;
  try {
    response = await fetch(url);
  } catch {
    return undefined;
  }
  if (response.status === 404 || response.status === 401)
    throw new Error(
      `${op}: ${id} (revision ${revision}) is not on the Hub, or is private (HTTP ${response.status} at ${url})`,
    );
  if (!response.ok)
    throw new Error(
      `${op}: could not list the files of ${id} (HTTP ${response.status} at ${url}); pass verify: false to skip checksums`,
    );
  let siblings: unknown;
  try {
    siblings = ((await response.json()) as { siblings?: unknown }).siblings;
  } catch (err) {
    throw new Error(`${op}: the file list of ${id} at ${url} is not JSON (${(err as Error).message})`);
  }
  if (!Array.isArray(siblings)) throw new Error(`${op}: the file list of ${id} at ${url} has no "siblings" array`);
  const listing: Listing = new Map();
  for (const entry of siblings as Array<Record<string, unknown>>) {
    const name = entry?.rfilename;
    if (typeof name !== 'string') continue;
    // An LFS file's blobId is that of its pointer, not of the file: only its sha256 counts.
    const lfs = entry.lfs as { sha256?: unknown; size?: unknown } | undefined;
    const size = lfs ? lfs.size : entry.size;
    const [kind, hex, digits] = lfs ? (['sha256', lfs.sha256, 64] as const) : (['git-blob', entry.blobId, 40] as const);
    if (
      typeof size !== 'number' ||
      !Number.isSafeInteger(size) ||
      size < 0 ||
      typeof hex !== 'string' ||
      !HEX(digits).test(hex)
    )
      throw new Error(`${op}: the file list of ${id} gives no size and checksum for ${JSON.stringify(name)}`);
    listing.set(name, { size, kind, hex });
  }
  return listing;
}

/** The checksum as stored beside a cached file: "sha256:<hex>" or "git-blob:<hex>". */
const checksumName = (expected: Expected) => `${expected.kind}:${expected.hex}`;

/**
 * What checks a download against the listing as it arrives: its size, and its checksum (a git blob's is the SHA-1 of
 * "blob <size>\0" and the bytes). `take` refuses a body that runs past the size listed as soon as it does.
 */
function checker(name: string, expected: Expected, hasher: (algorithm: 'sha256' | 'sha1') => Hasher) {
  const hash = hasher(expected.kind === 'sha256' ? 'sha256' : 'sha1');
  if (expected.kind === 'git-blob') hash.update(new TextEncoder().encode(`blob ${expected.size}\0`));
  let size = 0;
  return {
    take(chunk: Uint8Array) {
      size += chunk.length;
      if (size > expected.size)
        throw new Error(`loadModel: the download of ${name} has more than the ${expected.size} bytes the Hub lists`);
      hash.update(chunk);
    },
    check() {
      if (size < expected.size)
        throw new Error(
          `loadModel: the download of ${name} is truncated: ${size} bytes of the ${expected.size} listed`,
        );
      const got = hash.hex();
      if (got !== expected.hex)
        throw new Error(
          `loadModel: ${name} has the wrong checksum: ${expected.kind} ${got}, but the Hub lists ${expected.hex}; the download is corrupt or was altered`,
        );
    },
  };
}

/**
 * The files a supported model needs: config.json, the weights (single or sharded),
 * and whichever tokenizer files it has (tokenizer.json, or vocab.txt, or
 * vocab.json + merges.txt, or Marian's vocab.json + source.spm + target.spm; tokenizer_config.json,
 * generation_config.json and a vision model's preprocessor_config.json when present).
 *
 * With `verify` (the default) the repository's file list comes first: it says
 * which files exist and each one's size and checksum, and every download is
 * checked against them before it is used or cached. Offline, complete files
 * already in the cache still load (they were verified when stored).
 */
/**
 * The tokenizer's files, in the order loading looks for them: the first group whose `first` file the repository has,
 * with those of `also` it has (GPT-2's merges.txt reads through vocab.json; Marian's two SentencePiece models do too).
 */
const TOKENIZER_FILES = [
  { first: 'tokenizer.json', also: [] },
  { first: 'vocab.txt', also: [] },
  { first: 'merges.txt', also: ['vocab.json'] },
  { first: 'source.spm', also: ['target.spm', 'vocab.json'] },
];
/**
 * Read where the repository has them: the tokenizer's settings; a language model's end-of-text ids (where they differ
 * from config.json's) and a speech model's decoding; an image or speech model's preprocessing.
 */
const COMPANIONS = ['tokenizer_config.json', 'generation_config.json', 'preprocessor_config.json'];

/** The shard names of a model.safetensors.index.json, checked. */
function shardsOf(index: Uint8Array): string[] {
  const map = (JSON.parse(new TextDecoder().decode(index)) as { weight_map?: Record<string, string> }).weight_map ?? {};
  const shards = [...new Set(Object.values(map))];
  for (const shard of shards)
    if (typeof shard !== 'string' || !/^[A-Za-z0-9_.-]+\.safetensors$/.test(shard))
      throw new Error(`loadModel: model.safetensors.index.json names an invalid shard ${JSON.stringify(shard)}`);
  return shards;
}

/**
 * What `loadModel({ hub })` would download, from the Hub's file list: each file with its listed size, and which of
 * them are the weights. Reads the list (and a sharded model's small index), nothing else; for a GGUF, the way to its
 * parts' headers, which say the heap its weights take.
 */
export async function planHubFiles(source: HubSource): Promise<{
  id: string;
  files: Array<{ name: string; size: number; weights: boolean }>;
  heads?: GgufHead[];
}> {
  const { id, base, revision } = checkHubSource(source, 'hubPlan');
  const listing = await fetchListing(base, id, revision, 'hubPlan');
  if (!listing) throw new Error(`hubPlan: could not reach ${base} to list the files of ${id}; are you offline?`);
  const has = (name: string) => listing.has(name);
  if (source.file) {
    const parts = ggufParts(source.file);
    for (const part of parts) if (!has(part)) throw new Error(`hubPlan: ${id} has no ${part} on the Hub`);
    const files = parts.map((name) => ({ name, size: listing.get(name)?.size ?? 0, weights: true }));
    const heads = files.map(({ name, size }) => hubHead(resolveUrl(base, id, revision, name), name, size, 'hubPlan'));
    return { id, files, heads };
  }
  if (!has('config.json')) throw new Error(`hubPlan: ${id} has no config.json on the Hub (every model needs one)`);
  const names = ['config.json'];
  const tokenizer = TOKENIZER_FILES.find(({ first }) => has(first));
  if (tokenizer) names.push(tokenizer.first, ...tokenizer.also.filter(has));
  names.push(...COMPANIONS.filter(has));
  let weights: string[];
  if (has('model.safetensors')) weights = ['model.safetensors'];
  else if (has('model.safetensors.index.json')) {
    const url = resolveUrl(base, id, revision, 'model.safetensors.index.json');
    const spool = memorySpool();
    await download(url, 'model.safetensors.index.json', () => undefined, spool.write);
    const index = (await spool.finish()) as Uint8Array;
    names.push('model.safetensors.index.json');
    weights = shardsOf(index);
  } else throw new Error(`hubPlan: ${id} has neither model.safetensors nor model.safetensors.index.json on the Hub`);
  const files = [...names, ...weights].map((name) => ({
    name,
    size: listing.get(name)?.size ?? 0,
    weights: weights.includes(name),
  }));
  return { id, files };
}

/**
 * `fits` refuses weights too large for the heap (the engine's check); `ggufBytes` says what a GGUF's weights take of
 * it, from its headers. The weight files come back as the platform's storage reads them (in pieces, to be closed
 * once loaded, where it can); on an error, those already fetched are let go.
 */
export async function fetchHubModel(
  source: HubSource,
  storage: HubStorage,
  fits?: (weightBytes: number) => void,
  ggufBytes?: (heads: GgufHead[]) => Promise<number>,
): Promise<Record<string, Uint8Array | FilePieces>> {
  const files: Record<string, Uint8Array | FilePieces> = {};
  try {
    return await fetchInto(files, source, storage, fits, ggufBytes);
  } catch (err) {
    releaseAll(files);
    throw err;
  }
}

async function fetchInto(
  files: Record<string, Uint8Array | FilePieces>,
  source: HubSource,
  storage: HubStorage,
  fits?: (weightBytes: number) => void,
  ggufBytes?: (heads: GgufHead[]) => Promise<number>,
): Promise<Record<string, Uint8Array | FilePieces>> {
  const { id, base, revision } = checkHubSource(source);
  const cache = source.cache === false ? undefined : storage;
  const onProgress = source.onProgress;
  const listing = source.verify === false ? undefined : await fetchListing(base, id, revision);
  const offline = source.verify !== false && !listing;

  const fetchFile = async (name: string): Promise<Uint8Array | FilePieces | undefined> => {
    const expected = listing?.get(name);
    if (listing && !expected) return undefined; // the repository has no such file
    const url = resolveUrl(base, id, revision, name);
    const weights = WEIGHTS_FILE.test(name);
    // A cached file is used when it was stored with the checksum the Hub lists now (or, offline, as it is).
    const cached = await (weights ? cache?.getWeights(url) : cache?.get(url));
    if (offline && !cached) return undefined; // `required` says why, for files that must exist
    const cachedSum = cached && new TextDecoder().decode((await cache?.get(`${url}?checksum`)) ?? new Uint8Array());
    if (cached && (offline || !expected || cachedSum === checksumName(expected))) {
      onProgress?.({ file: name, loaded: cached.byteLength, total: cached.byteLength, cached: true });
      return (files[name] = cached);
    }
    release(cached);
    // Weights go where the platform keeps large files (the cache's place, when caching), the rest into memory; each
    // is checked as it arrives, and kept only once complete and checked.
    const spool = weights ? await storage.spool(url, !!cache) : memorySpool();
    const check = expected && checker(name, expected, storage.hasher);
    try {
      await download(
        url,
        name,
        (loaded, total) =>
          onProgress?.({ file: name, loaded, total: total ?? expected?.size, cached: false } satisfies HubProgress),
        async (chunk) => {
          check?.take(chunk);
          await spool.write(chunk);
        },
      );
      check?.check();
    } catch (err) {
      await spool.discard();
      if (err instanceof NotFound && !expected) return undefined;
      throw err;
    }
    const bytes = (files[name] = await spool.finish());
    if (!weights) await cache?.put(url, bytes as Uint8Array);
    if (expected) await cache?.put(`${url}?checksum`, new TextEncoder().encode(checksumName(expected)));
    return bytes;
  };
  const required = async (name: string, why: string) => {
    const bytes = await fetchFile(name);
    if (!bytes && offline)
      throw new Error(
        `loadModel: could not reach ${base} to list the files of ${id}, and ${name} is not in the cache; are you offline?`,
      );
    if (!bytes) throw new Error(`loadModel: ${id} has no ${name} on the Hub (${why})`);
    return bytes;
  };

  if (source.file) {
    // A GGUF holds the whole model: its config, tokenizer and weights. A model too large is refused from its headers
    // (a range request each), before the download.
    const parts = ggufParts(source.file);
    const listed = listing && parts.every((part) => listing.has(part));
    if (listed && fits && ggufBytes) {
      const url = (part: string) => resolveUrl(base, id, revision, part);
      fits(await ggufBytes(parts.map((part) => hubHead(url(part), part, listing.get(part)!.size, 'loadModel'))));
    }
    for (const part of parts)
      await required(part, parts.length > 1 ? 'a part of the split GGUF asked for' : 'asked for');
    return files;
  }
  await required('config.json', 'every model needs one');
  for (const { first, also } of TOKENIZER_FILES) {
    if (!(await fetchFile(first))) continue;
    for (const name of also) await fetchFile(name);
    break;
  }
  for (const name of COMPANIONS) await fetchFile(name);
  // A model too large for the engine is refused from the file list's sizes, before its weights download.
  const single = listing?.get('model.safetensors');
  if (single) fits?.(single.size);
  if (!(await fetchFile('model.safetensors'))) {
    const index = (await required(
      'model.safetensors.index.json',
      'nor model.safetensors: only safetensors weights load',
    )) as Uint8Array;
    const shards = shardsOf(index);
    if (listing) fits?.(shards.reduce((sum, shard) => sum + (listing.get(shard)?.size ?? 0), 0));
    for (const shard of shards) await required(shard, 'model.safetensors.index.json lists it');
  }
  return files;
}
