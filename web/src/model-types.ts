/**
 * AttnScope's public types for models: loading, running, reading their maps, and generating text.
 * @packageDocumentation
 */
import type { MultiHeadParams, Tensor } from './attention-types.js';
import type { LogitExplanation, LogitQuery, ScoreExplanation, ScoreQuery } from './explain-types.js';

/** One stack of the transformer block, as {@link ModelInfo.stacks} lists them. */
export interface StackInfo {
  /** `encoder` (bidirectional) or `decoder` (causal; an encoder-decoder's reads the encoder through cross-attention). */
  name: 'encoder' | 'decoder';
  /** Its blocks. */
  layers: number;
  /** Query heads per layer. */
  heads: number;
  /** Key/value heads (fewer than `heads` under grouped-query attention). */
  kvHeads: number;
  /** `d_k` (= `d_v`) of every head. */
  headDim: number;
  /** The longest sequence it runs: a longer one is truncated (and the result says so). */
  maxTokens: number;
  /** A token sees only itself and the tokens before it. */
  causal: boolean;
  /** Per layer: 0 for full attention, else the width of its sliding window. */
  window: number[];
}

/**
 * How a speech model hears (Whisper's feature extractor, `preprocessor_config.json`): mono audio at `samplingRate`,
 * read in windows of `windowSamples` (30 s), each a log-mel spectrogram `[melBins, frames]` (a frame every
 * `hopLength` samples: 10 ms), which two convolutions halve to the encoder's `positions` (20 ms each).
 */
export interface AudioInfo {
  /** The rate it hears, in Hz (16,000 for Whisper). */
  samplingRate: number;
  /** Mel bins of its features: 80, or 128 (large-v3). */
  melBins: number;
  /** Samples each frame's FFT reads (400: 25 ms). */
  nFft: number;
  /** Samples between frames (160: 10 ms). */
  hopLength: number;
  /** Samples a window holds (480,000: 30 s). */
  windowSamples: number;
  /** A window's log-mel frames (3,000). */
  frames: number;
  /** The encoder's positions: frames halved by the second convolution (1,500: 20 ms each). */
  positions: number;
}

/** Options of {@link Engine.decodeAudio}. */
export interface DecodeAudioOptions {
  /** The rate to return the samples at, in Hz. Default 16000 (Whisper's). */
  sampleRate?: number;
}

/** Sound as {@link Engine.decodeAudio} returns it. */
export interface DecodedAudio {
  /** Mono samples in [-1, 1] at `sampleRate`. */
  samples: Float32Array;
  /** The rate of `samples`, in Hz: the one asked for. */
  sampleRate: number;
  /** `samples.length / sampleRate`. */
  seconds: number;
  /** What the file held: its format, rate and channels. */
  source: { format: string; sampleRate: number; channels: number };
  /** What was done to it and what was found: resampled, mixed down, clipped, silent, cut short. */
  notices: string[];
}

/**
 * How a vision model's engine turns an image's pixels into its input, after its resize and crop: per channel,
 * `v = (p · rescale − mean) / std`. Undo it to draw the model's input ({@link ImageRunResult.pixels}) as a picture.
 */
export interface ImageNormalization {
  /** The image processor class whose rules apply, e.g. `ViTImageProcessor`. */
  processor: string;
  /** Whether the numbers come from the model's `preprocessor_config.json` (else its processor class's defaults). */
  fromFile: boolean;
  /** What a byte is multiplied by first (1/255), or 1. */
  rescale: number;
  /** Per channel (R, G, B); 0 where the processor does not normalize. */
  mean: [number, number, number];
  /** Per channel; 1 where the processor does not normalize. */
  std: [number, number, number];
}

/** What {@link Model.info} reports. */
export interface ModelInfo {
  /**
   * config.json's `_name_or_path` (USE-lite's: `name`), else the architecture; the default model's is
   * `Universal Sentence Encoder lite`.
   */
  name: string;
  /** config.json's `architectures[0]`, e.g. `UniversalSentenceEncoderLite`. */
  architecture: string;
  /** What it reads: text (as token ids), an image (as patches), or audio (Whisper: log-mel frames). */
  input: 'text' | 'image' | 'audio';
  /**
   * Its stacks of the transformer block: one (an encoder, a decoder), or an encoder then a decoder. A run's map sets
   * follow from them: `self` for one stack; `encoder`, `decoder` and `cross` for two.
   */
  stacks: StackInfo[];
  /** Transformer blocks, each with its own attention maps (the last stack's: an encoder-decoder's decoder's). */
  layers: number;
  /** Query heads per layer: the maps of a layer are `[heads, n, n]`. */
  heads: number;
  /** Width of the residual stream, `d_model`. */
  dModel: number;
  /** Longer inputs are truncated to this many tokens (and the result says so). */
  maxTokens: number;
  /** Tokens in the vocabulary. */
  vocabSize: number;
  /** Key/value heads: fewer than `heads` under grouped-query attention (query head h reads `kvHead[h]`). */
  kvHeads: number;
  /** `d_k` (= `d_v`) of every head; apart from `dModel / heads` in some models (Qwen 3, Gemma). */
  headDim: number;
  /** A token sees only itself and the tokens before it (decoders). */
  causal: boolean;
  /** Predicts the next token: {@link RunOptions.topK}, {@link RunOptions.logitLens} and {@link Model.(generate:1)}. */
  languageModel: boolean;
  /** How the model's files store its weights (the embedding's type, for a GGUF whose tensors mix types). */
  weightsDtype: 'f32' | 'f16' | 'bf16' | 'q8_0' | 'q4_0' | 'q4_k' | 'q6_k';
  /**
   * The weights' type as the files name it: a GGUF's file type as llama.cpp names it (`Q4_K_M`, `Q8_0`, `F16`, ...),
   * else `F32`, `F16` or `BF16`.
   */
  weights: string;
  /** Per layer: 0 for full attention, else the width of its sliding window (Mistral, Gemma's local layers). */
  window: number[];
  /** Language models: the token ids that end a text (config.json's `eos_token_id`). */
  eosTokenIds: number[];
  /**
   * Encoder-decoder models (BART): a source runs through the encoder and a target through the decoder, which attends
   * to the encoder's output; `layers`, `heads` and `maxTokens` are then the decoder's. Absent for one-stack models.
   */
  encoderDecoder?: boolean;
  /** Encoder-decoders: the encoder's blocks. */
  encoderLayers?: number;
  /** Encoder-decoders: the encoder's heads per layer. */
  encoderHeads?: number;
  /** Encoder-decoders: a longer source is truncated to this many tokens (and the result says so). */
  encoderMaxTokens?: number;
  /** Encoder-decoders: the decoder's first token (`decoder_start_token_id`), which a target text starts with. */
  decoderStartTokenId?: number;
  /** Encoder-decoders: the token generation forces after the start token (`forced_bos_token_id`), when the model has one. */
  forcedBosTokenId?: number;
  /**
   * Encoder-decoders: their search settings as generation_config.json (else config.json) gives them, the defaults of
   * {@link GenerateOptions}' `beams`, `lengthPenalty`, `noRepeatNgramSize` and `earlyStopping`; `maxLength` caps
   * every generation's target (start token included) when the model sets it, and `bannedTokenIds` are never
   * generated (`bad_words_ids` of one token, such as Marian's `<pad>`).
   */
  generation?: GenerationSettings;
  /**
   * Vision transformers (ViT, DeiT, DINOv2, CLIP's vision tower): they run on images, {@link Model.(run:3)}. Absent
   * for text models.
   */
  vision?: boolean;
  /** Vision models: `[height, width]` of the image their position table was trained at. */
  imageSize?: [number, number];
  /** Vision models: each token is a `patchSize` × `patchSize` square of the input. */
  patchSize?: number;
  /** Vision models: the tokens before the registers and patches (`[CLS]`, and DeiT's `distillation`). */
  prefixTokens?: number;
  /** Vision models: DINOv2 with registers' extra tokens, after the prefix (0 for the others). */
  registers?: number;
  /** Vision classifiers: the class names by id (`id2label`); empty for models without a classifier. */
  labels?: string[];
  /** Vision models: how the engine normalizes an image's pixels (to draw {@link ImageRunResult.pixels} again). */
  imageNormalization?: ImageNormalization;
  /** Speech models (Whisper): how they hear, from `preprocessor_config.json`. */
  audio?: AudioInfo;
  /** Speech models: how they decode, from `generation_config.json`. */
  speech?: SpeechSettings;
}

