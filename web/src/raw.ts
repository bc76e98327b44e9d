// The raw Emscripten module, typed. Internal: the public API is engine.ts.
import type {
  AttentionOptions,
  FlowOptions,
  MemoryInfo,
  MultiHeadOptions,
  MultiHeadParams,
  RunOptions,
  Tensor,
} from './types.js';

/** A raw call's result: the outputs, or a message to throw. */
export type RawResult = { error: string } | Record<string, { data: Float32Array; shape: number[] }>;

export interface RawEngine {
  attention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions): RawResult;
  selfAttention(x: Tensor, options: AttentionOptions): RawResult;
  multiHeadAttention(x: Tensor, params: MultiHeadParams, options: MultiHeadOptions): RawResult;
  linear(x: Tensor, w: Tensor, b: Tensor | undefined): RawResult;
  memory(): Omit<MemoryInfo, 'handles'>;
  threads(): number;
  delete(): void;
}

/** One sequence of a raw run: the tokens of a map set's rows or columns. */
export interface RawSequence {
  name: 'text' | 'image' | 'source' | 'target' | 'audio';
  tokens: string[];
  special: boolean[];
  ids: Int32Array;
  totalTokens: number;
  truncated: boolean;
  /** An image's patch grid. */
  grid?: [number, number];
  /** Audio: the seconds of sound the window held. */
  seconds?: number;
}

/** One map set of a raw run: its sequences by their index in `sequences`. */
export interface RawMapSet {
  name: 'self' | 'encoder' | 'decoder' | 'cross';
  queries: number;
  keys: number;
  causal: boolean;
  attentions: Tensor;
  mapLayers: number[];
  kvHead: Int32Array;
  /** With `headSummaries`: `[held layers, heads, 6]`. */
  headSummaries?: Tensor;
  rollout?: Tensor;
  flow?: Tensor;
}

/** What one stack of a raw run computed besides its maps. */
export interface RawStack {
  name: 'encoder' | 'decoder';
  sequence: number;
  hidden: Tensor;
  q?: Tensor[];
  k?: Tensor[];
  v?: Tensor[];
  inputs?: Tensor[];
  tokenNorms?: Tensor;
}

/** A run as the bindings return it (cpp/bindings/results.cpp). */
export interface RawRun {
  sequences: RawSequence[];
  maps: RawMapSet[];
  stacks: RawStack[];
  embedding?: Float32Array;
  predictions?: import('./types.js').Predictions;
  logitLens?: import('./types.js').LogitLens;
  logits?: Tensor;
  reusedTokens?: number;
  pixels?: Tensor;
  features?: Tensor;
  imageEmbedding?: Float32Array;
  labelLogits?: Float32Array;
  labels?: import('./types.js').ImageLabel[];
}

/** What a raw run reads: text (normalized), ids, a source and a target, an image's RGBA bytes, or a model's input. */
export type RawInput =
  | { text: string }
  | { ids: Int32Array }
  | { source: string | Int32Array; target: string | Int32Array }
  | { image: { rgba: Uint8Array | Uint8ClampedArray; width: number; height: number } }
  | { pixels: Tensor }
  | { audio: Float32Array; target: string | Int32Array }
  | { features: Tensor; target: string | Int32Array };

/** What of a run's options changes the stream an explanation takes apart. */
export interface RawExplainOptions {
  attentionMask?: Uint8Array;
  ablateHeads?: Array<[number, number]>;
}

/** A source as the engine names it (cpp/bindings/results.cpp); `stack` is the sequence's index. */
export interface RawSource {
  kind: import('./types.js').SourceKind;
  stack: number;
  layer: number;
  head: number;
  position: number;
}

export interface RawScoreExplanation {
  querySources: RawSource[];
  keySources: RawSource[];
  terms: Float64Array;
  score: number;
  positionBias: number;
  softcap: number;
}

export interface RawLogitExplanation {
  sources: RawSource[];
  terms: Float64Array;
  logit: number;
  softcap: number;
}

export interface RawModelHandle {
  /** Weight files may be read in pieces (file-pieces.ts); the others are bytes. */
  load(files: Record<string, Uint8Array | import('./file-pieces.js').FilePieces>): { error?: string };
  info(): import('./types.js').ModelInfo & { normalization: string; tokenizer: boolean };
  tokenize(text: string, target: boolean): { error: string } | { tokens: string[]; ids: Int32Array };
  attentionWeights(layer: number): { error: string } | import('./types.js').MultiHeadParams;
  /** The one run (cpp/bindings/model_handle.cpp): `RunOptions` checked, with `attentionMask` as bytes. */
  run(
    engine: RawEngine,
    input: RawInput,
    options: Omit<RunOptions, 'attentionMask'> & { attentionMask?: Uint8Array },
  ): { error: string } | RawRun;
  /** A score or a logit of the run on `input` with `options` taken apart by its sources (explain-types.ts). */
  explainScore(
    engine: RawEngine,
    input: RawInput,
    options: RawExplainOptions,
    query: import('./types.js').ScoreQuery,
  ): { error: string } | RawScoreExplanation;
  explainLogit(
    engine: RawEngine,
    input: RawInput,
    options: RawExplainOptions,
    query: import('./types.js').LogitQuery,
  ): { error: string } | RawLogitExplanation;
  decode(ids: Int32Array, skipSpecial: boolean): { error: string } | { utf8: Uint8Array };
  labels(ids: Int32Array): { error: string } | string[];
  logits(engine: RawEngine, hidden: import('./types.js').Tensor): { error: string } | import('./types.js').Tensor;
  delete(): void;
}

