/**
 * Browser entry of `attnscope` (pages and Web Workers). Picks the threaded
 * build when `SharedArrayBuffer` exists and the context is cross-origin
 * isolated; otherwise the single-threaded one. Compute in a Web Worker: the
 * threaded build blocks the calling thread while its pthreads work.
 * @packageDocumentation
 */
import { chooseBuild, infoOnce, relaxedSimdAvailable, warnOnce } from './builds.js';
import { defaultModelUrls } from './default-model.js';
import { bytesOf, openEngine } from './engine.js';
import { browserStorage } from './browser-storage.js';
import { filePieces } from './file-pieces.js';
import { readBody } from './hub.js';
import pthreadWorker from './generated/pthread-worker.js';
import { BUILD_FILES, type ModuleFactory, type Platform } from './raw.js';
import type { CreateEngineOptions, Engine, HubProgress } from './types.js';

export type * from './types.js';

// Written out literally so that bundlers (Vite, webpack, Rollup) see and emit each file. The relaxed builds
// share the glue of their SIMD128 twins: the two differ only in the file names they ask for (.ci/build-wasm
// checks), so bundlers emit two glue scripts, not four.
const FILES: Record<string, URL> = {
  'attnscope-mt.js': new URL('./wasm/web/attnscope-mt.js', import.meta.url),
  'attnscope-st.js': new URL('./wasm/web/attnscope-st.js', import.meta.url),
  'attnscope-mt-relaxed.wasm': new URL('./wasm/web/attnscope-mt-relaxed.wasm', import.meta.url),
  'attnscope-st-relaxed.wasm': new URL('./wasm/web/attnscope-st-relaxed.wasm', import.meta.url),
  'attnscope-mt.wasm': new URL('./wasm/web/attnscope-mt.wasm', import.meta.url),
  'attnscope-st.wasm': new URL('./wasm/web/attnscope-st.wasm', import.meta.url),
};
/**
 * A blob: URL running Emscripten's pthread worker script. Served as a file, the
 * script would be at the mercy of bundlers and dev servers (Vite's dev server
 * rewrites its dynamic import(); its build inlines small files as data: URLs,
 * which a Worker cannot share memory from). A string compiled into this module
 * survives both.
 */
function workerScriptUrl(): string {
  return URL.createObjectURL(new Blob([pthreadWorker], { type: 'text/javascript' }));
}

/**
 * One of the default model's files, reported as its bytes arrive. Its content-length is its size unless the server
 * compressed it (the JSON files often are): then `total` stays unknown until the file's last call.
 */
async function download(name: string, url: URL, onProgress?: (progress: HubProgress) => void): Promise<Uint8Array> {
  const response = await fetch(url);
  if (!response.ok)
    throw new Error(`loadModel: ${name} could not be downloaded from ${url.href} (HTTP ${response.status})`);
  if (!onProgress) return new Uint8Array(await response.arrayBuffer());
  const header = response.headers.get('content-length');
  const encoding = response.headers.get('content-encoding');
  const announced = header !== null && /^\d+$/.test(header) && (!encoding || encoding === 'identity');
  const total = announced ? Number(header) : undefined;
  let last = -1;
  const bytes = await readBody(response, name, total, (loaded) => {
    last = loaded;
    onProgress({
      file: name,
      loaded,
      total: total !== undefined && loaded <= total ? total : undefined,
      cached: false,
    });
  });
  // Every file ends on loaded === total, whatever the headers said (and an empty file is reported once).
  if (last !== bytes.length || total !== bytes.length)
    onProgress({ file: name, loaded: bytes.length, total: bytes.length, cached: false });
  return bytes;
}