/** A speech model's decoding settings, from its `generation_config.json` ({@link ModelInfo}). */
export interface SpeechSettings {
  /** Whether it names a language and a task in its prompt (false for the English-only `.en` models). */
  multilingual: boolean;
  /** Its language tokens' ids by language code (`en` for `<|en|>`), from `lang_to_id`. */
  languages: Record<string, number>;
  /** Its task tokens' ids, from `task_to_id`. */
  tasks: { transcribe?: number; translate?: number };
  /** The decoder's first token, `<|startoftranscript|>`. */
  startOfTranscript: number;
  /** `<|endoftext|>`: the end of a transcript; the tokens below it are text. */
  endOfText: number;
  /** `<|notimestamps|>`. */
  noTimestamps?: number;
  /** Tokens never generated (`suppress_tokens`). */
  suppressTokens: number[];
  /** Tokens not generated first (`begin_suppress_tokens`: a space and the end of text). */
  beginSuppressTokens: number[];
  /** With timestamps: the latest the first may be, in 20 ms steps (`max_initial_timestamp_index`). */
  maxInitialTimestamp?: number;
  /**
   * The decoder's `[layer, head]` pairs whose cross-attention times the words (`alignment_heads`); without them, every
   * head of the decoder's second half, as openai/whisper defaults.
   */
  alignmentHeads: Array<[number, number]>;
}

/**
 * A model's files. Values are bytes, or (in Node) paths to read. Weight files (`.safetensors`, `.gguf`) given as paths
 * in Node, or as Files or Blobs in a Web Worker, are read a tensor at a time, never whole.
 */
export type ModelFiles = Record<string, Blob | ArrayBuffer | Uint8Array | string>;

/**
 * Progress of a model's files as they arrive, reported per file: a Hub download ({@link HubSource.onProgress}), or
 * the embedded default model's files ({@link DefaultSource.onProgress}).
 */
export interface HubProgress {
  /** The file's name in the repository, e.g. `model.safetensors`. */
  file: string;
  /** Bytes of it received so far. */
  loaded: number;
  /**
   * The file's size: from the Hub's file list, or the server's content-length; absent while unknown. A file's last
   * call has `loaded === total`.
   */
  total?: number;
  /**
   * Read without a download: from the cache (Cache API in browsers, a folder in Node), or, for the default model in
   * Node, from the package.
   */
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
  /**
   * A GGUF in the repository to load, e.g. `Llama-3.2-1B-Instruct-f16.gguf` (a path inside it): the model, its
   * config and its tokenizer from that one file, not the Hugging Face checkpoint. The first part of a split GGUF
   * (`…-00001-of-00003.gguf`) brings the others.
   */
  file?: string;
  /** Called as each file's bytes arrive (and once for a file served from the cache). */
  onProgress?: (progress: HubProgress) => void;
  /**
   * Keep and reuse downloads (Cache API in browsers; $ATTNSCOPE_CACHE_DIR or ~/.cache/attnscope in Node). Default true.
   * Either way, weights are written out as they arrive and read back a tensor at a time: in Node to the cache's folder,
   * or a temporary file when not kept; in a browser's Web Worker to the Origin Private File System.
   */
  cache?: boolean;
  /**
   * Check every file against the size and checksum (SHA-256 for LFS files, the git blob id for others)
   * in the Hub's file list, `<baseUrl>/api/models/<id>/revision/<revision>?blobs=true`. Default true;
   * false skips the list, for servers that have only the `resolve` layout.
   */
  verify?: boolean;
}

/** What loading a Hub model would download and need ({@link Engine.hubPlan}). */
export interface HubPlan {
  /** The model id. */
  id: string;
  /** The files loading downloads, each with the size the Hub lists; `weights` marks the weights' files. */
  files: Array<{ name: string; size: number; weights: boolean }>;
  /** Bytes of all of them. */
  downloadBytes: number;
  /**
   * Bytes of the weights: what they take of the heap (they stay in the file's type). A GGUF's, from its header (range
   * requests for its first megabytes): each matrix in the GEMM's panels of its own type, each vector as float32.
   */
  weightBytes: number;
  /** The heap the model needs: its weights and the engine's room for running (`runningRoomBytes`). */
  heapBytes: number;
  /** The heap free now: the limit less what the engine holds. */
  freeBytes: number;
  /** Whether `heapBytes` fits in `freeBytes`: loading refuses a model that does not, before its weights download. */
  fits: boolean;
}

/**
 * The embedded default model with options: `{ default: true }` loads what `'default'` loads.
 *
 * ```ts
 * const model = await engine.loadModel({
 *   default: true,
 *   onProgress: ({ file, loaded, total }) => console.log(file, loaded, total),
 * });
 * ```
 */
export interface DefaultSource {
  /** The embedded Universal Sentence Encoder lite (2 layers × 4 heads). */
  default: true;
  /**
   * Called per file as it arrives, as {@link HubSource.onProgress} is. In browsers its five files (28 MB) are fetched
   * together from where the bundler put them, so calls for different files interleave; `total` is the
   * content-length where it is the file's size (not for a compressed response), and each file's last call has
   * `loaded === total`, with `cached: false` (the browser's HTTP cache does not say when it served one). In Node
   * they are read from the package: one call per file, whole, with `cached: true`.
   */
  onProgress?: (progress: HubProgress) => void;
}

