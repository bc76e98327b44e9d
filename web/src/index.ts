/**
 * `attnscope`: self-attention in WebAssembly. This module is the package's
 * type contract; the `node` and `browser` entries implement it.
 * @packageDocumentation
 */
import type { CreateEngineOptions, Engine } from './types.js';

export type * from './types.js';

/** Creates an engine on a fresh WebAssembly instance. See the `node` and `browser` entries. */
export declare function createEngine(options?: CreateEngineOptions): Promise<Engine>;