/** A token a generation added, with its rows of the maps when kept (and of the cross-attention maps). */
export interface RawStep {
  id: number;
  token: string;
  rows?: Float32Array;
  crossRows?: Float32Array;
}

/** A generation in progress (cpp/bindings/generation_handle.cpp): the KV cache and the maps' rows. */
export interface RawGenerationHandle {
  start(
    model: RawModelHandle,
    engine: RawEngine,
    ids: Int32Array,
    seed: number,
    maps: 'none' | 'rows' | 'all',
  ): { error?: string };
  /**
   * An encoder-decoder's generation: the source (ids, or a speech model's audio or features) through the encoder,
   * once; the decoder starts from `target`. `encoderLayers`: the encoder layers whose maps 'all' keeps (every one
   * when undefined).
   */
  startPair(
    model: RawModelHandle,
    engine: RawEngine,
    source: Int32Array | { audio: Float32Array } | { features: Tensor },
    target: Int32Array,
    seed: number,
    maps: 'none' | 'rows' | 'all',
    encoderLayers: Int32Array | undefined,
  ): { error?: string };
  /** The logits after the last token, `[vocab]`. */
  logits(engine: RawEngine): { error: string } | Float32Array;
  /** log Σ exp of the next logits over the ids below `end` that `banned` does not name (−Infinity where none is left). */
  logSumExp(engine: RawEngine, banned: Int32Array, end: number): { error: string } | number;
  /** An encoder-decoder's beam search from `target`'s start tokens (no maps). */
  startBeams(
    model: RawModelHandle,
    engine: RawEngine,
    source: Int32Array | { audio: Float32Array } | { features: Tensor },
    target: Int32Array,
    options: {
      beams: number;
      lengthPenalty: number;
      noRepeatNgramSize: number;
      earlyStopping: boolean;
      maxLength: number;
      banned: Int32Array;
      /** Not generated first (Whisper's begin_suppress_tokens). */
      bannedFirst?: Int32Array;
      /**
       * The tokens a beam may not take next, from its ids and next logits (views of the heap, read during the call
       * only); must not throw.
       */
      filter?: (ids: Int32Array, logits: Float32Array) => Int32Array;
    },
  ): { error?: string };
  /** One more token on every beam: the leading beam's ids (the winner's once done). */
  beamStep(engine: RawEngine): { error: string } | { done: boolean; ids: Int32Array; ended: boolean };
  /** `into`: a Float32Array of exactly the rows' length to write them into, rather than a new one. */
  step(
    engine: RawEngine,
    sampling: { temperature: number; topK: number; topP: number; noRepeatNgramSize: number; banned: Int32Array },
    into?: Float32Array,
  ): { error: string } | RawStep;
  /** Appends a given (forced) token. */
  append(engine: RawEngine, id: number): { error: string } | RawStep;
  result():
    | { error: string }
    | {
        ids: Int32Array;
        tokens: string[];
        special: boolean[];
        reusedTokens: number;
        attentions?: { data: Float32Array; shape: number[] };
        /** Encoder-decoders: the source as the encoder ran it, and its maps when every row was kept. */
        source?: RawSequence;
        /** A speech model's: the log-mel features the encoder read. */
        features?: Tensor;
        encoder?: RawMapSet;
        /** Encoder-decoders that kept every row: the cross maps of the whole target. */
        cross?: { data: Float32Array; shape: number[] };
      };
  delete(): void;
}

export interface RawMultiHeadLayer {
  load(params: MultiHeadParams, options: { heads: number }): { error?: string };
  run(engine: RawEngine, x: Tensor, options: Omit<MultiHeadOptions, 'heads'>): RawResult;
  delete(): void;
}

export interface RawLinearLayer {
  load(w: Tensor, b: Tensor | undefined): { error?: string };
  run(engine: RawEngine, x: Tensor): RawResult;
  delete(): void;
}

export interface RawTokenizerHandle {
  load(files: Record<string, Uint8Array>): { error?: string };
  info(): { vocabSize: number; normalization: string };
  tokenize(text: string, target: boolean): { error: string } | { tokens: string[]; ids: Int32Array };
  decode(ids: Int32Array, skipSpecial: boolean): { error: string } | { utf8: Uint8Array };
  labels(ids: Int32Array): { error: string } | string[];
  delete(): void;
}