/** Where {@link Engine.loadModel} gets a model. */
export type ModelSource =
  /** The embedded Universal Sentence Encoder lite (2 layers × 4 heads), offline. */
  | 'default'
  /** The same, with a progress callback. */
  | DefaultSource
  /**
   * config.json, model.safetensors and the tokenizer's files (e.g. vocab.json); or a decoder's GGUF file (`*.gguf`,
   * or the parts of a split one), read as the checkpoint it was converted from.
   */
  | { files: ModelFiles }
  /** Downloaded from the Hugging Face Hub and cached. */
  | HubSource;

/** Options of {@link Model.(run:1)} (and, where they apply, {@link Model.(run:2)}). */
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
  /** Language models: the `topK` most likely next tokens after every position, as {@link ModelRunResult.predictions}. */
  topK?: number;
  /**
   * Language models: the logit lens (nostalgebraist, 2020), every layer's most likely next token at every position:
   * the final norm and the language-model head applied to each layer's output. Costs one head per layer.
   */
  logitLens?: boolean;
  /** Language models: the next-token logits at every position, `[n, vocabSize]`. */
  returnLogits?: boolean;
  /**
   * Decoders: take what the previous run computed for the tokens this one starts with (keys, values, map rows),
   * so that typing at the end costs the new tokens only; the result is the same as a fresh run's. Runs with
   * padding, ablation or projections always run fresh. Default true.
   */
  reusePrefix?: boolean;
  /**
   * The layers whose maps to return, in this order, each once: `attentions` is then `[mapLayers.length, heads, n, n]`
   * and the result's `mapLayers` says which. Default: every layer. Decoders compute only these (attention runs fused
   * in the others, and a later run on the same tokens computes another layer's maps from the kept queries and keys,
   * at the cost of that layer's attention alone), so a long input fits where every layer's maps would not. `[]`: no
   * maps, the fastest run.
   */
  mapLayers?: number[];
  /** Also summarize every returned head ({@link ModelRunResult.headSummaries}), in the engine. Default false. */
  headSummaries?: boolean;
  /**
   * Also each token's hidden-state norm at the stack's input and after every layer ({@link ModelRunResult.tokenNorms};
   * an image's run always has them). Default false.
   */
  tokenNorms?: boolean;
  /**
   * Attention rollout through every layer, computed with the run where its maps are, without handing them back
   * ({@link Engine.rollout}'s, the last layer's): each self-attention map set's {@link MapSet.rollout}, or only the
   * one `set` names (`encoder`, `decoder`). The run must return that set's every layer.
   */
  rollout?: FlowOptions & { set?: string };
  /**
   * Attention flow, computed with the run ({@link Engine.attentionFlow}'s): each self-attention map set's
   * {@link MapSet.flow} (or only `set`'s), for the output tokens `rows` (default every one).
   */
  flow?: FlowOptions & { rows?: number[]; set?: string };
  /**
   * An array to write the maps into instead of a new one, reused from run to run: `attentions` is then its first
   * `layers × heads × n × n` values (the array itself when that is its length, else a subarray of it), every one
   * written. A new array of hundreds of MB costs a first write to every page (a DINOv2-S run at 518² returns 540 MB
   * of maps), and an array that held earlier maps does not. It must have room for the maps; a run that does not fit
   * throws, naming the room it needs, and leaves the array as it was. Runs of one text or one image.
   */
  into?: { attentions?: Float32Array };
}

/** The most likely next tokens after each position, best first. */
export interface Predictions {
  /** Tokens per position. */
  k: number;
  /** `[n, k]` token ids. */
  ids: Int32Array;
  /** `[n, k]` probabilities, `softmax(logits)` (after Gemma's soft-cap). */
  probs: Float32Array;
  /** The ids' tokens as the vocabulary spells them, `[n][k]`. */
  tokens: string[][];
}

/** Each layer's most likely next token at each position. */
export interface LogitLens {
  /** `[layers, n]` */
  ids: Int32Array;
  /** `[layers, n]`: the probability of that token. */
  probs: Float32Array;
  /** `[layers][n]` */
  tokens: string[][];
}

/**
 * One set of attention maps with the tokens its rows and columns stand for. Row i of a map is how query token i
 * spreads its attention over the key tokens. In self-attention both are the run's tokens; in cross-attention the
 * queries are one sequence's tokens and the keys another's (a translation's source words, an image's patches).
 */
export interface MapSet {
  /** Self-attention within one sequence, or cross-attention from one sequence to another. */
  kind: 'self' | 'cross';
  /** A query sees only the keys up to its own position (decoders' self-attention). */
  causal: boolean;
  /** The rows: one per query token. */
  queryTokens: string[];
  /** The columns: one per key token (the same tokens as `queryTokens` in self-attention). */
  keyTokens: string[];
  /** `[layers.length, heads, queryTokens.length, keyTokens.length]`. */
  attentions: Float32Array;
  /** `attentions`' shape, `[mapLayers.length, heads, queryTokens.length, keyTokens.length]`. */
  shape: [number, number, number, number];
  /** Which of the stack's layers `attentions` holds, in its order (every set a run returns has it). */
  mapLayers?: number[];
  /**
   * The same list as `mapLayers`.
   * @deprecated `layers` is a count everywhere else ({@link ModelInfo.layers}): read `mapLayers`.
   */
  layers: number[];
  /** The sequence of the rows: `text`, `image`, `source`, `target` or `audio` (every set a run returns has it). */
  querySequence?: string;
  /** The sequence of the columns: the rows' own in self-attention (every set a run returns has it). */
  keySequence?: string;
  /** With {@link RunOptions.headSummaries}: each head's summary (self-attention only). */
  headSummaries?: HeadSummary[];
  /** With {@link RunOptions.rollout}: `[n, n]`, the last layer's rollout (self-attention only). */
  rollout?: Tensor;
  /** With {@link RunOptions.flow}: `[rows, n]` (self-attention only). */
  flow?: Tensor;
}

/**
 * A run's attention by name. Single-stack models (encoders, decoders, vision transformers) have `self`;
 * encoder-decoder models have `encoder`, `decoder` and `cross`.
 */
export interface MapSets {
  /** A single-stack model's self-attention: its tokens attending to each other. */
  self?: MapSet;
  /** An encoder-decoder model's encoder self-attention. */
  encoder?: MapSet;
  /** An encoder-decoder model's decoder self-attention. */
  decoder?: MapSet;
  /** The decoder's queries over the encoder's keys. */
  cross?: MapSet;
}

