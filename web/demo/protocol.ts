// Everything the page and the worker say to each other: one request type per kind, and the reply
// the worker sends for it (of the same kind), plus load progress and errors. Both sides import
// this file and nothing else of each other.
import type {
  AlignmentHeadScore,
  EngineInfo,
  HeadSummary,
  HubPlan,
  ImageLabel,
  LogitExplanation,
  LogitLens,
  ModelInfo,
  ScoreExplanation,
  SpeechWindow,
  SpeechWord,
  Tensor,
} from 'attnscope';

/**
 * Which attention the page shows: the model's heads on its input; the parameter-free softmax(s · X Xᵀ) X; or the
 * model's heads across two texts, queries from the text and keys and values from a second text.
 */
export type Mode = 'model' | 'parameter-free' | 'two-texts';
/**
 * An encoder-decoder's three sets of maps: its encoder's (the source's), its decoder's (the target's, causal), and
 * the cross-attention's (the target's over the source).
 */
export type PairSet = 'encoder' | 'decoder' | 'cross';
/** Which map set a run's maps are: a model of one stack's, one of an encoder-decoder's, or two texts' ('cross'). */
export type SetName = 'self' | PairSet;

/**
 * Flow of every output token (a max-flow per token pair and layer) while it stays quick; past that, of the chosen
 * token only. The page and the worker both decide by it.
 */
export const FLOW_BUDGET = 2e7;
export const flowWhole = (n: number, layers: number) => n * n * n * n * layers <= FLOW_BUDGET;

/** A model as the page names it: its name, and its architecture where that says more (files name neither twice). */
export const modelName = (m: { name: string; architecture: string }) =>
  m.name === m.architecture ? m.name : `${m.name} (${m.architecture})`;
export type Across = 'rollout' | 'flow';
/** A model's files: weights as the Files chosen (the worker's engine reads them a tensor at a time), the rest read. */
export type Source =
  { kind: 'default' } | { kind: 'hub'; id: string } | { kind: 'files'; files: Record<string, ArrayBuffer | File> };
/** A Hub id as typed: `org/name`, or a GGUF in a repository, `org/name/path/model.gguf` (its repository, then its path). */
export function hubSource(id: string): { hub: string; file?: string } {
  const parts = id.split('/');
  return id.endsWith('.gguf') && parts.length > 2
    ? { hub: parts.slice(0, 2).join('/'), file: parts.slice(2).join('/') }
    : { hub: id };
}
/** [layers, heads, n_q, n_k]: n_q = n_k = n but in cross-attention */
export type Shape = [number, number, number, number];
export interface Matrix {
  data: Float32Array;
  rows: number;
  cols: number;
}

/** How the sampler draws: the next-token pane re-ranks with them, and generation draws with them. */
export interface Sampling {
  temperature: number;
  /** 0: no limit. */
  topK: number;
  topP: number;
}

/** Per head, beside the engine's summaries: the measures people use on language models (measures.ts). */
export interface HeadMeasures {
  /** Weight on the first token (BOS, where the model adds one). */
  sink: number;
  /** Weight on the token after an earlier copy of the query's token; NaN when no token repeats. */
  induction: number;
  /** Weight on earlier copies of the query's token; NaN when no token repeats. */
  duplicate: number;
}
/**
 * A head's row of the heads pane: its layer and head, and the measures of its run's family: a text's (the engine's
 * summaries and HeadMeasures), an image's (measures.ts: ImageHead) or cross-attention's (CrossHead).
 */
export type Summary = { layer: number; head: number } & Record<string, number>;
/** Which measures a run's heads have. */
export type MeasureFamily = 'text' | 'image' | 'cross';
/** A text's heads, as summarize() measures them. */
export type TextSummary = HeadSummary & HeadMeasures;

/** An image the page decoded (EXIF orientation applied, scaled down if it was too large), with its page-wide id. */
export interface ImageAsk {
  id: number;
  bitmap: ImageBitmap;
}

/**
 * What a vision model's run adds to a RunResult: the patch grid, where the patches start among the tokens, the
 * model's input as a picture, each token's norm per layer, rollout, and a classifier's labels.
 */
