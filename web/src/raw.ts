// The raw Emscripten module, typed. Internal: the public API is engine.ts.
import type { MemoryInfo } from './types.js';

/** A raw call's result: the outputs, or a message to throw. */
export type RawResult = { error: string } | Record<string, { data: Float32Array; shape: number[] }>;

export interface RawEngine {
  attention(q: unknown, k: unknown, v: unknown, options: object): RawResult;
  selfAttention(x: unknown, options: object): RawResult;
  multiHeadAttention(x: unknown, params: unknown, options: object): RawResult;
  memory(): MemoryInfo;
  threads(): number;
  delete(): void;
}

export interface RawModule {
  Engine: new (threads: number) => RawEngine;
  buildInfo(): { version: string; simd: boolean; pthreads: boolean; maxCallBytes: number };
  attnscopeWorkers(): Array<{ unref?: () => void; terminate(): void }>;
  attnscopeTerminateWorkers(): void;
}

/** What the Emscripten factory accepts (see INCOMING_MODULE_JS_API in CMakeLists.txt). */
export interface ModuleArgs {
  wasmBinary?: ArrayBuffer | Uint8Array;
  locateFile?: (path: string, prefix: string) => string;
  mainScriptUrlOrBlob?: string;
  /** Pthread workers started before the module resolves: threads − 1 (the caller computes too). */
  attnscopePoolSize?: number;
}

export type ModuleFactory = (args: ModuleArgs) => Promise<RawModule>;

/** The file stem of each build: `attnscope-mt.js`, `attnscope-mt.wasm`, ... */
export const BUILD_FILES = { 'simd-threads': 'attnscope-mt', simd: 'attnscope-st' } as const;