/** What {@link Model.(run:1)} returns. `n` is the number of tokens after truncation. */
export interface ModelRunResult {
  /** The tokens as the tokenizer split the text, special tokens included. */
  tokens: string[];
  /** Per token: is it a special token (`[CLS]`, `[SEP]`, `<|endoftext|>`, ...)? */
  special: boolean[];
  /** The tokens' ids in the model's vocabulary, one per token. */
  ids: Int32Array;
  /** Every layer's and head's attention weights, `shape` = [layers, heads, n, n]: the layers `mapLayers` names. */
  attentions: Float32Array;
  /** `attentions`' shape, `[layers, heads, n, n]` (`layers` counts the layers `mapLayers` names). */
  shape: [number, number, number, number];
  /** The layers `attentions` holds, in its order: every layer, unless {@link RunOptions.mapLayers} chose. */
  mapLayers: number[];
  /** The same maps as a named set with its query and key tokens: `maps.self.attentions` is `attentions`. */
  maps: MapSets;
  /** Last hidden state `[n, dModel]` (decoders: after the final norm, as {@link Model.logits} takes it). */
  hidden: Tensor;
  /** Pooled sentence embedding, where the model defines one. */
  embedding?: Float32Array;
  /** Tokens before truncation; `truncated` is true when it exceeds `maxTokens`. */
  totalTokens: number;
  /** True when the input had more than `info.maxTokens` tokens and only the first ones ran. */
  truncated: boolean;
  /** Per layer: each head's queries `[heads, n, d_k]`, with `returnProjections`. */
  q?: Tensor[];
  /** Per layer: each head's keys `[heads, n, d_k]`, with `returnProjections`. */
  k?: Tensor[];
  /** Per layer: each head's values `[heads, n, d_v]`, with `returnProjections`. */
  v?: Tensor[];
  /** Per layer: X `[n, d_in]`, the matrix the projections multiply (after LayerNorm in pre-LN models), with `returnProjections`. */
  inputs?: Tensor[];
  /** With {@link RunOptions.tokenNorms}: `[layers + 1, n]`, each token's hidden-state norm at the input and after each layer. */
  tokenNorms?: Tensor;
  /** `[heads]`: the key/value head each query head reads (grouped-query attention shares them; else head h reads h). */
  kvHead?: Int32Array;
  /** With `topK`. */
  predictions?: Predictions;
  /** With `logitLens`. */
  logitLens?: LogitLens;
  /** With `returnLogits`: `[n, vocabSize]`. */
  logits?: Tensor;
  /**
   * With `headSummaries`: every head's summary of the maps this run returns, as {@link Engine.headSummaries} gives
   * them, each `layer` the model's layer. Computed where the maps are, without handing them back to the engine.
   */
  headSummaries?: HeadSummary[];
  /** Decoders: the leading tokens taken from the previous run rather than computed again. */
  reusedTokens?: number;
}

/** An encoder-decoder's input to {@link Model.(run:2)}: a source and a target, each text or token ids. */
export interface PairInput {
  /** What the encoder reads: text (tokenized with the model's special tokens, BART's `<s> … </s>`) or token ids. */
  source: string | ArrayLike<number>;
  /**
   * What the decoder reads, teacher-forced: text, which runs as the decoder reads a target while learning to write
   * it (its start token, then the text's tokens without the end-of-text token), or token ids as they are.
   */
  target: string | ArrayLike<number>;
}

/** What {@link Model.(run:2)} returns for a source and a target. */
export interface PairRunResult {
  /** The source's tokens, special tokens included (after truncation to `info.encoderMaxTokens`). */
  sourceTokens: string[];
  /** The source's token ids. */
  sourceIds: Int32Array;
  /** Per source token: is it a special token (`<s>`, `</s>`)? */
  sourceSpecial: boolean[];
  /** The target's tokens as the decoder read them, its start token first. */
  targetTokens: string[];
  /** The target's token ids. */
  targetIds: Int32Array;
  /** Per target token: is it a special token? */
  targetSpecial: boolean[];
  /**
   * The three sets of maps: `encoder` (source × source), `decoder` (target × target, causal) and `cross` (target
   * queries × source keys, `[layers, heads, n_target, n_source]`).
   */
  maps: Required<Pick<MapSets, 'encoder' | 'decoder' | 'cross'>>;
  /** The encoder's output `[n_source, dModel]`: what every cross-attention reads. */
  sourceHidden: Tensor;
  /** The decoder's final-normed output `[n_target, dModel]`, as {@link Model.logits} takes it. */
  hidden: Tensor;
  /** Source tokens before truncation; `truncated` is true when it exceeds `info.encoderMaxTokens`. */
  totalSourceTokens: number;
  /** True when the source had more tokens than the encoder's positions and only the first ones ran. */
  truncated: boolean;
  /** With `topK`: the most likely next target token after each target position. */
  predictions?: Predictions;
  /** With `returnLogits`: `[n_target, vocabSize]`. */
  logits?: Tensor;
}

/**
 * A speech model's input to {@link Model.(run:4)}: audio (mono float32 at `info.audio.samplingRate`, as
 * {@link Engine.decodeAudio} gives it; one window of it is read, the rest of the window silence) or a window's
 * log-mel `features` `[melBins, frames]`, and the target the decoder reads teacher-forced (token ids, or text run
 * as a target's tokens are).
 */
export type AudioInput =
  | { audio: Float32Array | ArrayLike<number>; target: string | ArrayLike<number> }
  | { features: Tensor; target: string | ArrayLike<number> };

/** What {@link Model.(run:4)} returns for audio and a target. */
export interface AudioRunResult {
  /** The encoder's positions, named by their time (`"0.42 s"`): 20 ms apart, a whole window's. */
  audioTokens: string[];
  /** The seconds of sound the window held (the positions after them hear Whisper's padding). */
  seconds: number;
  /** True when the audio was longer than one window and only its first window ran. */
  truncated: boolean;
  /** The log-mel features the encoder read, `[melBins, frames]`. */
  features: Tensor;
  /** The target's tokens as the decoder read them. */
  targetTokens: string[];
  /** The target's token ids. */
  targetIds: Int32Array;
  /** Per target token: is it a special token? */
  targetSpecial: boolean[];
  /**
   * `encoder` (positions × positions), `decoder` (target × target, causal) and `cross` (target queries × the
   * audio's positions, `[layers, heads, n_target, positions]`).
   */
  maps: Required<Pick<MapSets, 'encoder' | 'decoder' | 'cross'>>;
  /** The encoder's output `[positions, dModel]`: what every cross-attention reads. */
  sourceHidden: Tensor;
  /** The decoder's final-normed output `[n_target, dModel]`, as {@link Model.logits} takes it. */
  hidden: Tensor;
  /** With `topK`: the most likely next target token after each target position. */
  predictions?: Predictions;
  /** With `returnLogits`: `[n_target, vocabSize]`. */
  logits?: Tensor;
}

