/**
 * Node entry of `attnscope`. Loads the CommonJS Emscripten glue with
 * createRequire and hands it the `.wasm` bytes read from disk (the glue's
 * fetch path does not work for files in Node).
 * @packageDocumentation
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

import { chooseBuild, relaxedSimdAvailable } from './builds.js';
import { bytesOf, openEngine } from './engine.js';
import { BUILD_FILES, DEFAULT_MODEL_FILES, type ModuleFactory, type Platform } from './raw.js';
import type { CreateEngineOptions, Engine } from './types.js';

export type * from './types.js';

const require = createRequire(import.meta.url);
const wasmDir = fileURLToPath(new URL('./wasm/node/', import.meta.url));
const defaultModelDir = fileURLToPath(new URL('./models/default/', import.meta.url));

/** Hub downloads, one file per URL, under $ATTNSCOPE_CACHE_DIR (default ~/.cache/attnscope). */
const hubCache = {
  path(url: string) {
    const dir = process.env.ATTNSCOPE_CACHE_DIR || join(homedir(), '.cache', 'attnscope');
    return join(dir, 'hub', createHash('sha256').update(url).digest('hex'));
  },
  async get(url: string) {
    try {
      return new Uint8Array(await readFile(this.path(url)));
    } catch {
      return undefined;
    }
  },
  async put(url: string, bytes: Uint8Array) {
    const path = this.path(url);
    try {
      await mkdir(join(path, '..'), { recursive: true });
      const partial = `${path}.${process.pid}.partial`; // renamed into place only when complete
      await writeFile(partial, bytes);
      await rename(partial, path);
    } catch {
      // A cache that cannot be written (read-only home, full disk) only costs a download next time.
    }
  },
};

/** Model files from disk: the embedded default, or paths given in `{ files }`. */
const platform: Platform = {
  hubCache,
  async defaultModel(onProgress) {
    const files: Record<string, Uint8Array> = {};
    for (const name of DEFAULT_MODEL_FILES) {
      const bytes = (files[name] = await readFile(defaultModelDir + name));
      onProgress?.({ file: name, loaded: bytes.length, total: bytes.length, cached: true });
    }
    return files;
  },
  async read(op, name, value) {
    const bytes = await bytesOf(op, name, value);
    if (bytes) return bytes;
    try {
      return await readFile(value as string);
    } catch (err) {
      throw new Error(`${op}: cannot read files["${name}"] from ${String(value)}: ${(err as Error).message}`);
    }
  },
};

/**
 * Creates an engine on a fresh WebAssembly instance. Node always has
 * `SharedArrayBuffer`, so more than one thread selects a `…-threads` build;
 * Node 22+ (or 20 with `--experimental-wasm-relaxed-simd`) a `relaxed-…` one.
 */
export async function createEngine(options: CreateEngineOptions = {}): Promise<Engine> {
  const available = {
    threads: typeof SharedArrayBuffer === 'function' || 'SharedArrayBuffer unavailable in this JavaScript engine',
    relaxedSimd: relaxedSimdAvailable(),
  } as const;
  const choice = chooseBuild(options, Math.min(availableParallelism(), 4), available);
  const stem = BUILD_FILES[choice.build];
  const locateFile = options.locateFile ?? ((path: string) => wasmDir + path);
  const wasmBinary = options.wasmBinary ?? (await readFile(locateFile(`${stem}.wasm`, wasmDir)));
  const factory = require(wasmDir + `${stem}.js`) as ModuleFactory;
  return openEngine(factory, { wasmBinary, locateFile }, choice, platform, (module) => {
    // Idle pthread workers must not keep the process alive after the user is done.
    for (const worker of module.attnscopeWorkers()) worker.unref?.();
  });
}