const platform: Platform = {
  hubStorage: browserStorage,
  pieces: (_op, _name, value) => (value instanceof Blob ? filePieces(value) : undefined),
  async defaultModel(onProgress) {
    const urls = defaultModelUrls();
    if (!urls)
      throw new Error(
        "loadModel: the default model is opt-in in browsers: add import 'attnscope/models/default' to your app " +
          '(your bundler then emits its files, 28 MB)',
      );
    const entries = await Promise.all(
      Object.entries(urls).map(async ([n, u]) => [n, await download(n, u, onProgress)]),
    );
    return Object.fromEntries(entries);
  },
  async read(op, name, value) {
    const bytes = await bytesOf(op, name, value);
    if (bytes) return bytes;
    throw new Error(`${op}: files["${name}"] is a string; in a browser give a File, Blob, ArrayBuffer or Uint8Array`);
  },
  // Any format the browser decodes: decodeAudioData resamples to its context's rate, and an OfflineAudioContext
  // decodes without asking for the speakers (where there is none, as in a worker, this says so).
  async decodeAudio(op, bytes, rate) {
    if (typeof OfflineAudioContext === 'undefined')
      throw new Error(`${op}: this is not a WAV file, and this context cannot decode other formats (no Web Audio)`);
    const context = new OfflineAudioContext(1, 1, rate);
    let buffer: AudioBuffer;
    try {
      buffer = await context.decodeAudioData(bytes.slice().buffer);
    } catch (err) {
      throw new Error(`${op}: the browser could not decode this file as audio (${(err as Error).message})`);
    }
    const channels = Array.from({ length: buffer.numberOfChannels }, (_, c) => buffer.getChannelData(c));
    return { channels, sampleRate: buffer.sampleRate };
  },
};

/** True, or why this context cannot have threads. */
function threadsAvailable(): true | string {
  const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated;
  if (typeof SharedArrayBuffer === 'function' && isolated !== false) return true;
  return isolated === false
    ? 'SharedArrayBuffer unavailable: the page is not cross-origin isolated (it needs the headers ' +
        'Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)'
    : 'SharedArrayBuffer unavailable in this JavaScript engine';
}

/** Creates an engine on a fresh WebAssembly instance. */
export async function createEngine(options: CreateEngineOptions = {}): Promise<Engine> {
  const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1;
  const available = { threads: threadsAvailable(), relaxedSimd: relaxedSimdAvailable() };
  const { build, threads, reason, refused, defaultRefused } = chooseBuild(options, Math.min(cores, 4), available);
  if (refused)
    warnOnce('threads', `${refused} threads were asked for, but this engine runs on one: ${String(available.threads)}`);
  // Not an error (the single-threaded build gives the same numbers), but slower, and otherwise only in info().reason.
  if (defaultRefused)
    infoOnce(
      'default threads',
      `engines here run on one thread, not the ${defaultRefused} they would by default: ${String(available.threads)}. ` +
        'Pass { threads: 1 } to choose one thread and not see this note.',
    );
  const threaded = build.endsWith('-threads');
  if (threaded && typeof document !== 'undefined')
    warnOnce(
      'main thread',
      `the threaded build '${build}' was created on the page's main thread, which each call blocks while the ` +
        'threads work (and dispose() waits for them); create engines in a Web Worker, or pass { threads: 1 }',
    );
  const stem = BUILD_FILES[build];
  const glueStem = stem.replace('-relaxed', ''); // the glue asks for its own .wasm name; this build's is `${stem}.wasm`
  const workerUrl = threaded && !options.locateFile ? workerScriptUrl() : '';
  const locate = options.locateFile ?? ((path: string) => (FILES[path] ?? new URL(path, import.meta.url)).href);
  const locateFile = (path: string, prefix: string) =>
    path === `${glueStem}.wasm`
      ? locate(`${stem}.wasm`, prefix)
      : path === `${glueStem}.worker.js` && workerUrl
        ? workerUrl
        : locate(path, prefix);
  // Absolute, because the pthread workers (on blob: URLs) import it by this URL.
  const glue = new URL(locateFile(`${glueStem}.js`, ''), location.href).href;
  // The glue is loaded by URL, not bundled: its pthread workers import that same URL.
  const factory = ((await import(/* @vite-ignore */ glue)) as { default: ModuleFactory }).default;
  try {
    return await openEngine(
      factory,
      { locateFile, mainScriptUrlOrBlob: glue, wasmBinary: options.wasmBinary },
      { build, threads, reason },
      platform,
    );
  } finally {
    if (workerUrl) URL.revokeObjectURL(workerUrl); // the pool's workers have all started by now
  }
}
