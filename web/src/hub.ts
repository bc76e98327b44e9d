// Fetching a model's files from the Hugging Face Hub (or any server with the
// same URL layout: <baseUrl>/<id>/resolve/<revision>/<file>), with progress,
// a length check, and a cache that only ever holds complete downloads.
import type { GgufHead } from './gguf-heap.js';
import type { HubProgress, HubSource } from './types.js';

export const DEFAULT_HUB = 'https://huggingface.co';

/** Where downloaded files are kept between runs; each platform brings its own. */
export interface HubCache {
  get(url: string): Promise<Uint8Array | undefined>;
  put(url: string, bytes: Uint8Array): Promise<void>;
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

/** Downloads one file, reporting progress; refuses a body shorter or longer than its content-length. */
async function download(
  url: string,
  name: string,
  report: (loaded: number, total: number | undefined) => void,
): Promise<Uint8Array> {
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
  const bytes = await readBody(response, name, total, (loaded) => report(loaded, total));
  if (total !== undefined && bytes.length !== total)
    throw new Error(`loadModel: the download of ${name} is truncated: ${bytes.length} bytes of the ${total} announced`);
  return bytes;
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
 * A response's body as it arrives, calling `report` with the bytes received so far after each chunk; `total`
 * (the size announced, if any) only goes into the message when the body is cut short.
 */
export async function readBody(
  response: Response,
  name: string,
  total: number | undefined,
  report: (loaded: number) => void,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  try {
    if (!response.body) return new Uint8Array(await response.arrayBuffer());
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.length;
      report(loaded);
    }
  } catch (err) {
    throw new Error(
      `loadModel: the download of ${name} was cut short after ${loaded} bytes${total ? ` of ${total}` : ''} (${(err as Error).message})`,
    );
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return bytes;
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

const hex = (buffer: ArrayBuffer) =>
  Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

/** The checksum as stored beside a cached file: "sha256:<hex>" or "git-blob:<hex>". */
const checksumName = (expected: Expected) => `${expected.kind}:${expected.hex}`;

async function checksumOf(bytes: Uint8Array, kind: 'sha256' | 'git-blob'): Promise<string> {
  if (kind === 'sha256') return hex(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  const header = new TextEncoder().encode(`blob ${bytes.length}\0`);
  const whole = new Uint8Array(header.length + bytes.length);
  whole.set(header);
  whole.set(bytes, header.length);
  return hex(await crypto.subtle.digest('SHA-1', whole));
}

/** Refuses bytes whose size or checksum differ from the listing's. */
async function verify(name: string, bytes: Uint8Array, expected: Expected): Promise<void> {
  if (bytes.length < expected.size)
    throw new Error(
      `loadModel: the download of ${name} is truncated: ${bytes.length} bytes of the ${expected.size} listed`,
    );
  if (bytes.length > expected.size)
    throw new Error(`loadModel: the download of ${name} has ${bytes.length} bytes, but the Hub lists ${expected.size}`);
  const got = await checksumOf(bytes, expected.kind);
  if (got !== expected.hex)
    throw new Error(
      `loadModel: ${name} has the wrong checksum: ${expected.kind} ${got}, but the Hub lists ${expected.hex}; the download is corrupt or was altered`,
    );
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
    const index = await download(url, 'model.safetensors.index.json', () => undefined);
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
 * it, from its headers.
 */
export async function fetchHubModel(
  source: HubSource,
  platformCache: HubCache | undefined,
  fits?: (weightBytes: number) => void,
  ggufBytes?: (heads: GgufHead[]) => Promise<number>,
): Promise<Record<string, Uint8Array>> {
  const { id, base, revision } = checkHubSource(source);
  const cache = source.cache === false ? undefined : platformCache;
  const onProgress = source.onProgress;
  const listing = source.verify === false ? undefined : await fetchListing(base, id, revision);
  const offline = source.verify !== false && !listing;
  const files: Record<string, Uint8Array> = {};

  const fetchFile = async (name: string): Promise<Uint8Array | undefined> => {
    const expected = listing?.get(name);
    if (listing && !expected) return undefined; // the repository has no such file
    const url = resolveUrl(base, id, revision, name);
    // A cached file is used when it was stored with the checksum the Hub lists now (or, offline, as it is).
    const cached = await cache?.get(url);
    if (offline && !cached) return undefined; // `required` says why, for files that must exist
    const cachedSum = cached && new TextDecoder().decode((await cache?.get(`${url}?checksum`)) ?? new Uint8Array());
    if (cached && (offline || !expected || cachedSum === checksumName(expected))) {
      onProgress?.({ file: name, loaded: cached.length, total: cached.length, cached: true });
      return (files[name] = cached);
    }
    try {
      const bytes = await download(url, name, (loaded, total) =>
        onProgress?.({ file: name, loaded, total: total ?? expected?.size, cached: false } satisfies HubProgress),
      );
      if (expected) await verify(name, bytes, expected);
      await cache?.put(url, bytes);
      if (expected) await cache?.put(`${url}?checksum`, new TextEncoder().encode(checksumName(expected)));
      return (files[name] = bytes);
    } catch (err) {
      if (err instanceof NotFound && !expected) return undefined;
      throw err;
    }
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
    const index = await required(
      'model.safetensors.index.json',
      'nor model.safetensors: only safetensors weights load',
    );
    const shards = shardsOf(index);
    if (listing) fits?.(shards.reduce((sum, shard) => sum + (listing.get(shard)?.size ?? 0), 0));
    for (const shard of shards) await required(shard, 'model.safetensors.index.json lists it');
  }
  return files;
}
