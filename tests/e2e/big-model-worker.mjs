// In a browser Web Worker: the package's browser entry, straight from dist/, loads random
// checkpoints in real models' shapes and runs 128 tokens (`?tokens=` another count) on the build it picks by itself.
// - no query: bert-base-uncased's size (109.5M parameters); then every build it ships runs the
//   same small multi-head attention, to compare; and a small GGUF from a File read in pieces, and from one that
//   can no longer be read; and one downloaded from the Hub (a fetch answered in the worker), then from its cache;
// - `?llm=Qwen2.5-0.5B,…`: language models in BF16 as the Hub ships them, one engine each,
//   with next-token predictions; the heap after loading and after the run are reported;
// - `?gguf=Llama-3.2-1B:Q8_0,…`: the same from GGUF files in the real shapes of 1-3B models (Q8_0, or llama.cpp's
//   Q4_K_M mix), the last layer's maps (as the page runs models whose every map would not fit).
import { createEngine } from '../../dist/browser.js';
import { bertCheckpoint } from '../safetensors.mjs';
import { decoderCheckpoint, realShapeCheckpoint } from '../llm/checkpoints.mjs';
import { T } from '../llm/gguf.mjs';
import { fakeHub, sha256Hex } from './fake-hub.mjs';
import { q4KM, realShapeGguf } from '../llm/real-gguf.mjs';

const BUILDS = ['relaxed-simd-threads', 'relaxed-simd', 'simd-threads', 'simd'];
const MiB = (bytes) => Math.round(bytes / 2 ** 20);
const query = new URL(self.location.href).searchParams;
const ids = Array.from({ length: Number(query.get('tokens') ?? 128) }, (_, i) => 1000 + i);

/** Largest difference between each build's output and the first build's, on one 40 × 64 MHA. */
async function everyBuild() {
  const values = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 0.5);
  const tensor = (rows, cols, seed) => ({ data: values(rows * cols, seed), shape: [rows, cols] });
  const x = tensor(40, 64, 1);
  const params = { wq: tensor(64, 64, 2), wk: tensor(64, 64, 3), wv: tensor(64, 64, 4), wo: tensor(64, 64, 5) };
  const diffs = {};
  let first;
  for (const build of BUILDS) {
    const engine = await createEngine({ build, threads: build.endsWith('-threads') ? 2 : 1 });
    const out = engine.multiHeadAttention(x, params, { heads: 4 }).output.data;
    first ??= out;
    diffs[engine.info().build] = Math.max(...out.map((v, i) => Math.abs(v - first[i])));
    engine.dispose();
  }
  return diffs;
}

async function bert() {
  const { params, files } = bertCheckpoint();
  const engine = await createEngine();
  const model = await engine.loadModel({ files });
  const r = model.run(ids);
  const report = {
    params,
    build: engine.info().build,
    shape: r.shape,
    finite: r.attentions.every(Number.isFinite),
    heapMiB: MiB(engine.memory().heapBytes),
  };
  engine.dispose();
  return { ...report, builds: await everyBuild(), pieces: await pieces(), hub: await hub() };
}

/**
 * A GGUF handed over as a File that must not be read whole (as the page hands a dropped one to its worker): read a
 * tensor at a time, the same model as from its bytes. A File that can no longer be read past its header (changed on
 * disk after it was chosen) is an error naming it, and the engine goes on. (bench/page.mjs drops a 2B model's GGUF
 * of 1.6 GB from disk on the page: a Blob built in memory that large, Chromium will not read.)
 */
async function pieces() {
  const bytes = decoderCheckpoint({ arch: 'qwen3' }).gguf();
  class PiecesOnly extends Blob {
    arrayBuffer() {
      throw new Error('the GGUF was read whole');
    }
  }
  class Gone extends Blob {
    slice(from, to) {
      return from === 0 ? super.slice(from, to) : 'gone';
    }
  }
  const engine = await createEngine();
  const ids = [1, 2, 3, 4, 5];
  const whole = (await engine.loadModel({ files: { 'q.gguf': bytes } })).run(ids).attentions;
  const read = (await engine.loadModel({ files: { 'q.gguf': new PiecesOnly([bytes]) } })).run(ids).attentions;
  const unreadable = await engine.loadModel({ files: { 'gone.gguf': new Gone([bytes]) } }).then(
    () => 'loaded',
    (err) => String(err),
  );
  const after = (await engine.loadModel({ files: { 'q.gguf': bytes } })).run(ids).attentions;
  const same = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
  engine.dispose();
  return { same: same(whole, read), unreadable, after: same(whole, after) };
}

