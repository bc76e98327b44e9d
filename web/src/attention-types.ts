/**
 * AttnScope's public types for tensors, attention calls and engines. Every buffer is row-major;
 * every shape lists its dimensions outermost first, e.g. `[heads, n_q, n_k]`.
 * @packageDocumentation
 */

/** A row-major float tensor: `data.length` equals the product of `shape`. */
export interface Tensor {
  /** The values, row-major: the last dimension varies fastest. */
  data: Float32Array;
  /** The dimensions, outermost first, e.g. `[n, d]` or `[heads, n, d]`. */
  shape: number[];
}

/**
 * Which keys each query may see, shape `[n_q, n_k]` (shared by all heads) or `[heads, n_q, n_k]`.
 * A `Uint8Array` holds 1 = attend, 0 = hidden; a `Float32Array` is added to the scores
 * (use `-Infinity` to hide a key).
 */
export interface Mask {
  /** 1 = attend and 0 = hidden (`Uint8Array`), or values added to the scores (`Float32Array`), row-major. */
  data: Uint8Array | Float32Array;
  /** `[n_q, n_k]`, or `[heads, n_q, n_k]` for a mask per head. */
  shape: number[];
}

/** Options of {@link Engine.attention}. */
export interface AttentionOptions {
  /** Query i sees keys 0..i only (aligned at the start). Default false. */
  causal?: boolean;
  /** Keep-mask or additive mask; combined with `causal` when both are given. */
  mask?: Mask;
  /** Multiplies the scores before softmax. Default `1/√d_k` (1 for {@link Engine.selfAttention}). */
  scale?: number;
  /** Return the attention weights too. Default true; false skips the `[n_q, n_k]` output. */
  returnWeights?: boolean;
  /** Arrays to write the results into instead of new ones: see {@link ResultArrays}. */
  into?: ResultArrays;
}

/**
 * The caller's arrays for a call's results, reused from call to call on the same shapes: the result's `data` is
 * the array given, overwritten. Each must be a `Float32Array` of exactly the result's length, sharing no memory
 * with the other or with the call's inputs. Without them each call returns new arrays, and a new array of hundreds
 * of MB costs a first write to every page (at n = 4096 the weights are 805 MB). A call that throws may leave them partly overwritten: on one thread the weights are written
 * into `weights` as they are computed, and a one-shot call checks its projection weights as they pass through the
 * multiply (a NaN in `wo` is found after the attention weights are written).
 */
export interface ResultArrays {
  /** Written with the call's `output` and returned as its `data`. */
  output?: Float32Array;
  /** Written with the call's attention `weights` and returned as their `data`. */
  weights?: Float32Array;
}

/** Result of an attention call; `weights` is absent when `returnWeights: false`. */
export type AttentionResult<O extends { returnWeights?: boolean } = AttentionOptions> = O extends {
  returnWeights: false;
}
  ? { output: Tensor }
  : {
      /** `[n_q, d_v]`, or `[heads, n_q, d_v]` when the inputs carry a heads axis. */
      output: Tensor;
      /** Attention probabilities `[n_q, n_k]` or `[heads, n_q, n_k]`; each row sums to 1 (or is all 0 if fully hidden). */
      weights: Tensor;
    };

/** Projection weights of multi-head attention. Projections are `x·W (+ b)`; head h owns columns `h·d … (h+1)·d − 1`. */
export interface MultiHeadParams {
  /** `[d_model, heads·d_k]` */
  wq: Tensor;
  /** `[d_model, heads·d_k]` */
  wk: Tensor;
  /** `[d_model, heads·d_v]` */
  wv: Tensor;
  /** `[heads·d_v, d_model]` */
  wo: Tensor;
  /** `[heads·d_k]` */
  bq?: Tensor;
  /** `[heads·d_k]` */
  bk?: Tensor;
  /** `[heads·d_v]` */
  bv?: Tensor;
  /** `[d_model]` */
  bo?: Tensor;
}

/** Options of {@link Engine.multiHeadAttention}. */
export interface MultiHeadOptions {
  /** Number of heads; must divide the widths of `wq`, `wk` and `wv`. */
  heads: number;
  /** Query i sees keys 0..i only. Default false. */
  causal?: boolean;
  /** `[n, n_k]` or `[heads, n, n_k]`. */
  mask?: Mask;
  /** `[m, d_model]`: keys and values come from here (cross-attention). Default: `x` itself. */
  context?: Tensor;
  /** Default true. */
  returnWeights?: boolean;
  /** Also return each head's `q`, `k` and `v`. Default false. */
  returnProjections?: boolean;
  /** Arrays to write `output` and `weights` into instead of new ones: see {@link ResultArrays}. */
  into?: ResultArrays;
}

