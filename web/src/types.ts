/**
 * AttnScope's public types. Every buffer is row-major; every shape lists its dimensions
 * outermost first, e.g. `[heads, n_q, n_k]`. Tensors and attention calls are in
 * attention-types.ts, models in model-types.ts; the engine that ties them together is here.
 * @packageDocumentation
 */
import type {
  AttentionOptions,
  AttentionResult,
  EngineInfo,
  LinearLayer,
  MemoryInfo,
  MultiHeadLayer,
  MultiHeadOptions,
  MultiHeadParams,
  MultiHeadResult,
  Tensor,
} from './attention-types.js';
import type {
  AttentionMaps,
  Comparison,
  DecodeAudioOptions,
  DecodedAudio,
  FlowOptions,
  HeadSummary,
  HubPlan,
  HubSource,
  MapSet,
  Model,
  ModelFiles,
  ModelSource,
  Tokenizer,
} from './model-types.js';

export type * from './attention-types.js';
export type * from './model-types.js';
export type * from './explain-types.js';

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
   * Defined on self-attention maps; cross-attention maps (a {@link MapSet} of kind `cross`, or maps that are not
   * square) are an Error saying why.
   */
  rollout(maps: Pick<AttentionMaps, 'attentions' | 'shape'> | MapSet, options?: FlowOptions): Tensor;
  /**
   * Attention flow (Abnar & Zuidema, 2020): the maximum flow from each of `rows` (default: every token) in the
   * last layer to each input token, through the graph of head-averaged maps. `[rows, n]`.
   * Work grows as rows·n³·layers; beyond 3·10⁸ it is refused, so ask for fewer rows on long inputs.
   * Self-attention maps only, as for rollout.
   */
  attentionFlow(
    maps: Pick<AttentionMaps, 'attentions' | 'shape'> | MapSet,
    options?: FlowOptions & { rows?: number[] },
  ): Tensor;
  /**
   * Every head's summary, layer by layer: a run's maps, or a self-attention {@link MapSet} (its distance, previous-token
   * and self measures are positions within one sequence, so a cross-attention set is an Error saying so).
   */
  headSummaries(maps: AttentionMaps | MapSet): HeadSummary[];
  /** Aligns two runs' tokens and measures each head's change (two sentences, or two models). */
  compare(a: AttentionMaps, b: AttentionMaps): Comparison;
  /** Cosine similarity of each row of two `[n, d]` tensors, e.g. hidden states with and without a head. */
  cosineSimilarity(a: Tensor, b: Tensor): Float32Array;
  /** A NumPy `.npy` file (float32, C order) holding the tensor with its shape. */
  toNpy(tensor: Tensor): Uint8Array;
  /**
   * Sound as a speech model hears it: mono float32 samples at `sampleRate` (default 16 kHz, Whisper's). WAV (integer
   * PCM of 8 to 32 bits, float of 32 or 64) everywhere; in browsers, any other format the browser decodes. Channels
   * are averaged and the rate changed with a windowed-sinc filter; `notices` says what was done and what was found
   * (resampled, mixed down, clipped, silent, a header longer than the file).
   */
  decodeAudio(bytes: Uint8Array | ArrayBuffer | Blob, options?: DecodeAudioOptions): Promise<DecodedAudio>;
  /** Keeps multi-head attention weights in the engine for repeated {@link MultiHeadLayer.run} calls. */
  multiHeadLayer(params: MultiHeadParams, options: { heads: number }): MultiHeadLayer;
  /** Keeps `w` `[k, m]` (and `b` `[m]`) in the engine for repeated {@link LinearLayer.run} calls. */
  linearLayer(w: Tensor, b?: Tensor): LinearLayer;
  /** `x·w (+ b)`: `x` `[n, k]`, `w` `[k, m]`, `b` `[m]` → `[n, m]`, with the engine's packed SIMD128 matrix multiply and threads. */
  linear(x: Tensor, w: Tensor, b?: Tensor): Tensor;
  /** Loads a model: the embedded default, or your own files. */
  loadModel(source: ModelSource): Promise<Model>;
  /**
   * What `loadModel({ hub })` would download, from the Hub's file list alone (and a sharded model's small index, or a
   * GGUF's header), and whether the model would fit this engine's heap now: so that a page can say what a model
   * costs before its weights download.
   *
   * ```ts
   * const plan = await engine.hubPlan({ hub: 'openai/whisper-tiny' });
   * plan.downloadBytes; plan.heapBytes; plan.fits; // 151 MB to download, ...
   * ```
   */
  hubPlan(source: Pick<HubSource, 'hub' | 'baseUrl' | 'revision' | 'file'>): Promise<HubPlan>;
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