/**
 * A GGUF downloaded from the Hub in the worker (its fetch answered here in the Hub's layout, the file streamed in
 * 64 KiB chunks, listed with its SHA-256 as an LFS file): checked as it arrives, written to the Origin Private File
 * System (its checksum beside it in the Cache API) and read a tensor at a time, never as one buffer; the next load
 * comes from there. A file with a flipped byte is refused, nothing of it kept, and the engine goes on.
 */
async function hub() {
  const bytes = decoderCheckpoint({ arch: 'qwen3' }).gguf();
  const flipped = bytes.slice();
  flipped[flipped.length - 1] ^= 1;
  const repos = { 'test/good': bytes, 'test/flipped': flipped, 'test/old': bytes, 'test/unreadable': bytes };
  const baseUrl = 'https://hub.invalid';
  const { sha256, downloads, restore: restoreFetch } = await fakeHub(baseUrl, repos, bytes);
  // Whatever reads the file whole from a Blob or a response (the Cache API's, or the download's), counted.
  let whole = 0;
  const count = (proto) => {
    const arrayBuffer = proto.arrayBuffer;
    proto.arrayBuffer = function () {
      if (this instanceof Blob ? this.size >= bytes.length : this.url.endsWith('.gguf')) whole++;
      return arrayBuffer.call(this);
    };
    return () => (proto.arrayBuffer = arrayBuffer);
  };
  const restore = [count(Blob.prototype), count(Response.prototype)];
  const engine = await createEngine();
  try {
    await caches.delete('attnscope-hub-v1');
    await (await navigator.storage.getDirectory()).removeEntry('attnscope-hub', { recursive: true }).catch(() => {});
    const ids = [1, 2, 3, 4, 5];
    const reference = (await engine.loadModel({ files: { 'q.gguf': bytes } })).run(ids).attentions;
    const same = (a) => a.length === reference.length && a.every((v, i) => v === reference[i]);
    const progress = [];
    const load = (hub) =>
      engine.loadModel({ hub, file: 'q.gguf', baseUrl, onProgress: (p) => progress.push(p.cached) });
    const downloaded = same((await load('test/good')).run(ids).attentions);
    const fromCache = progress.length;
    const cached = same((await load('test/good')).run(ids).attentions) && progress.slice(fromCache).every((c) => c);
    const refused = await load('test/flipped').then(
      () => 'loaded',
      (err) => String(err),
    );
    // A file system that fills up mid-download (as a private window's small one does): the rest goes to memory.
    const write = FileSystemSyncAccessHandle.prototype.write;
    let written = 0;
    FileSystemSyncAccessHandle.prototype.write = function (chunk, options) {
      if ((written += chunk.length) > bytes.length / 2) throw new DOMException('full', 'QuotaExceededError');
      return write.call(this, chunk, options);
    };
    const full = await engine.loadModel({ hub: 'test/good', file: 'q.gguf', baseUrl, cache: false }).then(
      (model) => same(model.run(ids).attentions) && written > bytes.length / 2,
      (err) => String(err),
    );
    FileSystemSyncAccessHandle.prototype.write = write;
    const cache = (await (await caches.open('attnscope-hub-v1')).keys()).map(({ url }) => url.slice(baseUrl.length));
    const files = [];
    const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle('attnscope-hub');
    for await (const name of folder.keys()) files.push(name);
    const nameOf = (repo) => sha256Hex(new TextEncoder().encode(`${baseUrl}/${repo}/resolve/main/q.gguf`));
    const kept = { cache, files, url: await nameOf('test/good') };
    // A copy of a kept file in the Cache API as well (left by an earlier version): deleted when the file is read.
    const cacheApi = await caches.open('attnscope-hub-v1');
    const good = `${baseUrl}/test/good/resolve/main/q.gguf`;
    await cacheApi.put(good, new Response(bytes));
    const after = same((await load('test/good')).run(ids).attentions);
    const twice = !!(await cacheApi.match(good));
    // Weights an earlier version kept in the Cache API: moved to the file system as they are read, not downloaded
    // again, and the cache's copy deleted.
    const old = `${baseUrl}/test/old/resolve/main/q.gguf`;
    await cacheApi.put(old, new Response(bytes));
    await cacheApi.put(`${old}?checksum`, new Response(`sha256:${sha256}`));
    const movedFrom = progress.length;
    const ran = same((await load('test/old')).run(ids).attentions);
    const moved = {
      ran,
      cached: progress.slice(movedFrom).every((c) => c),
      stillInCache: !!(await cacheApi.match(old)),
      inFolder: await folder.getFileHandle(await nameOf('test/old')).then(
        (handle) => handle.getFile().then((file) => file.size === bytes.length),
        () => false,
      ),
    };
    // A copy in the Cache API that cannot be read (its body fails after 1,000 bytes): downloaded again, the copy
    // deleted, nothing partial left in the folder.
    const unreadable = `${baseUrl}/test/unreadable/resolve/main/q.gguf`;
    await cacheApi.put(unreadable, new Response(bytes));
    await cacheApi.put(`${unreadable}?checksum`, new Response(`sha256:${sha256}`));
    const match = Cache.prototype.match;
    Cache.prototype.match = function (request, options) {
      if (String(request) !== unreadable) return match.call(this, request, options);
      let sent = false;
      const body = new ReadableStream({
        pull: (c) => (sent ? c.error(new Error('unreadable')) : ((sent = true), c.enqueue(bytes.slice(0, 1000)))),
      });
      return Promise.resolve(new Response(body));
    };
    let recovered;
    try {
      recovered = same((await load('test/unreadable')).run(ids).attentions);
    } finally {
      Cache.prototype.match = match;
    }
    const left = [];
    for await (const name of folder.keys()) left.push(name);
    const broken = {
      recovered,
      stillInCache: !!(await cacheApi.match(unreadable)),
      partial: left.some((n) => n.endsWith('.partial')),
    };
    return { downloaded, cached, refused, full, kept, downloads, whole, after, twice, moved, broken };
  } finally {
    restore.forEach((undo) => undo());
    restoreFetch();
    engine.dispose();
  }
}