export interface VisionRun {
  /** The image the run was of (ImageAsk.id). */
  image: number;
  /** [rows, cols] of patches. */
  grid: [number, number];
  /** Tokens before the registers ([CLS], DeiT's distillation token), then `registers`, then the patches row by row. */
  prefix: number;
  registers: number;
  patchSize: number;
  /**
   * The model's input (after its resize and centre crop) as RGBA, de-normalized with the model's mean and std:
   * the picture the maps are over, patch for patch.
   */
  picture: { data: Uint8ClampedArray; width: number; height: number };
  /** Where the mean and std came from: preprocessor_config.json, or the image processor's defaults. */
  normalization: string;
  /** [layers + 1, n]: each token's hidden-state norm at the input and after each layer. */
  tokenNorms: Float32Array;
  /** [n, n]: rollout through every layer, with the residual ((A + I) / 2), heads averaged. */
  rollout: Float32Array;
  labels: ImageLabel[];
}

/**
 * What a speech model's run adds to a RunResult: the transcript, its words in time, and what the speech pane draws
 * on one time axis (the features, each token's time). The maps are one 30 s window's (`window`), cut to the sound.
 */
export interface SpeechRun {
  /** The sound the run was of (the `audio` request's id). */
  audio: number;
  /** Every window's text. */
  text: string;
  language: string;
  /** When the language was detected: its probability among the language tokens. */
  languageProbability?: number;
  /** The window whose maps these are, and where it starts in the sound (seconds). */
  window: number;
  start: number;
  /** Seconds of sound the window held (its maps' audio positions are 20 ms each). */
  seconds: number;
  /** [melBins, frames]: the log-mel features of the window's sound (2 frames per audio position). */
  features: Float32Array;
  melBins: number;
  frames: number;
  /** The window's target tokens before the first generated one (start of transcript, language, task, ...). */
  promptTokens: number;
  /** The window's target tokens' times, seconds from its start (DTW over the alignment heads). */
  tokenTimes: Float64Array;
  /** Each target token's probability among the text tokens (NaN for the prompt's). */
  tokenProbabilities: Float32Array;
  /** Every window's words. */
  words: SpeechWord[];
  /** The decoder's [layer, head] pairs that timed the words. */
  alignmentHeads: Array<[number, number]>;
  /**
   * Every cross-attention head timing the words on its own, scored against the words as they were timed
   * (Model.scoreAlignmentHeads), best first; empty when nothing was said.
   */
  headScores: AlignmentHeadScore[];
  /** Each window: where it starts, how it decoded. */
  windows: Array<Pick<SpeechWindow, 'start' | 'seconds' | 'text' | 'temperature' | 'avgLogprob' | 'compressionRatio'>>;
}

/** A second vision model's run on the same image, for the side-by-side. */
export interface BesideRun {
  model: string;
  architecture: string;
  tokens: string[];
  attentions: Float32Array;
  shape: Shape;
  vision: VisionRun;
}

/** Rollout or flow for one output token. */
export interface AcrossAsk {
  view: Across;
  residual: boolean;
  token: number;
}

/**
 * What each kind asks. `run` names the run (its request id) an analysis reads. The run's maps
 * were handed to the page by transfer, so requests that read them carry them back (`attentions`):
 * a copy per click, never per keystroke.
 */
