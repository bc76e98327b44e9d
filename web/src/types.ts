/**
 * AttnScope's public types. Every buffer is row-major; every shape lists its
 * dimensions outermost first, e.g. `[heads, n_q, n_k]`.
 * @packageDocumentation
 */

/** A row-major float tensor: `data.length` equals the product of `shape`. */
export interface Tensor {
  data: Float32Array;
  shape: number[];
}

/**
 * Which keys each query may see, shape `[n_q, n_k]` (shared by all heads) or `[heads, n_q, n_k]`.
 * A `Uint8Array` holds 1 = attend, 0 = hidden; a `Float32Array` is added to the scores
 * (use `-Infinity` to hide a key).
 */
export interface Mask {
  data: Uint8Array | Float32Array;
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
  causal?: boolean;
  /** `[n, n_k]` or `[heads, n, n_k]`. */
  mask?: Mask;
  /** `[m, d_model]`: keys and values come from here (cross-attention). Default: `x` itself. */
  context?: Tensor;
  /** Default true. */
  returnWeights?: boolean;
  /** Also return each head's `q`, `k` and `v`. Default false. */
  returnProjections?: boolean;
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
  /** The most memory one call may use; larger requests are refused with an Error. */
  maxCallBytes: number;
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
  /** Threads to compute on (1–64). Default: the machine's cores, at most 4. 1 selects the single-threaded build. */
  threads?: number;
  /** Force a build instead of detecting features (`simd` or `simd-threads` to leave relaxed SIMD out). */
  build?: BuildName;
  /** Maps a file name the module needs (`attnscope-mt.wasm`, `attnscope-mt.worker.js`, ...) to a URL or path. */
  locateFile?: (path: string, prefix: string) => string;
  /** The `.wasm` bytes, when you load them yourself. They must belong to the chosen build. */
  wasmBinary?: ArrayBuffer | Uint8Array;
}

/** What {@link Model.info} reports. */
export interface ModelInfo {
  name: string;
  /** config.json's `architectures[0]`, e.g. `UniversalSentenceEncoderLite`. */
  architecture: string;
  layers: number;
  heads: number;
  dModel: number;
  /** Longer inputs are truncated to this many tokens (and the result says so). */
  maxTokens: number;
  vocabSize: number;
}

/** A model's files. Values are bytes, or (in Node) paths to read. */
export type ModelFiles = Record<string, Blob | ArrayBuffer | Uint8Array | string>;

/** Progress of a Hub download, reported per file as bytes arrive. */
export interface HubProgress {
  file: string;
  loaded: number;
  /** From the Hub's file list, or the server's content-length. */
  total?: number;
  /** Served from the cache (Cache API in browsers, a folder in Node) without downloading. */
  cached: boolean;
}

/** A model on the Hugging Face Hub, or a server with its URL layout. */
export interface HubSource {
  /** A model id, e.g. `bert-base-uncased` or `sentence-transformers/all-MiniLM-L6-v2`. */
  hub: string;
  /** Default `https://huggingface.co`; files are fetched from `<baseUrl>/<id>/resolve/<revision>/<file>`. */
  baseUrl?: string;
  /** Branch, tag or commit. Default `main`. */
  revision?: string;
  onProgress?: (progress: HubProgress) => void;
  /** Keep and reuse downloads (Cache API in browsers; $ATTNSCOPE_CACHE_DIR or ~/.cache/attnscope in Node). Default true. */
  cache?: boolean;
  /**
   * Check every file against the size and checksum (SHA-256 for LFS files, the git blob id for others)
   * in the Hub's file list, `<baseUrl>/api/models/<id>/revision/<revision>?blobs=true`. Default true;
   * false skips the list, for servers that have only the `resolve` layout.
   */
  verify?: boolean;
}

/** Where {@link Engine.loadModel} gets a model. */
export type ModelSource =
  /** The embedded Universal Sentence Encoder lite (2 layers × 4 heads), offline. */
  | 'default'
  /** config.json, model.safetensors and the tokenizer's files (e.g. vocab.json). */
  | { files: ModelFiles }
  /** Downloaded from the Hugging Face Hub and cached. */
  | HubSource;

/** Options of {@link Model.run}. */
export interface RunOptions {
  /** Also return every layer's per-head q, k and v. Default false. */
  returnProjections?: boolean;
  /**
   * One entry per token (after special tokens are added), 1 = real, 0 = padding: padding
   * keys are hidden from every query in every layer. Default: every token is real.
   */
  attentionMask?: ArrayLike<number>;
  /**
   * Head ablation: `[layer, head]` pairs (from 0) whose outputs are zeroed before the
   * output projection, so the rest of the model runs without them.
   */
  ablateHeads?: Array<[number, number]>;
}