/**
 * An image as {@link Model.(run:3)} takes it: `ImageData`, an `ImageBitmap` (browsers; its pixels are read through an
 * `OffscreenCanvas`), or RGBA bytes row by row from the top. Alpha is dropped, as Pillow's `convert("RGB")` drops it.
 * Orientation is as given: browsers apply an image's EXIF orientation when they decode it.
 */
export type ImageLike =
  | { data: Uint8ClampedArray | Uint8Array; width: number; height: number }
  | { readonly width: number; readonly height: number; close(): void };

/**
 * A vision model's input to {@link Model.(run:3)}: an image, preprocessed as the model's `preprocessor_config.json`
 * says (Pillow's resize, centre crop, rescale, normalize), or the model's input itself (`pixels`, `[3, H, W]`, as
 * {@link ImageRunResult.pixels} holds it).
 */
export type ImageInput = { image: ImageLike } | { pixels: Tensor };

/** A vision classifier's class. */
export interface ImageLabel {
  /** The class's id: its column of {@link ImageRunResult.logits}. */
  id: number;
  /** Its name (`id2label`). */
  label: string;
  /** Its softmax probability. */
  probability: number;
}

/** What {@link Model.(run:3)} returns. `n` = prefix tokens + registers + `grid[0] × grid[1]` patches. */
export interface ImageRunResult {
  /** `[CLS]`, DeiT's `distillation`, `register 1` …, then `patch r,c` row by row (r, c from 0). */
  tokens: string[];
  /** Per token: true but for patches. */
  special: boolean[];
  /** `[rows, cols]`: the patch grid, `[H / patchSize, W / patchSize]` of the model's input. */
  grid: [number, number];
  /** The model's input after resize, crop and normalization, `[3, H, W]`. */
  pixels: Tensor;
  /** Every layer's and head's attention weights, `shape` = `[layers, heads, n, n]`: the layers `mapLayers` names. */
  attentions: Float32Array;
  /** `attentions`' shape. */
  shape: [number, number, number, number];
  /** The layers `attentions` holds, in its order. */
  mapLayers: number[];
  /** The same maps with their tokens: `maps.self.attentions` is `attentions`. */
  maps: Required<Pick<MapSets, 'self'>>;
  /** The last hidden state `[n, dModel]` as Hugging Face's `last_hidden_state` (after the final LayerNorm, which CLIP has not). */
  hidden: Tensor;
  /**
   * `[layers + 1, n]`: each token's hidden-state norm at the stack's input and after every layer (Hugging Face's
   * `hidden_states`, no final norm): where DINOv2's high-norm artifact tokens show.
   */
  tokenNorms: Tensor;
  /** The pooler's output `[dModel]` where the model has one: ViT's tanh pooler, CLIP's `post_layernorm` of `[CLS]`. */
  pooled?: Float32Array;
  /** CLIP (`CLIPModel`, `CLIPVisionModelWithProjection`): the image embedding, `visual_projection` of `pooled`. */
  imageEmbedding?: Float32Array;
  /** Classifiers: the logits, one per class (DeiT with its teacher: the mean of its two heads'). */
  logits?: Float32Array;
  /** Classifiers: the five most likely classes, best first; empty otherwise. */
  labels: ImageLabel[];
  /** With `headSummaries`: every head's summary of these maps. */
  headSummaries?: HeadSummary[];
}

/** What {@link Model.(generate:2)} returns: the source, the target it generated, and every map of both. */
export interface PairGenerateResult {
  /** The generated target as text (special tokens left out). */
  text: string;
  /** The source's tokens, special tokens included (after truncation to `info.encoderMaxTokens`). */
  sourceTokens: string[];
  /** The source's token ids. */
  sourceIds: Int32Array;
  /** The target's tokens: the decoder's start token (and any forced token), then every generated one. */
  targetTokens: string[];
  /** The target's token ids. */
  targetIds: Int32Array;
  /**
   * The maps of the whole generation (with `attentions` other than `false`): `encoder`, `decoder` and `cross`, as
   * {@link Model.(run:2)} gives them for this source and target.
   */
  maps: Partial<Pick<MapSets, 'encoder' | 'decoder' | 'cross'>>;
  /** True when the source had more tokens than the encoder's positions and only the first ones ran. */
  truncated: boolean;
  /** Why it stopped: `maxNewTokens` reached, an end-of-text token, a `stop` string, or the `signal` aborted. */
  stopReason: 'maxNewTokens' | 'eos' | 'stop' | 'aborted';
  /** The seed the draws used: pass it again to get the same text. */
  seed: number;
}

/** Options of {@link Model.(generate:1)} and {@link Model.(generate:2)}. */
export interface GenerateOptions {
  /** Tokens to add, at most. Default 32; the prompt plus these must fit `info.maxTokens`. */
  maxNewTokens?: number;
  /** Divides the logits before sampling; 0 always takes the most likely token (greedy). Default 1. */
  temperature?: number;
  /** Sample among the `topK` most likely tokens only (ties with the last kept too); 0 = no limit. Default 0. */
  topK?: number;
  /** Sample among the smallest set of most likely tokens holding `topP` of the probability, in (0, 1]. Default 1. */
  topP?: number;
  /** Seeds the draws: the same seed, prompt and options give the same text. Default 0. */
  seed?: number;
  /** Stop once the generated text contains one of these (it stays in the text). */
  stop?: string[];
  /** Stop after an end-of-text token (`info.eosTokenIds`). Default true. */
  stopAtEos?: boolean;
  /** No n-gram of this size twice in the generated sequence (0: off). Default: the model's (`info.generation`), else 0. */
  noRepeatNgramSize?: number;
  /**
   * Encoder-decoders: beam search over this many beams, 1 to 8 (1: greedy or sampling, as the other options say).
   * The winner is the finished beam with the best (sum of log-probabilities) / length^lengthPenalty. Tokens are known
   * only when the search ends, so `onToken` is not called; the maps are the winner's. Default 1.
   */
  beams?: number;
  /** Beam search: the exponent of the length a finished beam's score is divided by. Default: the model's, else 1. */
  lengthPenalty?: number;
  /** Beam search: stop once `beams` beams have finished. Default: the model's, else false. */
  earlyStopping?: boolean;
  /** Called after each new token, with its row of every map. */
  onToken?: (token: GeneratedToken) => void;
  /**
   * Where each token's rows are written, instead of a new array per token: called with their length
   * (`layers × heads × (position + 1)`), it returns a Float32Array of exactly that length, for example a view into a
   * buffer you reuse, and the token's `rows` is that array. For long generations that hand their rows on (to a page,
   * from a worker), where a new array per token would cost its allocation every time.
   */
  rowsInto?: (length: number) => Float32Array;
  /** Aborting stops the generation after the token in progress; the result so far is returned. */
  signal?: AbortSignal;
  /**
   * What to keep of the attention maps. `true` (the default): every token's row of every map, returned whole at the
   * end. `'rows'`: each new token's rows go to `onToken` and are not kept, for generations whose whole maps would not
   * fit (the prompt then runs fused). `false`: none, and attention runs fused: for text alone.
   */
  attentions?: boolean | 'rows';
}