interface Asks {
  load: { source: Source };
  /**
   * `across`: rollout or flow to compute with the run, when the page shows one. `ids`: run these token ids
   * (generated, or a candidate appended) rather than the text's. `lens`: with the logit lens (language models).
   * `layer`: the layer whose maps to return when the text is too long for every layer's (see RunResult.mapLayers).
   */
  run: {
    text: string;
    ids?: number[];
    mode: Mode;
    lens: boolean;
    layer: number;
    across?: AcrossAsk;
    /** Across two texts: the second text, whose tokens are the keys; an encoder-decoder's target. */
    context?: string;
    /** Encoder-decoders: the target's ids when generated (else `context` is tokenized). */
    contextIds?: number[];
    /** Encoder-decoders: the set rollout or flow is asked for (the one shown). */
    set?: PairSet;
    /** Vision models: the image to run, sent before (`image`). */
    image?: number;
    /** Speech models: the sound to transcribe, sent before (`audio`); its language ('' detects it) and task. */
    audio?: number;
    language?: string;
    task?: 'transcribe' | 'translate';
    /** Speech models: the decoder's [layer, head] pairs that time the words; absent: the model's own. */
    alignmentHeads?: Array<[number, number]>;
    /** Speech models: the 30 s window whose maps to show (0, the first, if absent). */
    window?: number;
  };
  /**
   * Speech models: a sound file's bytes (a WAV; other formats the page decoded and wrote as one), read by the engine
   * in the worker as a speech model hears it (mono, 16 kHz). Runs name it by its id; the worker keeps the last two.
   */
  audio: { audio: number; bytes: ArrayBuffer };
  /**
   * Vision models: a second model beside the loaded one, on the same image (DINOv2 with and without registers, say).
   * With `source`, loads it first (replacing the last one); without, runs the image on the one loaded.
   */
  beside: { source?: Source; image: number };
  /**
   * Vision models: an image the page decoded, moved to the worker once (a copy of the page's, transferred, so that
   * no run copies its pixels on the page's thread); runs name it by its id. The worker keeps the last two.
   */
  image: { image: ImageAsk };
  /**
   * Encoder-decoders: a target generated from the text (the source). With 1 beam, greedily: each token streams back
   * as a `target-token` message, then the reply. With `beams` 2 to 8, by beam search: no token is final until the
   * search ends, so only the reply comes. `stop` ends either after the current step (the search's leading beam).
   */
  translate: { text: string; maxNewTokens: number; beams: number };
  /** What loading a Hub model would download and need, from the Hub's file list (the picker's sizes). */
  plan: { hub: string };
  /** The whole next-token distribution after one position of a run (language models). */
  next: { run: number; position: number };
  /** Continues a run's tokens; tokens stream back as `token` messages, then the reply. */
  /** `layers`: the layers whose maps the page grows (its run's, or the one shown): their tokens' rows come whole. */
  generate: { run: number; maxNewTokens: number; seed: number; layers: number[] } & Sampling;
  /** Stops the generation in progress after its current token. */
  stop: Record<never, never>;
  /** The induction test: random tokens repeated twice, every head scored. */
  induction: { length: number; seed: number };
  /** One head's steps; `scale` and `causal` are the math view's switches. */
  math: { run: number; layer: number; head: number; scale: boolean; causal: boolean };
  compare: {
    run: number;
    attentions: Float32Array;
    text: string;
    model: 'same' | 'default';
    layer: number;
    head: number;
  };
  intervene: {
    run: number;
    attentions: Float32Array;
    token: number;
    action: 'mask' | 'replace';
    replacement: string;
    layer: number;
    head: number;
  };
  ablate: { run: number; layer: number; head: number };
  /** Why a head attends here (one score taken apart), or what pushes a next token (one logit taken apart). */
  explain: ExplainAsk;
  npy: { attentions: Float32Array; shape: Shape };
  cost: Record<never, never>;
}
export type Kind = keyof Asks;
export type Ask<K extends Kind = Kind> = { [P in K]: { kind: P } & Asks[P] }[K];
export type Request<K extends Kind = Kind> = { [P in K]: { id: number; kind: P } & Asks[P] }[K];

/**
 * What the Why pane explains: one cell of a run's map set (query row, key column of a layer's head), or one
 * next-token logit (the token after a position).
 */
export type ExplainAsk =
  | { what: 'score'; run: number; set: SetName; layer: number; head: number; query: number; key: number }
  | { what: 'logit'; run: number; position: number; token: number };

/** The explanation of an ExplainAsk, as the engine computed it, with the cell's weight in the run's map. */
export type Explained =
  | ({ what: 'score'; ask: ExplainAsk; ms: number } & ScoreExplanation)
  | ({ what: 'logit'; ask: ExplainAsk; ms: number; text: string } & LogitExplanation);

/** Two runs' maps for one layer and head, aligned where their tokens are. */
export interface Contrast {
  tokensA: string[];
  tokensB: string[];
  a: Float32Array; // [n, n]
  b: Float32Array; // [m, m]
  pairs: Array<[number, number]>;
  unaligned: { a: number[]; b: number[] };
  difference?: Tensor; // [pairs, pairs]: a − b over aligned tokens
  change?: Tensor; // [layers, heads]
  message?: string;
  layer: number;
  head: number;
}

export interface AcrossResult extends AcrossAsk {
  run: number;
  matrix?: Float32Array; // [n, n], every token's row (flow: when affordable)
  bar: Float32Array; // [n]: the chosen token's row
  note: string;
}

