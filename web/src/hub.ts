// Fetching a model's files from the Hugging Face Hub (or any server with the
// same URL layout: <baseUrl>/<id>/resolve/<revision>/<file>), with progress,
// a length check, and a cache that only ever holds complete downloads.
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

export function checkHubSource(source: HubSource): { id: string; base: string; revision: string } {
  const { hub: id, baseUrl = DEFAULT_HUB, revision = 'main' } = source;
  if (typeof id !== 'string' || !ID.test(id) || id.includes('..'))
    throw new Error(`loadModel: ${JSON.stringify(id)} is not a Hub model id like "bert-base-uncased" or "org/name"`);
  if (typeof revision !== 'string' || !REVISION.test(revision) || revision.includes('..'))
    throw new Error(`loadModel: revision ${JSON.stringify(revision)} is not a branch, tag or commit name`);
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new Error(`loadModel: baseUrl ${JSON.stringify(baseUrl)} is not a URL`);
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:')
    throw new Error(`loadModel: baseUrl must be http(s), got ${base.protocol}`);
  return { id, base: base.href.replace(/\/$/, ''), revision };
}

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
  if (response.status === 404) throw new NotFound(`${name} not found (HTTP 404 at ${url})`);
  if (!response.ok) throw new Error(`loadModel: downloading ${name} failed (HTTP ${response.status} at ${url})`);
  const header = response.headers.get('content-length');
  const total = header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  try {
    const reader = response.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.length;
      report(loaded, total);
    }
  } catch (err) {
    throw new Error(
      `loadModel: the download of ${name} was cut short after ${loaded} bytes${total ? ` of ${total}` : ''} (${(err as Error).message})`,
    );
  }
  if (total !== undefined && loaded !== total)
    throw new Error(`loadModel: the download of ${name} is truncated: ${loaded} bytes of the ${total} announced`);
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return bytes;
}

/**
 * The files a supported model needs: config.json, the weights (single or sharded),
 * and whichever tokenizer files it has (tokenizer.json, or vocab.txt, or
 * vocab.json + merges.txt; tokenizer_config.json when present).
 */
export async function fetchHubModel(
  source: HubSource,
  platformCache: HubCache | undefined,
): Promise<Record<string, Uint8Array>> {
  const { id, base, revision } = checkHubSource(source);
  const cache = source.cache === false ? undefined : platformCache;
  const onProgress = source.onProgress;
  const files: Record<string, Uint8Array> = {};
  const fetchFile = async (name: string): Promise<Uint8Array | undefined> => {
    const url = `${base}/${id}/resolve/${encodeURIComponent(revision)}/${name}`;
    const cached = await cache?.get(url);
    const report = (loaded: number, total: number | undefined) =>
      onProgress?.({ file: name, loaded, total, cached: false } satisfies HubProgress);
    if (cached) {
      onProgress?.({ file: name, loaded: cached.length, total: cached.length, cached: true });
      return (files[name] = cached);
    }
    try {
      const bytes = await download(url, name, report);
      await cache?.put(url, bytes);
      return (files[name] = bytes);
    } catch (err) {
      if (err instanceof NotFound) return undefined;
      throw err;
    }
  };
  const required = async (name: string, why: string) => {
    const bytes = await fetchFile(name);
    if (!bytes) throw new Error(`loadModel: ${id} has no ${name} on the Hub (${why})`);
    return bytes;
  };

  await required('config.json', 'every model needs one');
  if (!(await fetchFile('tokenizer.json'))) {
    if (!(await fetchFile('vocab.txt'))) {
      await fetchFile('vocab.json');
      await fetchFile('merges.txt');
    }
  }
  await fetchFile('tokenizer_config.json');
  if (!(await fetchFile('model.safetensors'))) {
    const index = await required(
      'model.safetensors.index.json',
      'nor model.safetensors: only safetensors weights load',
    );
    const map =
      (JSON.parse(new TextDecoder().decode(index)) as { weight_map?: Record<string, string> }).weight_map ?? {};
    for (const shard of new Set(Object.values(map))) {
      if (typeof shard !== 'string' || !/^[A-Za-z0-9_.-]+\.safetensors$/.test(shard))
        throw new Error(`loadModel: model.safetensors.index.json names an invalid shard ${JSON.stringify(shard)}`);
      await required(shard, 'model.safetensors.index.json lists it');
    }
  }
  return files;
}