/** A token {@link Model.(generate:1)} (or {@link Model.(generate:2)}) has just added. */
export interface GeneratedToken {
  /** Its id in the vocabulary. */
  id: number;
  /** As the vocabulary spells it. */
  token: string;
  /** Its position in the whole sequence (prompt included). */
  position: number;
  /** The generated text so far (the prompt left out). */
  text: string;
  /** Its query row of every map, `[layers, heads, position + 1]`: what it attended to (unless `attentions: false`). */
  rows?: Float32Array;
  /**
   * Encoder-decoders: its query row of every cross-attention map, `[layers, heads, source tokens]`: where in the
   * source it looked (unless `attentions: false`).
   */
  crossRows?: Float32Array;
}

/** What {@link Model.(generate:1)} returns: the whole sequence, prompt and generated. */
export interface GenerateResult {
  /** The whole sequence as text (special tokens left out). */
  text: string;
  /** The generated part as text. */
  generated: string;
  /** Every token's id, prompt first. */
  ids: Int32Array;
  /** Every token as the vocabulary spells it. */
  tokens: string[];
  /** Per token: is it a special token? */
  special: boolean[];
  /** Every layer's and head's maps over the whole sequence, `shape` = [layers, heads, n, n] (with `attentions: true`). */
  attentions?: Float32Array;
  /** `attentions`' shape, `[layers, heads, n, n]` (with `attentions: true`). */
  shape?: [number, number, number, number];
  /** The same maps as a named set with its tokens (with `attentions: true`): `maps.self.attentions` is `attentions`. */
  maps: MapSets;
  /** Tokens of the prompt: `ids.length - promptTokens` were generated. */
  promptTokens: number;
  /**
   * The prompt's leading tokens whose keys and values came from the model's last run (a prompt that extends the
   * last run's tokens is not run again); the rest of the prompt ran at the start.
   */
  reusedTokens: number;
  /** Why it stopped: `maxNewTokens` reached, an end-of-text token, a `stop` string, or the `signal` aborted. */
  stopReason: 'maxNewTokens' | 'eos' | 'stop' | 'aborted';
  /** The seed the draws used (the option, or its default 0): pass it again to get the same text. */
  seed: number;
}

/**
 * A run's attention maps: a {@link ModelRunResult} is one. `attentions` is
 * `[layers, heads, n, n]`; row i of a map is how token i spreads its attention.
 */
