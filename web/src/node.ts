/**
 * Node entry of `attnscope`. Loads the CommonJS Emscripten glue with
 * createRequire and hands it the `.wasm` bytes read from disk (the glue's
 * fetch path does not work for files in Node).
 * @packageDocumentation
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, rmSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

import { chooseBuild, relaxedSimdAvailable } from './builds.js';
import { bytesOf, openEngine } from './engine.js';
import type { FilePieces } from './file-pieces.js';
import { type HubStorage, memorySpool, type Spool } from './hub.js';
import { BUILD_FILES, DEFAULT_MODEL_FILES, type ModuleFactory, type Platform } from './raw.js';
import type { CreateEngineOptions, Engine } from './types.js';

export type * from './types.js';

const require = createRequire(import.meta.url);
const wasmDir = fileURLToPath(new URL('./wasm/node/', import.meta.url));
const defaultModelDir = fileURLToPath(new URL('./models/default/', import.meta.url));

/** A file on disk read in pieces (the engine reads a tensor at a time); `unlink` removes it once closed. */
function diskPieces(path: string, unlink = false): FilePieces {
  const fd = openSync(path, 'r');
  const byteLength = fstatSync(fd).size;
  let open = true;
  return {
    byteLength,
    subarray(from, to) {
      if (!open || from < 0 || to > byteLength || from > to) return undefined;
      const piece = new Uint8Array(to - from);
      try {
        for (let at = 0; at < piece.length;) {
          const got = readSync(fd, piece, at, Math.min(piece.length - at, 2 ** 30), from + at);
          if (got === 0) return undefined; // the file shrank since it was opened
          at += got;
        }
      } catch {
        return undefined; // the engine says the file could not be read, naming it
      }
      return piece;
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
      if (unlink) rmSync(path, { force: true });
    },
  };
}

/**
 * A download written to a file as it arrives: in the cache's folder, renamed into place when finished and kept; or,
 * not kept (or where the cache's folder cannot be written), in the system's temporary folder, removed once the model
 * has read it. Where neither can be written, in memory.
 */
async function diskSpool(final: string, keep: boolean): Promise<Spool> {
  const name = `${basename(final)}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  const create = async (dir: string) => {
    await mkdir(dir, { recursive: true });
    const path = join(dir, name);
    return { path, file: await open(path, 'w') };
  };
  const kept = keep ? await create(dirname(final)).catch(() => undefined) : undefined;
  keep = !!kept;
  const opened = kept ?? (await create(tmpdir()).catch(() => undefined));
  if (!opened) return memorySpool();
  const { path, file } = opened;
  return {
    async write(chunk) {
      try {
        for (let at = 0; at < chunk.length;) at += (await file.write(chunk, at, chunk.length - at)).bytesWritten;
      } catch (err) {
        throw new Error(`loadModel: could not write the download to ${path}: ${(err as Error).message}`);
      }
    },
    async finish() {
      await file.close();
      if (!keep) return diskPieces(path, true);
      await rename(path, final);
      return diskPieces(final);
    },
    async discard() {
      await file.close().catch(() => undefined);
      await rm(path, { force: true });
    },
  };
}

/** Hub downloads, one file per URL, under $ATTNSCOPE_CACHE_DIR (default ~/.cache/attnscope). */
function cachePath(url: string): string {
  const dir = process.env.ATTNSCOPE_CACHE_DIR || join(homedir(), '.cache', 'attnscope');
  return join(dir, 'hub', createHash('sha256').update(url).digest('hex'));
}

const hubStorage: HubStorage = {
  async get(url: string) {
    try {
      return new Uint8Array(await readFile(cachePath(url)));
    } catch {
      return undefined;
    }
  },
  async getWeights(url: string) {
    try {
      return diskPieces(cachePath(url));
    } catch {
      return undefined;
    }
  },
  async put(url: string, bytes: Uint8Array) {
    const path = cachePath(url);
    try {
      await mkdir(dirname(path), { recursive: true });
      const partial = `${path}.${process.pid}.partial`; // renamed into place only when complete
      await writeFile(partial, bytes);
      await rename(partial, path);
    } catch {
      // A cache that cannot be written (read-only home, full disk) only costs a download next time.
    }
  },
  spool(url: string, keep: boolean) {
    return diskSpool(cachePath(url), keep);
  },
  hasher(algorithm: 'sha256' | 'sha1') {
    const hash = createHash(algorithm);
    return { update: (bytes: Uint8Array) => void hash.update(bytes), hex: () => hash.digest('hex') };
  },
};

/** Model files from disk: the embedded default, or paths given in `{ files }`. */
const platform: Platform = {
  hubStorage,
  async defaultModel(onProgress) {
    const files: Record<string, Uint8Array> = {};
    for (const name of DEFAULT_MODEL_FILES) {
      const bytes = (files[name] = await readFile(defaultModelDir + name));
      onProgress?.({ file: name, loaded: bytes.length, total: bytes.length, cached: true });
    }
    return files;
  },
  pieces(op, name, value) {
    if (typeof value !== 'string') return undefined;
    try {
      return diskPieces(value);
    } catch (err) {
      throw new Error(`${op}: cannot read files["${name}"] from ${value}: ${(err as Error).message}`);
    }
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
