/**
 * `attnscope`: self-attention in WebAssembly. This module is the package's
 * type contract; the `node` and `browser` entries implement it.
 * @packageDocumentation
 */
import type { CreateEngineOptions, Engine } from './types.js';

export type * from './types.js';

/**
 * Creates an engine on a fresh WebAssembly instance, choosing one of the four builds: a threaded one when more than
 * one thread is wanted and `SharedArrayBuffer` exists (in a page: when it is cross-origin isolated), a relaxed-SIMD
 * one where the JavaScript engine validates relaxed SIMD. `info().build` says which, and `info().reason` why.
 * Node and browsers get their own implementation through the package's `exports` conditions.
 */
export declare function createEngine(options?: CreateEngineOptions): Promise<Engine>;