/** One head's arithmetic, every matrix the engine's (or a plain rearrangement of its numbers). */
export interface MathSteps {
  run: number;
  layer: number;
  head: number;
  scale: boolean;
  causal: boolean;
  /** The factor the scores are multiplied by: 1/√d_k, s in the parameter-free mode, or 1. */
  factor: number;
  x?: Matrix; // [n, d_in], the layer's input (model mode)
  wq?: Matrix; // [d_in, d_k]: this head's columns of W_Q (likewise W_K, W_V)
  wk?: Matrix;
  wv?: Matrix;
  q: Matrix; // [n, d_k]
  k: Matrix;
  v: Matrix; // [n, d_v]
  scores: Matrix; // [n, n] = Q Kᵀ
  scaled: Matrix;
  masked: Matrix; // −∞ where the causal switch hides a key
  /** [n, n] when the switches differ from the run's; otherwise the run's own map is the weights. */
  weights?: Matrix;
  output: Matrix; // [n, d_v] = weights · V
  concat: Matrix; // [n, heads·d_v], every head's output as W_O receives them
  wo?: Matrix; // [heads·d_v, d_model]
}

/** The most tokens the page runs the loaded model on, what sets it, and up to how many it holds every layer's maps. */
export interface PageLimit {
  tokens: number;
  why: 'model' | 'memory' | 'page';
  everyLayer: number;
}

export interface RunResult {
  run: number;
  mode: Mode;
  /** As the page shows them: a model's token labels (␣ for a leading space, <0xNN> for part of a character). */
  tokens: string[];
  /** As the vocabulary spells them (`Ġcat`, `▁cat`, `##ing`). */
  pieces: string[];
  special: boolean[];
  /** Cross-attention: the columns' tokens (the second text's), as the page shows them; absent: `tokens`. */
  keyTokens?: string[];
  attentions: Float32Array; // [mapLayers.length, heads, n, n_k] (n without the grown rows; n_k = n but across texts)
  /** The page's own, while a generation grows the maps: each new token's rows (map-rows.ts). Never sent. */
  grown?: Float32Array[];
  /**
   * The page's own, on a generation's grown maps: the newest tokens' rows of every layer, readable only while the
   * page takes in the message that brought them (the thumbnails fold them then). Never sent.
   */
  fresh?: {
    /** The first of them is at this position; `count` of them. */
    first: number;
    count: number;
    /** Row first + k of (layer, head), pooled in blocks of `block(k)` weights (TokenMessage). */
    pooled(k: number, layer: number, head: number): Float32Array;
    block(k: number): number;
  };
  /** The page's own: it kept one layer of the run's maps to grow them (generation). Never sent. */
  trimmed?: boolean;
  /**
   * The layers `attentions` holds, in its order: every one of the model's `layers`, unless every layer's maps of
   * this many tokens would not fit; then the one layer the run asked for, and another layer is a run away.
   */
  mapLayers: number[];
  layers: number;
  shape: Shape;
  /** Whether the run hid later keys (decoders); the parameter-free form's s. */
  causal: boolean;
  scale?: number;
  ms: number;
  truncated: boolean;
  totalTokens: number;
  /** Why it was truncated: the model's position limit, or what every head's map of more tokens would take. */
  limit?: PageLimit;
  summaries: Summary[];
  /** What the summaries measure. */
  measures: MeasureFamily;
  ids: number[];
  /** Language models: the key/value head each query head reads; the tokens taken from the previous run. */
  kvHead?: number[];
  reusedTokens?: number;
  logitLens?: LogitLens;
  /** Decoded, when the run was asked for ids rather than text. */
  text?: string;
  /** Where the maps came from: the text, generation (grown a row per token), or the induction test. */
  origin: 'text' | 'generation' | 'induction';
  /** Rollout or flow, when the run asked for it, computed in the engine with the run. */
  across?: AcrossResult;
  /** Why the rollout or flow asked for is not there (a long text's run holds one layer's maps). */
  acrossError?: string;
  /** Which of the run's map sets these maps are. */
  set: SetName;
  /**
   * An encoder-decoder's run: every set, each as the page shows it (this result is one of them), so that choosing
   * another set shows it without running the pair again.
   */
  sets?: Partial<Record<PairSet, RunResult>>;
  /** Vision models: the image's grid, picture, token norms and rollout. */
  vision?: VisionRun;
  /** Speech models: the transcript, its words in time, the features. */
  speech?: SpeechRun;
}

/** The next-token distribution after a position: every logit, and the best candidates' text. */
export interface NextTokens {
  run: number;
  position: number;
  logits: Float32Array; // [vocab]
  /** The largest logits' ids, best first, and each one's text as the tokenizer decodes it. */
  top: number[];
  text: string[];
}

