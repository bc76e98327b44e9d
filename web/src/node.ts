/**
 * Node entry of `attnscope`. Loads the CommonJS Emscripten glue with
 * createRequire and hands it the `.wasm` bytes read from disk (the glue's
 * fetch path does not work for files in Node).
 * @packageDocumentation
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

import { bytesOf, chooseBuild, openEngine } from './engine.js';
import { BUILD_FILES, DEFAULT_MODEL_FILES, type ModuleFactory, type Platform } from './raw.js';
import type { CreateEngineOptions, Engine } from './types.js';

export type * from './types.js';

const require = createRequire(import.meta.url);
const wasmDir = fileURLToPath(new URL('./wasm/node/', import.meta.url));
const defaultModelDir = fileURLToPath(new URL('./models/default/', import.meta.url));

/** Model files from disk: the embedded default, or paths given in `{ files }`. */
const platform: Platform = {
  async defaultModel() {
    const files: Record<string, Uint8Array> = {};
    for (const name of DEFAULT_MODEL_FILES) files[name] = await readFile(defaultModelDir + name);
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
 * `SharedArrayBuffer`, so more than one thread selects the `simd-threads` build.
 */
export async function createEngine(options: CreateEngineOptions = {}): Promise<Engine> {
  const { build, threads } = chooseBuild(
    options,
    Math.min(availableParallelism(), 4),
    typeof SharedArrayBuffer === 'function',
  );
  const stem = BUILD_FILES[build];
  const locateFile = options.locateFile ?? ((path: string) => wasmDir + path);
  const wasmBinary = options.wasmBinary ?? (await readFile(locateFile(`${stem}.wasm`, wasmDir)));
  const factory = require(wasmDir + `${stem}.js`) as ModuleFactory;
  return openEngine(factory, { wasmBinary, locateFile }, build, threads, platform, (module) => {
    // Idle pthread workers must not keep the process alive after the user is done.
    for (const worker of module.attnscopeWorkers()) worker.unref?.();
  });
}