/** What {@link Model.run} returns. `n` is the number of tokens after truncation. */
export interface ModelRunResult {
  /** The tokens as the tokenizer split the text, special tokens included. */
  tokens: string[];
  /** Per token: is it a special token (`[CLS]`, `[SEP]`, `<|endoftext|>`, ...)? */
  special: boolean[];
  ids: Int32Array;
  /** Every layer's and head's attention weights, `shape` = [layers, heads, n, n]. */
  attentions: Float32Array;
  shape: [number, number, number, number];
  /** Last hidden state `[n, dModel]`. */
  hidden: Tensor;
  /** Pooled sentence embedding, where the model defines one. */
  embedding?: Float32Array;
  /** Tokens before truncation; `truncated` is true when it exceeds `maxTokens`. */
  totalTokens: number;
  truncated: boolean;
  /** Per layer: `[heads, n, d_k]`, `[heads, n, d_k]`, `[heads, n, d_v]`, with `returnProjections`. */
  q?: Tensor[];
  k?: Tensor[];
  v?: Tensor[];
  /** Per layer: X `[n, d_in]`, the matrix the projections multiply (after LayerNorm in pre-LN models), with `returnProjections`. */
  inputs?: Tensor[];
}

/**
 * A run's attention maps: a {@link ModelRunResult} is one. `attentions` is
 * `[layers, heads, n, n]`; row i of a map is how token i spreads its attention.
 */
export interface AttentionMaps {
  attentions: Float32Array;
  shape: readonly number[];
  tokens: readonly string[];
  /** Which tokens are special (`[CLS]`, `[SEP]`, ...); the first token always counts as special. */
  special?: readonly boolean[];
}

/** Options of {@link Engine.rollout} and {@link Engine.attentionFlow}. */
export interface FlowOptions {
  /** Add the identity for the residual connection, `Â = (A + I) / 2`, as Abnar & Zuidema do. Default true. */
  residual?: boolean;
}

/** What one head does, each measure averaged over its query tokens. */
export interface HeadSummary {
  layer: number;
  head: number;
  /** `−Σ p·ln p` in nats: 0 when a head looks at one token, `ln n` when it looks everywhere alike. */
  entropy: number;
  /** `Σ p·|i − j|`: how many tokens away it looks. */
  distance: number;
  /** Weight on the previous token (over tokens 1…n−1). */
  previous: number;
  /** Weight on the token itself. */
  self: number;
  /** Weight on special tokens (`[CLS]`, `[SEP]`, ...) and the first token. */
  special: number;
  /** Weight on tokens made only of punctuation. */
  punctuation: number;
}

/** Two runs side by side: which tokens align, and how far each head's maps moved. */
export interface Comparison {
  /** Aligned positions `[i in a, j in b]`: a longest common subsequence of the tokens (markers such as `##`, `▁`, `Ġ` and ASCII case ignored). */
  pairs: Array<[number, number]>;
  /** Positions in a and in b that have no counterpart. */
  unaligned: { a: number[]; b: number[] };
  /**
   * `[layers, heads]`: per head, the total variation distance between the maps over aligned tokens (0 = the same,
   * 1 = entirely different), when both runs have the same layers × heads.
   */
  change?: Tensor;
  /** Why a part of the comparison is missing (nothing aligns, different layer × head counts). */
  message?: string;
  /** `a − b` for one layer and head, over the aligned tokens: `[pairs, pairs]`. */
  difference(layer: number, head: number): Tensor;
}

/** A loaded transformer model; runs on the engine that loaded it. */
export interface Model {
  readonly info: ModelInfo;
  /** The tokens and ids the model's tokenizer gives, special tokens included, before any truncation. */
  tokenize(text: string): { tokens: string[]; ids: Int32Array };
  /**
   * Tokenizes, truncates to `info.maxTokens` and runs, keeping every attention map.
   * Given token ids instead of text, runs on them as they are.
   */
  run(input: string | ArrayLike<number>, options?: RunOptions): ModelRunResult;
  /**
   * Layer `layer`'s attention weights in the `x·W` layout: `wq`, `wk` `[d_in, heads·d_k]`, `wv` `[d_in, heads·d_v]`,
   * `wo` `[heads·d_v, d_out]`, and biases where the model has them. Head h owns columns `h·d … (h+1)·d − 1`.
   */
  attentionWeights(layer: number): MultiHeadParams;
  /** Frees the model's weights. Later calls throw. */
  dispose(): void;
}

