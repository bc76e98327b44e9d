/**
 * Browser entry of `attnscope` (pages and Web Workers). Picks the threaded
 * build when `SharedArrayBuffer` exists and the context is cross-origin
 * isolated; otherwise the single-threaded one. Compute in a Web Worker: the
 * threaded build blocks the calling thread while its pthreads work.
 * @packageDocumentation
 */
import { chooseBuild, relaxedSimdAvailable } from './builds.js';
import { bytesOf, openEngine } from './engine.js';
import pthreadWorker from './generated/pthread-worker.js';
import { BUILD_FILES, type ModuleFactory, type Platform } from './raw.js';
import type { CreateEngineOptions, Engine } from './types.js';

export type * from './types.js';

// Written out literally so that bundlers (Vite, webpack, Rollup) see and emit each file.
const FILES: Record<string, URL> = {
  'attnscope-mt-relaxed.js': new URL('./wasm/web/attnscope-mt-relaxed.js', import.meta.url),
  'attnscope-mt-relaxed.wasm': new URL('./wasm/web/attnscope-mt-relaxed.wasm', import.meta.url),
  'attnscope-st-relaxed.js': new URL('./wasm/web/attnscope-st-relaxed.js', import.meta.url),
  'attnscope-st-relaxed.wasm': new URL('./wasm/web/attnscope-st-relaxed.wasm', import.meta.url),
  'attnscope-mt.js': new URL('./wasm/web/attnscope-mt.js', import.meta.url),
  'attnscope-mt.wasm': new URL('./wasm/web/attnscope-mt.wasm', import.meta.url),
  'attnscope-st.js': new URL('./wasm/web/attnscope-st.js', import.meta.url),
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

// The embedded default model (web/models/convert-default.mjs), emitted as assets by bundlers.
const DEFAULT_MODEL: Record<string, URL> = {
  'config.json': new URL('./models/default/config.json', import.meta.url),
  'model.safetensors': new URL('./models/default/model.safetensors', import.meta.url),
  'vocab.json': new URL('./models/default/vocab.json', import.meta.url),
};

async function download(name: string, url: URL): Promise<Uint8Array> {
  const response = await fetch(url);
  if (!response.ok)
    throw new Error(`loadModel: ${name} could not be downloaded from ${url.href} (HTTP ${response.status})`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Hub downloads in the Cache API, where the page has it (secure contexts). */
const hubCache = {
  async open() {
    return typeof caches === 'undefined' ? undefined : caches.open('attnscope-hub-v1').catch(() => undefined);
  },
  async get(url: string) {
    const response = await (await this.open())?.match(url);
    return response ? new Uint8Array(await response.arrayBuffer()) : undefined;
  },
  async put(url: string, bytes: Uint8Array) {
    await (await this.open())?.put(url, new Response(bytes as Uint8Array<ArrayBuffer>)).catch(() => undefined);
  },
};

const platform: Platform = {
  hubCache,
  async defaultModel() {
    const entries = await Promise.all(Object.entries(DEFAULT_MODEL).map(async ([n, u]) => [n, await download(n, u)]));
    return Object.fromEntries(entries);
  },
  async read(op, name, value) {
    const bytes = await bytesOf(op, name, value);
    if (bytes) return bytes;
    throw new Error(`${op}: files["${name}"] is a string; in a browser give a File, Blob, ArrayBuffer or Uint8Array`);
  },
};

function threadsAvailable(): boolean {
  const g = globalThis as { crossOriginIsolated?: boolean };
  return typeof SharedArrayBuffer === 'function' && g.crossOriginIsolated !== false;
}

/** Creates an engine on a fresh WebAssembly instance. */
export async function createEngine(options: CreateEngineOptions = {}): Promise<Engine> {
  const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1;
  const { build, threads } = chooseBuild(options, Math.min(cores, 4), {
    threads: threadsAvailable(),
    relaxedSimd: relaxedSimdAvailable(),
  });
  const stem = BUILD_FILES[build];
  const workerUrl = build.endsWith('-threads') && !options.locateFile ? workerScriptUrl() : '';
  const locateFile =
    options.locateFile ??
    ((path: string) =>
      path === `${stem}.worker.js` ? workerUrl : (FILES[path] ?? new URL(path, import.meta.url)).href);
  // Absolute, because the pthread workers (on blob: URLs) import it by this URL.
  const glue = new URL(locateFile(`${stem}.js`, ''), location.href).href;
  // The glue is loaded by URL, not bundled: its pthread workers import that same URL.
  const factory = ((await import(/* @vite-ignore */ glue)) as { default: ModuleFactory }).default;
  try {
    return await openEngine(
      factory,
      { locateFile, mainScriptUrlOrBlob: glue, wasmBinary: options.wasmBinary },
      build,
      threads,
      platform,
    );
  } finally {
    if (workerUrl) URL.revokeObjectURL(workerUrl); // the pool's workers have all started by now
  }
}