/**
 * A model loaded from `files` on a new engine (the page's copy of them let go after), run on the ids: what it
 * holds after loading and after the run, with `options` for the run.
 * @param {Record<string, Uint8Array>} files @param {object} options
 */
async function loadAndRun(files, options) {
  const engine = await createEngine();
  const model = await engine.loadModel({ files });
  for (const name of Object.keys(files)) delete files[name]; // the model reads nothing more from them
  const loaded = MiB(engine.memory().heapBytes);
  const started = performance.now();
  const r = model.run(ids, { topK: 5, ...options });
  const report = {
    build: engine.info().build,
    weightsDtype: model.info.weightsDtype,
    weights: model.info.weights,
    shape: r.shape,
    finite: r.attentions.every(Number.isFinite) && r.predictions.probs.every(Number.isFinite),
    loadedMiB: loaded,
    ranMiB: MiB(engine.memory().heapBytes),
    runMs: Math.round(performance.now() - started),
  };
  engine.dispose();
  return report;
}

/** One report per language model: its shape's parameters, heap after load and after the run. */
async function languageModels(names) {
  const reports = {};
  for (const name of names) {
    const { params, files } = realShapeCheckpoint(name);
    reports[name] = { params, ...(await loadAndRun(files, {})) };
  }
  return reports;
}

/** One report per `name:type` GGUF, as languageModels reports, with the last layer's maps. */
async function ggufModels(list) {
  const reports = {};
  for (const entry of list) {
    const [name, type] = entry.split(':');
    const typeOf = type === 'Q4_K_M' ? q4KM(REAL_LAYERS[name]) : () => type;
    const { parameters, bytes } = realShapeGguf(name, typeOf, [['general.file_type', T.UINT32, FILE_TYPES[type]]]);
    const fileMiB = MiB(bytes.length);
    const report = await loadAndRun({ [`${name}-${type}.gguf`]: bytes }, { mapLayers: [REAL_LAYERS[name] - 1] });
    reports[entry] = { params: parameters, fileMiB, ...report };
  }
  return reports;
}
const REAL_LAYERS = { 'Llama-3.2-1B': 16, 'Qwen3-1.7B': 28, 'Gemma-2-2B': 26 };
const FILE_TYPES = { Q8_0: 7, Q4_K_M: 15 };

try {
  const [llm, gguf] = [query.get('llm'), query.get('gguf')];
  postMessage(llm ? await languageModels(llm.split(',')) : gguf ? await ggufModels(gguf.split(',')) : await bert());
} catch (err) {
  postMessage({ error: String(err) });
}