/** A tokenizer on its own, read from a model's tokenizer files. */
export interface Tokenizer {
  readonly info: { vocabSize: number };
  /** The tokens and ids, special tokens included. */
  tokenize(text: string): { tokens: string[]; ids: Int32Array };
  dispose(): void;
}

/** An attention engine backed by one WebAssembly instance. */
export interface Engine {
  /** Version, SIMD, thread count and the build in use. */
  info(): EngineInfo;
  /** `softmax(q kᵀ · scale + mask) v`. Inputs are `[n, d]` or `[heads, n, d]`. */
  attention<O extends AttentionOptions = AttentionOptions>(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    options?: O,
  ): AttentionResult<O>;
  /** The parameter-free `softmax(X Xᵀ · scale) X`, with `scale` defaulting to 1. */
  selfAttention<O extends AttentionOptions = AttentionOptions>(x: Tensor, options?: O): AttentionResult<O>;
  /** Multi-head attention with learned projections: `concat_h(attention(x W_Q,h, c W_K,h, c W_V,h)) W_O`. */
  multiHeadAttention<O extends MultiHeadOptions>(x: Tensor, params: MultiHeadParams, options: O): MultiHeadResult<O>;
  /**
   * Attention rollout (Abnar & Zuidema, 2020): heads averaged, layers multiplied,
   * `[layers, n, n]`; entry l covers layers 0…l, and its row i sums to 1 over the input tokens.
   */
  rollout(maps: Pick<AttentionMaps, 'attentions' | 'shape'>, options?: FlowOptions): Tensor;
  /**
   * Attention flow (Abnar & Zuidema, 2020): the maximum flow from each of `rows` (default: every token) in the
   * last layer to each input token, through the graph of head-averaged maps. `[rows, n]`.
   * Work grows as rows·n³·layers; beyond 3·10⁸ it is refused, so ask for fewer rows on long inputs.
   */
  attentionFlow(maps: Pick<AttentionMaps, 'attentions' | 'shape'>, options?: FlowOptions & { rows?: number[] }): Tensor;
  /** Every head's summary, layer by layer. */
  headSummaries(maps: AttentionMaps): HeadSummary[];
  /** Aligns two runs' tokens and measures each head's change (two sentences, or two models). */
  compare(a: AttentionMaps, b: AttentionMaps): Comparison;
  /** Cosine similarity of each row of two `[n, d]` tensors, e.g. hidden states with and without a head. */
  cosineSimilarity(a: Tensor, b: Tensor): Float32Array;
  /** A NumPy `.npy` file (float32, C order) holding the tensor with its shape. */
  toNpy(tensor: Tensor): Uint8Array;
  /** Keeps multi-head attention weights in the engine for repeated {@link MultiHeadLayer.run} calls. */
  multiHeadLayer(params: MultiHeadParams, options: { heads: number }): MultiHeadLayer;
  /** Keeps `w` `[k, m]` (and `b` `[m]`) in the engine for repeated {@link LinearLayer.run} calls. */
  linearLayer(w: Tensor, b?: Tensor): LinearLayer;
  /** `x·w (+ b)`: `x` `[n, k]`, `w` `[k, m]`, `b` `[m]` → `[n, m]`, with the engine's packed SIMD128 matrix multiply and threads. */
  linear(x: Tensor, w: Tensor, b?: Tensor): Tensor;
  /**
   * For benchmarks: the GFLOPS of the engine's 4 × 8 SIMD128 micro-kernel on one thread with its operands in L1
   * cache, measured now for about 0.3 s. Matrix multiplies are measured against it.
   */
  kernelPeak(): number;
  /** Loads a model: the embedded default, or your own files. */
  loadModel(source: ModelSource): Promise<Model>;
  /**
   * Loads only a tokenizer: `{ files: { 'vocab.json', 'merges.txt' } }` (GPT-2 byte-level BPE), or
   * the default model's SentencePiece `vocab.json`.
   */
  loadTokenizer(source: { files: ModelFiles }): Promise<Tokenizer>;
  /** Live heap figures. */
  memory(): MemoryInfo;
  /** Frees the wasm instance and stops its threads. Later calls throw. */
  dispose(): void;
}