/** How an entry point reads model files on its platform. */
export interface Platform {
  /** The embedded default model's files, each reported to `onProgress` as it arrives. */
  defaultModel(onProgress?: (progress: import('./types.js').HubProgress) => void): Promise<Record<string, Uint8Array>>;
  /** Where Hub downloads go and are kept. */
  hubStorage: import('./hub.js').HubStorage;
  /** Bytes of one file value from a `{ files }` source; `op` names the call in errors. */
  read(op: string, name: string, value: Blob | ArrayBuffer | Uint8Array | string): Promise<Uint8Array>;
  /** A weight file's value from a `{ files }` source, read in pieces where the platform can (else undefined). */
  pieces(op: string, name: string, value: unknown): import('./file-pieces.js').FilePieces | undefined;
  /** Browsers: audio in a format other than WAV, decoded by the page (`decodeAudioData`), each channel at `rate`. */
  decodeAudio?(op: string, bytes: Uint8Array, rate: number): Promise<{ channels: Float32Array[]; sampleRate: number }>;
}

/** The analysis functions (cpp/bindings/analysis.cpp); tensors are `{ data, shape }`. */
export interface RawAnalysis {
  rollout(attentions: Tensor, options: FlowOptions): { error: string } | Tensor;
  attentionFlow(attentions: Tensor, options: FlowOptions): { error: string } | Tensor;
  headSummaries(attentions: Tensor, tokens: string[], special: number[]): { error: string } | Tensor;
  alignTokens(a: string[], b: string[]): { error: string } | { pairs: Int32Array };
  attentionChange(a: Tensor, b: Tensor, pairs: Int32Array): { error: string } | Tensor;
  cosineSimilarity(a: Tensor, b: Tensor): { error: string } | Tensor;
  toNpy(tensor: Tensor): { error: string } | { bytes: Uint8Array };
}

export interface RawModule extends RawAnalysis {
  Engine: new (threads: number) => RawEngine;
  ModelHandle: new () => RawModelHandle;
  GenerationHandle: new () => RawGenerationHandle;
  TokenizerHandle: new () => RawTokenizerHandle;
  MultiHeadLayer: new () => RawMultiHeadLayer;
  LinearLayer: new () => RawLinearLayer;
  buildInfo(): {
    version: string;
    simd: boolean;
    relaxedSimd: boolean;
    pthreads: boolean;
    maxCallBytes: number;
    /** The heap's limit, and what a model's weights must leave of it for running. */
    maxHeapBytes: number;
    runningRoomBytes: number;
  };
  /**
   * The heap a GGUF's weights take, from the first bytes (`head`) of its parts, or the bytes [0, needBytes) of part
   * `part` that a header runs into (gguf-heap.ts).
   */
  ggufWeightBytes(
    parts: Array<{ name: string; size: number; head: Uint8Array }>,
  ): { weightBytes: number } | { part: number; needBytes: number } | { error: string };
  /** The input checks' message templates, by kind (cpp/src/runtime/messages.cpp). */
  messages(): Record<string, string>;
  attnscopeWorkers(): Array<{ unref?: () => void; terminate(): void }>;
  count_emval_handles(): number;
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

/**
 * The embedded default model's files, made by web/models/convert-default.mjs: its weights in two shards
 * of at most 20 MiB each (the per-file limit of static hosts is 25 MiB). models/default.ts lists the same.
 */
export const DEFAULT_MODEL_FILES = [
  'config.json',
  'model.safetensors.index.json',
  'model-00001-of-00002.safetensors',
  'model-00002-of-00002.safetensors',
  'vocab.json',
] as const;

/** The file stem of each build: `attnscope-mt.js`, `attnscope-mt.wasm`, ... */
export const BUILD_FILES = {
  'relaxed-simd-threads': 'attnscope-mt-relaxed',
  'relaxed-simd': 'attnscope-st-relaxed',
  'simd-threads': 'attnscope-mt',
  simd: 'attnscope-st',
} as const;

/** A raw call's outputs, or its `{ error }` thrown as an Error. */
export function unwrap(result: RawResult): Record<string, Tensor> {
  if ('error' in result && typeof result.error === 'string') throw new Error(result.error);
  return result as Record<string, Tensor>;
}

/** The handle once `load` succeeded; on an error result, frees the handle and throws the error. */
export function loaded<H extends { delete(): void }>(handle: H, load: (h: H) => { error?: string }): H {
  const result = load(handle);
  if (typeof result.error === 'string') {
    handle.delete();
    throw new Error(result.error);
  }
  return handle;
}

/** Text C++ returned as UTF-8: decoded keeping a leading U+FEFF, which embind's own strings drop. */
export const utf8 = (bytes: Uint8Array) => new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);

/** `{ error }` thrown as an Error; anything else passed through. */
export function orThrow<T>(result: T | { error: string }): T {
  if (typeof result === 'object' && result !== null && 'error' in result && typeof result.error === 'string')
    throw new Error(result.error);
  return result as T;
}