/** Result of {@link Engine.multiHeadAttention}. */
export type MultiHeadResult<O extends MultiHeadOptions = MultiHeadOptions> = {
  /** `[n, d_model]` */
  output: Tensor;
} & (O extends { returnWeights: false } ? unknown : { /** `[heads, n, n_k]` */ weights: Tensor }) &
  (O extends { returnProjections: true }
    ? {
        /** `[heads, n, d_k]` */
        q: Tensor;
        /** `[heads, n_k, d_k]` */
        k: Tensor;
        /** `[heads, n_k, d_v]` */
        v: Tensor;
      }
    : unknown);

/**
 * Multi-head attention whose weights stay in the engine between calls: read and checked once,
 * packed for the matrix multiply on first use. For running the same weights on many inputs.
 */
export interface MultiHeadLayer {
  /** As {@link Engine.multiHeadAttention} with this layer's weights and heads. */
  run<O extends Omit<MultiHeadOptions, 'heads'> = Omit<MultiHeadOptions, 'heads'>>(
    x: Tensor,
    options?: O,
  ): MultiHeadResult<O & { heads: number }>;
  /** Frees the weights. Later calls throw. */
  dispose(): void;
}

/** `x·w (+ b)` with `w` and `b` kept in the engine: checked once, packed for the matrix multiply on first use. */
export interface LinearLayer {
  /** `x` `[n, k]` → `[n, m]`. */
  run(x: Tensor): Tensor;
  /** Frees the weights. Later calls throw. */
  dispose(): void;
}

/**
 * The four builds the package ships: SIMD128 with pthreads or on one thread, each also with relaxed SIMD
 * (a fused multiply-add in the matrix-multiply kernel; Chrome and Edge 114+, Node 22+).
 */
export type BuildName = 'relaxed-simd-threads' | 'relaxed-simd' | 'simd-threads' | 'simd';

/** What {@link Engine.info} reports. */
export interface EngineInfo {
  /** The package's version, e.g. `0.1.0`. */
  version: string;
  /** Built with WebAssembly SIMD128. */
  simd: boolean;
  /** Built with relaxed SIMD: its matrix multiply uses a fused multiply-add where the CPU has one. */
  relaxedSimd: boolean;
  /** Threads the engine computes on, the calling thread included. */
  threads: number;
  /**
   * The build chosen at load time: `…-threads` needs `SharedArrayBuffer` (and cross-origin isolation in pages),
   * `relaxed-…` an engine with relaxed SIMD.
   */
  build: BuildName;
  /**
   * Why this build and thread count, for example: one thread, not 4 asked for: SharedArrayBuffer unavailable: the
   * page is not cross-origin isolated (…); relaxed SIMD validates in this JavaScript engine.
   */
  reason: string;
  /** The most memory one call may use; larger requests are refused with an Error. */
  maxCallBytes: number;
  /**
   * The wasm heap's limit: a model's weights, what the engine already holds and
   * {@link EngineInfo.runningRoomBytes} must fit it.
   */
  maxHeapBytes: number;
  /** What a model's weights must leave free of the heap for running; a model that would not is refused before loading. */
  runningRoomBytes: number;
}

/** Live wasm heap figures. */
export interface MemoryInfo {
  /** Size of the wasm memory. It grows on demand and never shrinks. */
  heapBytes: number;
  /** Bytes currently allocated by malloc: back to baseline after every call. */
  allocatedBytes: number;
  /** JS values the module holds handles to (embind's emval table): back to baseline after every call. */
  handles: number;
}

/** Options of {@link createEngine}. */
export interface CreateEngineOptions {
  /**
   * Threads to compute on (1–64). Default: the machine's cores, at most 4. 1 selects the single-threaded build.
   * More than one needs `SharedArrayBuffer` (in a page: cross-origin isolation); without it the engine runs on
   * one thread and says why in `info().reason`; on the console it warns once if you asked for more, and notes it
   * once (`console.info`, naming the headers) if the default wanted more.
   */
  threads?: number;
  /** Force a build instead of detecting features (`simd` or `simd-threads` to leave relaxed SIMD out). */
  build?: BuildName;
  /**
   * Maps a file name the module needs to a URL or path: the glue (`attnscope-mt.js` or `attnscope-st.js`, which
   * the relaxed builds share in browsers), the build's `.wasm` (`attnscope-mt-relaxed.wasm`, ...) and, for a
   * threaded build given this option in a browser, the pthread worker script `attnscope-mt.worker.js`.
   */
  locateFile?: (path: string, prefix: string) => string;
  /** The `.wasm` bytes, when you load them yourself. They must belong to the chosen build. */
  wasmBinary?: ArrayBuffer | Uint8Array;
}