export interface AttentionMaps {
  /** The maps, row-major. */
  attentions: Float32Array;
  /** `[layers, heads, n, n]`. */
  shape: readonly number[];
  /** The n tokens, one per row (and column). */
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
  /** The layer, from 0: its place in the maps summarized (in a run's `headSummaries`, the model's layer). */
  layer: number;
  /** The head within the layer, from 0. */
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

/** An encoder-decoder's search settings, from its generation_config.json or config.json ({@link ModelInfo}). */
export interface GenerationSettings {
  /** `num_beams`: 1 is no beam search. */
  numBeams: number;
  /** `length_penalty`: a finished beam scores (sum of log-probabilities) / length^lengthPenalty. */
  lengthPenalty: number;
  /** `no_repeat_ngram_size`: no n-gram of this size twice in the target (0: off). */
  noRepeatNgramSize: number;
  /** `early_stopping`: stop as soon as `numBeams` beams have finished. */
  earlyStopping: boolean;
  /** `max_length`: the target's whole length at most, its start token included; absent when unset. */
  maxLength?: number;
  /** Tokens never generated (`bad_words_ids` of one token). */
  bannedTokenIds: number[];
}

/** Options of {@link Model.tokenize} and {@link Tokenizer.tokenize}. */
export interface TokenizeOptions {
  /** Tokenize as the text an encoder-decoder writes: Marian's target.spm (every other tokenizer reads both alike). */
  target?: boolean;
}

/** A loaded transformer model; runs on the engine that loaded it. */
export interface Model {
  /** The model's shape and kind, read from its config. */
  readonly info: ModelInfo;
  /**
   * The tokens and ids the model's tokenizer gives, special tokens included, before any truncation; with `target`, as
   * an encoder-decoder's target (Marian's target.spm; the other tokenizers read both sides alike).
   */
  tokenize(text: string, options?: TokenizeOptions): { tokens: string[]; ids: Int32Array };
  /**
   * Tokenizes, truncates to `info.maxTokens` and runs, keeping every attention map.
   * Given token ids instead of text, runs on them as they are.
   */
  run(input: string | ArrayLike<number>, options?: RunOptions): ModelRunResult;
  /**
   * Encoder-decoder models: the source through the encoder, the target through the decoder (teacher-forced), every
   * encoder, decoder and cross-attention map kept. Options: `topK`, `returnLogits` and `ablateHeads` (the decoder's).
   */
  run(input: PairInput, options?: RunOptions): PairRunResult;
  /**
   * Vision models: an image (or the model's input `pixels`) cut into patches and run, every map kept. Options:
   * `mapLayers`, `ablateHeads`, `headSummaries`.
   */
  run(input: ImageInput, options?: RunOptions): ImageRunResult;
  /**
   * Speech models (Whisper): a window of audio (or its log-mel features) through the encoder, a target through the
   * decoder, every encoder, decoder and cross-attention map kept. Options as for a source and a target.
   */
  run(input: AudioInput, options?: RunOptions): AudioRunResult;
  /**
   * Layer `layer`'s attention weights in the `x·W` layout: `wq`, `wk` `[d_in, heads·d_k]`, `wv` `[d_in, heads·d_v]`,
   * `wo` `[heads·d_v, d_out]`, and biases where the model has them. Head h owns columns `h·d … (h+1)·d − 1`.
   */
  attentionWeights(layer: number): MultiHeadParams;
  /** The text of token ids, as the tokenizer's decoder spells it; special tokens left out with `skipSpecialTokens`. */
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
  /**
   * How a person reads each token: the text its bytes spell, whitespace shown (␣ ⏎ ⇥) and a leading space kept, so
   * byte-level BPE's `Ġcat` and SentencePiece's `▁cat` both read `␣cat`; bytes that spell no character on their own
   * (part of a UTF-8 sequence) as `<0xNN>`; special tokens and WordPiece's `##ing` as the vocabulary spells them.
   */
  labels(ids: ArrayLike<number>): string[];
  /**
   * Language models: the next-token logits `[rows, vocabSize]` of final-normed hidden states `[rows, dModel]`, such
   * as rows of a run's {@link ModelRunResult.hidden}: one position's whole distribution, without
   * {@link RunOptions.returnLogits} for every position. The same numbers as `returnLogits` gives for those rows.
   */
  logits(hidden: Tensor): Tensor;
  /**
   * One pre-softmax score of a run taken apart by its sources (explain-types.ts): query sources × key sources, which
   * add up to the score. `run` is a result of this model's `run()`; its input, attention mask and ablated heads are
   * explained as they ran. A decoder whose last run holds the tokens replays only the two tokens against that run's
   * keys and values; other models run the input again, following the two tokens. A cell the head cannot see (a
   * later key, one outside a sliding window, padding) is an Error.
   */
  explainScore(
    run: ModelRunResult | PairRunResult | ImageRunResult | AudioRunResult,
    query: ScoreQuery,
  ): ScoreExplanation;
  /**
   * Language models: one next-token logit of a run taken apart by its sources (direct logit attribution): each
   * head's and each MLP's output, the embeddings and the biases, through the final norm frozen at the run's scale.
   */
  explainLogit(run: ModelRunResult | PairRunResult, query: LogitQuery): LogitExplanation;
  /**
   * Language models: continues the text (or token ids) token by token. The prompt runs once; then each new token
   * runs through the model alone, reading the keys and values kept for the tokens before it (a KV cache).
   */
  generate(input: string | ArrayLike<number>, options?: GenerateOptions): Promise<GenerateResult>;
  /**
   * Encoder-decoder models: generates a target for the source (text or token ids). The encoder runs once; the
   * decoder starts from its start token (and the model's `forced_bos_token_id`, forced next), reading the encoder's
   * keys and values, projected once, and its own KV cache. `onToken` sees each token's rows of the decoder's and the
   * cross-attention maps. Options as for one-stack models; `stop` strings and `stopAtEos` apply to the target.
   */
  generate(input: { source: string | ArrayLike<number> }, options?: GenerateOptions): Promise<PairGenerateResult>;
  /**
   * Speech models (Whisper): transcribes or translates audio, 30 s window after window, greedily (or sampled, with
   * `temperature`). Each window's prompt is the start of transcript, the language (given, or detected: the most
   * likely language token after the start), the task and no-timestamps; `suppress_tokens` and timestamp tokens are
   * never generated, and `begin_suppress_tokens` not first. With `wordTimestamps`, each word's time comes from the alignment heads'
   * cross-attention, as Whisper publishes it (normalized along the tokens, a median filter of width 7 along time,
   * the mean over heads, dynamic time warping).
   */
  generate(input: SpeechInput, options?: SpeechGenerateOptions): Promise<SpeechGenerateResult>;
  /**
   * Speech models: ranks every cross-attention head by how well it times the words on its own. Each head's maps of
   * the generation go through the same normalization, median filter and time warping as the alignment heads
   * together; a head's `score` is the share of the reference words whose start it puts within `tolerance` seconds
   * (default 0.1) of the reference's, and `meanError` the mean distance. The reference is `reference` (words with
   * the times you trust: from a forced aligner, or marked by hand), else the generation's own `words` (timed by its
   * alignment heads). Best first: the heads to pass as `alignmentHeads` for a checkpoint whose config has none.
   */
  scoreAlignmentHeads(
    result: SpeechGenerateResult,
    options?: { reference?: SpeechWord[]; tolerance?: number },
  ): AlignmentHeadScore[];
  /** Frees the model's weights. Later calls throw. */
  dispose(): void;
}

/** A tokenizer on its own, read from a model's tokenizer files. */
export interface Tokenizer {
  /** Tokens in the vocabulary. */
  readonly info: { vocabSize: number };
  /** The tokens and ids, special tokens included; with `target`, as an encoder-decoder's target (Marian's target.spm). */
  tokenize(text: string, options?: TokenizeOptions): { tokens: string[]; ids: Int32Array };
  /** The text of token ids, as the tokenizer's decoder spells it; special tokens left out with `skipSpecialTokens`. */
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
  /**
   * How a person reads each token: the text its bytes spell, whitespace shown (␣ ⏎ ⇥) and a leading space kept, so
   * byte-level BPE's `Ġcat` and SentencePiece's `▁cat` both read `␣cat`; bytes that spell no character on their own
   * (part of a UTF-8 sequence) as `<0xNN>`; special tokens and WordPiece's `##ing` as the vocabulary spells them.
   */
  labels(ids: ArrayLike<number>): string[];
  /** Frees the tokenizer. Later calls throw. */
  dispose(): void;
}

/**
 * What a speech model transcribes: mono samples at `info.audio.samplingRate` (as {@link Engine.decodeAudio} returns
 * them; any length, run 30 s at a time), or one window's log-mel features `[melBins, frames]`.
 */
export type SpeechInput = { audio: Float32Array | ArrayLike<number> } | { features: Tensor };

/** Options of {@link Model.(generate:3)}. */
export interface SpeechGenerateOptions {
  /** A language code the model knows (`info.speech.languages`: `en`, `de`, …). Default: detected in each window. */
  language?: string;
  /** `transcribe` (default) or `translate` (into English; multilingual models). */
  task?: 'transcribe' | 'translate';
  /** Time every word from the alignment heads' cross-attention. Default false. */
  wordTimestamps?: boolean;
  /**
   * Decode with Whisper's timestamp tokens, into `segments` (default false): no `<|notimestamps|>` in the prompt,
   * the first token a timestamp of at most `info.speech.maxInitialTimestamp`, timestamps in pairs and never
   * earlier than the last, and the timestamps taken together when likelier than any one text token. Audio past 30 s
   * then goes on from the last timestamp of each window's last whole segment (openai's transcribe).
   */
  timestamps?: boolean;
  /**
   * Beam search over this many beams, 1 to 8, as transformers' beam search scores it, each beam filtered as greedy
   * decoding is after its own tokens (with `timestamps`, their rules too); the winner is then read again token by
   * token for its maps and probabilities. Default 1.
   */
  beams?: number;
  /** With beams: a finished beam's score is (sum of log-probabilities) / length^lengthPenalty. Default 1. */
  lengthPenalty?: number;
  /** The `[layer, head]` pairs that time the words. Default: the model's (`info.speech.alignmentHeads`). */
  alignmentHeads?: Array<[number, number]>;
  /** Tokens to generate per window at most, after the prompt. Default: half the decoder's positions (224). */
  maxNewTokens?: number;
  /**
   * Divides the logits before a draw; 0 (default) takes the most likely token. A list falls back through its
   * temperatures as openai's transcribe does (`[0, 0.2, 0.4, 0.6, 0.8, 1]` there): a window whose text repeats itself
   * (`compressionRatio` above `compressionRatioThreshold`) or is unlikely (`avgLogprob` below `logProbThreshold`) is
   * decoded again at the next.
   */
  temperature?: number | number[];
  /** With a list of temperatures: the gzip compression ratio above which a window falls back. Default 2.4. */
  compressionRatioThreshold?: number;
  /** With a list of temperatures: the mean log-probability below which a window falls back. Default −1. */
  logProbThreshold?: number;
  /** Seeds the draws (with `temperature` above 0). Default 0. */
  seed?: number;
  /** Keep each window's maps (`maps`). Default true. */
  attentions?: boolean;
  /** The encoder layers whose maps to keep (a head's is 9 MB for a 30 s window). Default: none. */
  encoderMapLayers?: number[];
  /**
   * The most bytes of maps kept across windows, default 512 MiB: a window whose maps would pass it, and every window
   * after, keeps none (`maps: {}`; `notices` says so), so that an hour of audio (120 windows) decodes in bounded
   * memory. Its text, words and times are kept whatever the budget.
   */
  mapBytes?: number;
  /** Called with each text token generated, and where in the audio it looked. */
  onToken?: (token: SpeechToken) => void;
  /** Aborting stops after the token in progress; the windows so far are returned. */
  signal?: AbortSignal;
}

/** A text token as a speech model generates it ({@link SpeechGenerateOptions.onToken}). */
export interface SpeechToken {
  /** Its id in the vocabulary. */
  id: number;
  /** As the vocabulary spells it. */
  token: string;
  /** Its position in the window's target (the prompt included). */
  position: number;
  /** The window's text so far. */
  text: string;
  /** Its query row of every cross-attention map, `[layers, heads, positions]` (unless `attentions: false`). */
  crossRows?: Float32Array;
  /** The window it belongs to (0: the first 30 s). */
  window: number;
}

/** A word as the alignment heads time it ({@link SpeechGenerateOptions.wordTimestamps}). */
export interface SpeechWord {
  /** As decoded, with its leading space; punctuation joined to the word beside it. */
  word: string;
  /** When it starts, in seconds from the start of the audio. */
  start: number;
  /** When it ends: where the token after it starts (the end of the window's sound after its last token). */
  end: number;
  /** The mean of its tokens' probabilities among the text tokens (openai/whisper's word probability). */
  probability: number;
  /** Its tokens: `[first, last + 1)` in its window's `targetTokens`. */
  tokens: [number, number];
  /** The window it was heard in. */
  window: number;
}

/** A stretch of speech between two timestamp tokens ({@link SpeechGenerateOptions.timestamps}). */
export interface SpeechSegment {
  /** Its timestamps, in seconds from the start of the audio. */
  start: number;
  /** Its end. */
  end: number;
  /** Its text. */
  text: string;
  /** Its tokens, timestamps included: `[first, last + 1)` in its window's `targetTokens`. */
  tokens: [number, number];
  /** The window it was heard in. */
  window: number;
}

/** One 30 s window of a speech model's generation. */
export interface SpeechWindow {
  /** Where the window starts in the audio, in seconds (with timestamps, where the last one's last segment ended). */
  start: number;
  /** The seconds of sound it held (the rest of its 30 s is silence). */
  seconds: number;
  /** Its text (special tokens left out). */
  text: string;
  /** The temperature it was decoded at (the last tried, with a list). */
  temperature: number;
  /**
   * The mean log-probability of its tokens among those the filters left, the end of text included (openai's
   * avg_logprob).
   */
  avgLogprob: number;
  /** Its text's UTF-8 bytes over their zlib-compressed bytes (openai's compression_ratio; above 2.4 it repeats). */
  compressionRatio: number;
  /** Its language code: given, or detected. */
  language: string;
  /** When detected: the language's probability among the language tokens. */
  languageProbability?: number;
  /** Its target: the prompt (start of transcript, language, task, no-timestamps), then every token generated. */
  targetTokens: string[];
  /** The target's token ids. */
  targetIds: Int32Array;
  /** Each target token's probability among the text tokens when it was generated (NaN for the prompt's tokens). */
  tokenProbabilities: Float32Array;
  /** With `wordTimestamps`: each target token's time in seconds from the window's start. */
  tokenTimes?: Float64Array;
  /** With `wordTimestamps`: its words. */
  words?: SpeechWord[];
  /** With `timestamps`: its whole segments (an unfinished one is decoded again in the next window). */
  segments?: SpeechSegment[];
  /** The encoder's positions that heard the window's sound, named by their time (20 ms apart). */
  audioTokens: string[];
  /** The log-mel features the encoder read, `[melBins, frames]` (the whole 30 s). */
  features: Tensor;
  /**
   * Its maps (unless `attentions: false`), cut to the positions that heard sound: `cross` (layers × heads × target
   * tokens × positions), `decoder`, and `encoder` for `encoderMapLayers`.
   */
  maps: Partial<Pick<MapSets, 'encoder' | 'decoder' | 'cross'>>;
  /** Why its decoding stopped. */
  stopReason: 'maxNewTokens' | 'eos' | 'aborted';
}

/** What {@link Model.(generate:3)} returns: the whole audio's text and words, and each window's decoding. */
export interface SpeechGenerateResult {
  /** The text of every window. */
  text: string;
  /** The first window's language. */
  language: string;
  /** With `wordTimestamps`: every window's words. */
  words?: SpeechWord[];
  /** With `timestamps`: every window's segments. */
  segments?: SpeechSegment[];
  /** The heads that timed the words. */
  alignmentHeads: Array<[number, number]>;
  /** Each 30 s window's decoding. */
  windows: SpeechWindow[];
  /** The first window's target (a clip of 30 s or less has one window). */
  targetTokens: string[];
  /** The first window's target ids. */
  targetIds: Int32Array;
  /** The first window's positions that heard sound. */
  audioTokens: string[];
  /** The first window's log-mel features. */
  features: Tensor;
  /** The first window's maps. */
  maps: SpeechWindow['maps'];
  /** Why the last window stopped. */
  stopReason: 'maxNewTokens' | 'eos' | 'aborted';
  /** The seed the draws used. */
  seed: number;
  /** What the generation left out to stay within its budgets (`mapBytes`), in words; empty when nothing. */
  notices: string[];
}

/** How one cross-attention head times a generation's words on its own ({@link Model.scoreAlignmentHeads}). */
export interface AlignmentHeadScore {
  /** The decoder layer. */
  layer: number;
  /** The head in it. */
  head: number;
  /** The share of the reference words whose start the head alone puts within the tolerance. */
  score: number;
  /** The mean distance, in seconds, between the head's word starts and the reference's. */
  meanError: number;
}