export interface InductionResult {
  /** Random tokens per copy; the sequence is them twice (after the model's leading special tokens). */
  length: number;
  /** Every head by induction score, best first. */
  ranking: Array<{ layer: number; head: number; score: number }>;
  /** Uniform attention's score: what a head that looks nowhere in particular gets. */
  baseline: number;
  /** The repeated sequence's run, to show. */
  run: RunResult;
}

interface Replies {
  /** `heapInUse`: what the engine's heap holds with this model loaded (for the picker's fits-or-not). */
  load: {
    engine: EngineInfo;
    model: ModelInfo;
    causal: boolean;
    isolated: boolean;
    heapInUse: number;
    limit: PageLimit;
  };
  run: RunResult;
  next: NextTokens;
  generate: {
    ids: number[];
    /** The generated part, decoded without special tokens. */
    generated: string;
    promptTokens: number;
    stopReason: 'maxNewTokens' | 'eos' | 'stop' | 'aborted';
    seed: number;
  };
  stop: Record<never, never>;
  /** The generated target: its text for the box, and its ids (the decoder's start token first), which run as they are. */
  translate: { text: string; ids: number[]; stopReason: 'maxNewTokens' | 'eos' | 'stop' | 'aborted' };
  induction: InductionResult;
  math: MathSteps;
  compare: { modelB: string } & Contrast;
  intervene: { description: string } & Contrast;
  ablate: { layer: number; head: number; tokens: string[]; cosines: Float32Array; mean: number };
  explain: { explained: Explained };
  npy: { bytes: Uint8Array };
  beside: BesideRun;
  image: Record<never, never>;
  plan: { plan: HubPlan };
  /** The sound as the model hears it (mono, 16 kHz), what was done to it, and its length. */
  audio: { audio: number; samples: Float32Array; seconds: number; notices: string[]; format: string };
  cost: { heads: number; dk: number; points: Array<{ n: number; ms: number }> };
}
export type Reply<K extends Kind = Kind> = { [P in K]: { id: number; kind: P } & Replies[P] }[K];
/** Sent while a load downloads, and when any request fails: each belongs to the request with its id. */
export type Progress = { id: number; kind: 'progress'; file: string; loaded: number; total?: number };
/** A generated token: its id, its label as the page shows tokens and `piece` as the vocabulary spells it. */
export interface GeneratedToken {
  tokenId: number;
  token: string;
  piece: string;
  position: number;
  special: boolean;
}
/**
 * The tokens generated since the last such message (a few a second), each with its rows: token k's row of every map
 * of the layers the generate request named, `[layers.length, heads, position + 1]` from `rows[offsets[k]]`; and its
 * row of every map of every layer pooled as the thumbnails pool it, `[layers, heads, ⌈(position + 1) / blocks[k]⌉]`
 * from `rows[pooledAt[k]]`, each value the largest of blocks[k] weights (draw/pooled.ts, poolRow). They belong to the
 * generate request. `rows` is one buffer for them all, which the page hands back (Recycle) once it has read it: the
 * worker writes the next tokens' rows into it, so a generation allocates no memory per token.
 */
export type TokenMessage = {
  id: number;
  kind: 'token';
  tokens: GeneratedToken[];
  rows: Float32Array;
  offsets: number[];
  pooledAt: number[];
  blocks: number[];
  /** The generated text so far, without special tokens (as the text box gets it when the generation ends). */
  text: string;
};
/**
 * A target token an encoder-decoder just generated (translate): one message per token, so the page can append it as
 * it comes. `text`: the whole target so far, decoded without special tokens (what the target box gets at the end);
 * `ids`: the target's ids so far, the decoder's start token first (what runs teacher-forced if Stop keeps them).
 */
export type TargetTokenMessage = { id: number; kind: 'target-token'; text: string; ids: number[] };
/** A speech model's transcript so far, while its run decodes (one message per token). */
export type TranscriptMessage = { id: number; kind: 'transcript'; text: string };
/** A token message's buffer, handed back to the worker to write more rows into. */
export type Recycle = { kind: 'recycle'; buffer: ArrayBuffer };
/**
 * How long the page's thread worked on the last token message (ms): its handler, and the frame that drew it, style,
 * layout, paint and commit included. The worker spaces token messages by a few times that.
 */
export type Drawn = { kind: 'drawn'; ms: number };
export type Failure = { id: number; kind: 'error'; message: string; during: Kind };
export type Message = Reply | Progress | TokenMessage | TargetTokenMessage | TranscriptMessage | Failure;
