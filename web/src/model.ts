// Models and tokenizers over their raw handles: JS-side checks, text prepared for the
// tokenizer, results unwrapped.
import type {
  AlignmentHeadScore,
  AudioInput,
  AudioRunResult,
  GenerateOptions,
  GenerateResult,
  ImageInput,
  ImageLike,
  ImageRunResult,
  LogitExplanation,
  LogitQuery,
  Model,
  ModelInfo,
  ModelRunResult,
  MultiHeadParams,
  PairGenerateResult,
  PairInput,
  PairRunResult,
  RunOptions,
  ScoreExplanation,
  ScoreQuery,
  SpeechGenerateOptions,
  SpeechGenerateResult,
  SpeechInput,
  SpeechWord,
  Tensor,
  TokenizeOptions,
  Tokenizer,
} from './types.js';
import { samplesOf } from './audio.js';
import { MAP_ARRAYS, checkInto, checkOptions, checkTensor, typeName } from './checks.js';
import { type Naming, logitExplanation, scoreExplanation } from './explain.js';
import { generate, generatePair } from './generate.js';
import { generateSpeech, scoreAlignmentHeads, speechSettings } from './speech.js';
import { mapSetsOf } from './map-sets.js';
import {
  type RawEngine,
  type RawExplainOptions,
  type RawGenerationHandle,
  type RawInput,
  type RawModelHandle,
  type RawRun,
  type RawTokenizerHandle,
  orThrow,
  utf8,
} from './raw.js';

const RUN_OPTIONS = {
  returnProjections: 'boolean',
  attentionMask: 'other',
  ablateHeads: 'other',
  topK: 'number',
  logitLens: 'boolean',
  returnLogits: 'boolean',
  reusePrefix: 'boolean',
  mapLayers: 'other',
  headSummaries: 'boolean',
  into: 'other',
  tokenNorms: 'boolean',
  rollout: 'other',
  flow: 'other',
} as const;

/** Each run's model and what of its options an explanation of it needs: the mask and the ablated heads. */
const RUNS = new WeakMap<object, { model: object; options: RawExplainOptions }>();

/** Token ids as an Int32Array, or an Error naming the first bad one. */
export function idsOf(op: string, input: unknown): Int32Array {
  const like = input as ArrayLike<unknown> | null;
  if (typeof like !== 'object' || like === null || typeof like.length !== 'number')
    throw new Error(`${op}: input must be a string or an array of token ids, got ${typeName(input)}`);
  if (like.length > 1_000_000) throw new Error(`${op}: ${like.length} ids, above the limit of 1,000,000`);
  if (input instanceof Int32Array) return input;
  const ids = new Int32Array(like.length);
  for (let i = 0; i < like.length; i++) {
    const id = like[i];
    if (typeof id !== 'number' || !Number.isInteger(id) || id < -(2 ** 31) || id >= 2 ** 31)
      throw new Error(`${op}: ids[${i}] must be an integer, got ${String(id)}`);
    ids[i] = id;
  }
  return ids;
}

/** Whether run()'s input is an encoder-decoder's { source, target } rather than text or ids. */
function isPair(input: unknown): input is PairInput {
  return typeof input === 'object' && input !== null && 'source' in input && !('length' in input);
}

/** Whether run()'s input is a vision model's { image } or { pixels }. */
function isImage(input: unknown): input is ImageInput {
  return typeof input === 'object' && input !== null && ('image' in input || 'pixels' in input) && !('length' in input);
}

/** Whether run()'s input is a speech model's { audio, target } or { features, target }. */
function isAudio(input: unknown): input is AudioInput {
  return (
    typeof input === 'object' && input !== null && ('audio' in input || 'features' in input) && !('length' in input)
  );
}

/** The most pixels an image may have (the engine's limit too): above it, scale the image down first. */
const MAX_IMAGE_PIXELS = 50_000_000;

/**
 * An image's RGBA bytes: `{ data, width, height }` (ImageData is one) as they are; an ImageBitmap drawn on an
 * OffscreenCanvas and read back (browsers).
 */
function rgbaOf(op: string, image: ImageLike): { rgba: Uint8Array | Uint8ClampedArray; width: number; height: number } {
  if (typeof image !== 'object' || image === null)
    throw new Error(
      `${op}: image must be ImageData, an ImageBitmap or { data, width, height }, got ${typeName(image)}`,
    );
  const { width, height } = image;
  for (const [name, side] of [
    ['width', width],
    ['height', height],
  ] as const)
    if (typeof side !== 'number' || !Number.isInteger(side) || side < 1)
      throw new Error(`${op}: image.${name} must be a whole number of pixels ≥ 1, got ${String(side)}`);
  if (width * height > MAX_IMAGE_PIXELS)
    throw new Error(
      `${op}: the image is ${width} × ${height}, more than the ${MAX_IMAGE_PIXELS / 1e6} megapixels an image may have; scale it down first`,
    );
  if ('data' in image) {
    const { data } = image;
    if (!(data instanceof Uint8ClampedArray || data instanceof Uint8Array))
      throw new Error(
        `${op}: image.data must be a Uint8ClampedArray or Uint8Array of RGBA bytes, got ${typeName(data)}`,
      );
    return { rgba: data, width, height };
  }
  if (typeof OffscreenCanvas === 'undefined')
    throw new Error(`${op}: reading an ImageBitmap needs OffscreenCanvas; give { data, width, height } instead`);
  const canvas = new OffscreenCanvas(width, height);
  const context = canvas.getContext('2d');
  if (!context) throw new Error(`${op}: no 2D context to read the ImageBitmap with`);
  context.drawImage(image as unknown as CanvasImageSource, 0, 0);
  return { rgba: context.getImageData(0, 0, width, height).data, width, height };
}

/** A per-token 0/1 mask as a Uint8Array, or an Error naming the first bad entry. */
function attentionMaskOf(op: string, input: unknown): Uint8Array {
  const like = input as ArrayLike<unknown> | null;
  if (typeof like !== 'object' || like === null || typeof like.length !== 'number')
    throw new Error(`${op}: attentionMask must be an array of 0s and 1s, got ${typeName(input)}`);
  const mask = new Uint8Array(like.length);
  for (let i = 0; i < like.length; i++) {
    if (like[i] !== 0 && like[i] !== 1)
      throw new Error(`${op}: attentionMask[${i}] must be 0 or 1, got ${String(like[i])}`);
    mask[i] = like[i] as number;
  }
  return mask;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text as a tokenizer expects it: well-formed, then normalized with the host's Unicode tables. */
function prepareText(op: string, text: unknown, normalization: string): string {
  if (typeof text !== 'string') throw new Error(`${op}: text must be a string, got ${typeName(text)}`);
  // A lone surrogate cannot cross into UTF-8; U+FFFD is one code unit too, so a
  // tokenizer counting UTF-16 units sees the same positions.
  const wellFormed = text.replace(LONE_SURROGATE, '\uFFFD');
  return normalization ? wellFormed.normalize(normalization as 'NFKC' | 'NFD') : wellFormed;
}

/** A run of one text or ids: its one sequence and its `self` set, with what the stack and the heads made. */
function textResult(r: RawRun): ModelRunResult {
  const [sequence] = r.sequences;
  const [self] = r.maps;
  const [stack] = r.stacks;
  const maps = mapSetsOf(r.maps, r.sequences);
  return {
    tokens: sequence.tokens,
    special: sequence.special,
    ids: sequence.ids,
    attentions: self.attentions.data,
    shape: self.attentions.shape as ModelRunResult['shape'],
    mapLayers: self.mapLayers,
    maps,
    hidden: stack.hidden,
    ...(r.embedding && { embedding: r.embedding }),
    totalTokens: sequence.totalTokens,
    truncated: sequence.truncated,
    ...(stack.q && { q: stack.q, k: stack.k, v: stack.v, inputs: stack.inputs }),
    ...(stack.tokenNorms && { tokenNorms: stack.tokenNorms }),
    kvHead: self.kvHead,
    ...(r.predictions && { predictions: r.predictions }),
    ...(r.logitLens && { logitLens: r.logitLens }),
    ...(r.logits && { logits: r.logits }),
    ...(maps.self!.headSummaries && { headSummaries: maps.self!.headSummaries }),
    ...(r.reusedTokens !== undefined && { reusedTokens: r.reusedTokens }),
  };
}

/** A vision model's run: the image's sequence (its patch grid), its `self` set, and the image heads' outputs. */
function imageResult(r: RawRun): ImageRunResult {
  const [sequence] = r.sequences;
  const [self] = r.maps;
  const [stack] = r.stacks;
  const maps = mapSetsOf(r.maps, r.sequences) as ImageRunResult['maps'];
  return {
    tokens: sequence.tokens,
    special: sequence.special,
    grid: sequence.grid!,
    pixels: r.pixels!,
    attentions: self.attentions.data,
    shape: self.attentions.shape as ImageRunResult['shape'],
    mapLayers: self.mapLayers,
    maps,
    hidden: stack.hidden,
    tokenNorms: stack.tokenNorms!,
    ...(r.embedding && { pooled: r.embedding }),
    ...(r.imageEmbedding && { imageEmbedding: r.imageEmbedding }),
    ...(r.labelLogits && { logits: r.labelLogits }),
    labels: r.labels ?? [],
    ...(maps.self.headSummaries && { headSummaries: maps.self.headSummaries }),
  };
}

/** An encoder-decoder's run: the source and the target, the encoder's, decoder's and cross-attention's sets. */
function pairResult(r: RawRun): PairRunResult {
  const [source, target] = r.sequences;
  const [encoder, decoder] = r.stacks;
  return {
    sourceTokens: source.tokens,
    sourceIds: source.ids,
    sourceSpecial: source.special,
    targetTokens: target.tokens,
    targetIds: target.ids,
    targetSpecial: target.special,
    maps: mapSetsOf(r.maps, r.sequences) as PairRunResult['maps'],
    sourceHidden: encoder.hidden,
    hidden: decoder.hidden,
    totalSourceTokens: source.totalTokens,
    truncated: source.truncated,
    ...(r.predictions && { predictions: r.predictions }),
    ...(r.logits && { logits: r.logits }),
  };
}

/** A speech model's run: the audio's positions and the target, the encoder's, decoder's and cross-attention's sets. */
function audioResult(r: RawRun): AudioRunResult {
  const [audio, target] = r.sequences;
  const [encoder, decoder] = r.stacks;
  return {
    audioTokens: audio.tokens,
    seconds: audio.seconds ?? 0,
    truncated: audio.truncated,
    features: r.features!,
    targetTokens: target.tokens,
    targetIds: target.ids,
    targetSpecial: target.special,
    maps: mapSetsOf(r.maps, r.sequences) as AudioRunResult['maps'],
    sourceHidden: encoder.hidden,
    hidden: decoder.hidden,
    ...(r.predictions && { predictions: r.predictions }),
    ...(r.logits && { logits: r.logits }),
  };
}

export class WasmTokenizer implements Tokenizer {
  readonly info: { vocabSize: number };
  private readonly normalization: string;

  constructor(private handle: RawTokenizerHandle | null) {
    const { normalization, vocabSize } = handle!.info();
    this.info = { vocabSize };
    this.normalization = normalization;
  }

  tokenize(text: string, options: TokenizeOptions = {}): { tokens: string[]; ids: Int32Array } {
    if (!this.handle) throw new Error('tokenize: this tokenizer was disposed');
    const r = this.handle.tokenize(prepareText('tokenize', text, this.normalization), options.target === true);
    if ('error' in r) throw new Error(r.error);
    return r;
  }

  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string {
    const op = 'decode';
    if (!this.handle) throw new Error(`${op}: this tokenizer was disposed`);
    const o = checkOptions(op, options, { skipSpecialTokens: 'boolean' }) as { skipSpecialTokens?: boolean };
    return utf8(orThrow(this.handle.decode(idsOf(op, ids), o.skipSpecialTokens ?? false)).utf8);
  }

  labels(ids: ArrayLike<number>): string[] {
    const op = 'labels';
    if (!this.handle) throw new Error(`${op}: this tokenizer was disposed`);
    return orThrow(this.handle.labels(idsOf(op, ids)));
  }

  dispose(): void {
    this.handle?.delete();
    this.handle = null;
  }
}

export class WasmModel implements Model {
  readonly info: ModelInfo;
  /** Whether the model's files hold a tokenizer: without one it runs on token ids only. */
  readonly hasTokenizer: boolean;
  private readonly normalization: string;

  constructor(
    private handle: RawModelHandle | null,
    private readonly engine: () => RawEngine,
    private readonly newGeneration: () => RawGenerationHandle,
    generationConfig?: Uint8Array,
  ) {
    const { normalization, tokenizer, ...info } = handle!.info();
    const speech = speechSettings(info, generationConfig);
    this.info = speech ? { ...info, speech } : info;
    this.normalization = normalization;
    this.hasTokenizer = tokenizer;
  }

  /** The tokens and ids of text or checked ids, for run() and generate(). */
  prepare(op: string, input: string | ArrayLike<number>): string | Int32Array {
    return typeof input === 'string' ? prepareText(op, input, this.normalization) : idsOf(op, input);
  }

  private live(op: string): RawModelHandle {
    if (!this.handle) throw new Error(`${op}: this model was disposed; load it again with engine.loadModel()`);
    return this.handle;
  }

  attentionWeights(layer: number): MultiHeadParams {
    const handle = this.live('attentionWeights');
    if (typeof layer !== 'number') throw new Error(`attentionWeights: layer must be a number, got ${typeName(layer)}`);
    const r = handle.attentionWeights(layer);
    if ('error' in r) throw new Error(r.error);
    return r;
  }

  tokenize(text: string, options: TokenizeOptions = {}): { tokens: string[]; ids: Int32Array } {
    const handle = this.live('tokenize');
    const r = handle.tokenize(prepareText('tokenize', text, this.normalization), options.target === true);
    if ('error' in r) throw new Error(r.error);
    return r;
  }

  run(input: string | ArrayLike<number>, options?: RunOptions): ModelRunResult;
  run(input: PairInput, options?: RunOptions): PairRunResult;
  run(input: ImageInput, options?: RunOptions): ImageRunResult;
  run(input: AudioInput, options?: RunOptions): AudioRunResult;
  run(
    input: string | ArrayLike<number> | PairInput | ImageInput | AudioInput,
    options?: RunOptions,
  ): ModelRunResult | PairRunResult | ImageRunResult | AudioRunResult {
    const op = 'run';
    const o = checkOptions(op, options, RUN_OPTIONS);
    const twoStacks = isPair(input) || isAudio(input);
    if (o.attentionMask !== undefined) {
      if (twoStacks) throw new Error(`${op}: attentionMask is for runs of one text`);
      o.attentionMask = attentionMaskOf(op, o.attentionMask);
    }
    for (const name of ['rollout', 'flow'] as const)
      if (o[name] !== undefined)
        checkOptions(
          `${op}: ${name}`,
          o[name],
          name === 'flow'
            ? { residual: 'boolean', rows: 'other', set: 'other' }
            : { residual: 'boolean', set: 'other' },
        );
    if (twoStacks && o.into !== undefined)
      throw new Error(`${op}: into is for runs of one text or one image; a pair returns three sets of maps`);
    checkInto(op, o.into, isImage(input) && 'pixels' in input ? { pixels: input.pixels } : {}, MAP_ARRAYS);
    // An image's run always has its tokens' norms (ImageRunResult.tokenNorms).
    if (isImage(input)) o.tokenNorms = true;
    const r = orThrow(this.live(op).run(this.engine(), this.rawInput(op, input), o));
    const result = isPair(input)
      ? pairResult(r)
      : isAudio(input)
        ? audioResult(r)
        : isImage(input)
          ? imageResult(r)
          : textResult(r);
    const kept: RawExplainOptions = {};
    if (o.attentionMask) kept.attentionMask = o.attentionMask as Uint8Array;
    if (o.ablateHeads) kept.ablateHeads = (o.ablateHeads as Array<[number, number]>).map(([l, h]) => [l, h]);
    RUNS.set(result, { model: this, options: kept });
    return result;
  }

  explainScore(
    run: ModelRunResult | PairRunResult | ImageRunResult | AudioRunResult,
    query: ScoreQuery,
  ): ScoreExplanation {
    const op = 'explainScore';
    const handle = this.live(op);
    const q = checkOptions(op, query, {
      set: 'other',
      layer: 'number',
      head: 'number',
      query: 'number',
      key: 'number',
    });
    for (const name of ['layer', 'head', 'query', 'key'] as const)
      if (q[name] === undefined) throw new Error(`${op}: query.${name} is missing`);
    if (q.set !== undefined && typeof q.set !== 'string')
      throw new Error(`${op}: query.set must be a map set's name, got ${typeName(q.set)}`);
    const { input, options, naming } = this.explained(op, run);
    return scoreExplanation(orThrow(handle.explainScore(this.engine(), input, options, query)), naming);
  }

  explainLogit(run: ModelRunResult | PairRunResult, query: LogitQuery): LogitExplanation {
    const op = 'explainLogit';
    const handle = this.live(op);
    const q = checkOptions(op, query, { position: 'number', token: 'number' });
    for (const name of ['position', 'token'] as const)
      if (q[name] === undefined) throw new Error(`${op}: query.${name} is missing`);
    const { input, options, naming } = this.explained(op, run);
    return logitExplanation(orThrow(handle.explainLogit(this.engine(), input, options, query)), naming);
  }

  /** A run's input as the engine reads it again (its ids, or the image's model input), its options and its tokens. */
  private explained(
    op: string,
    run: ModelRunResult | PairRunResult | ImageRunResult | AudioRunResult,
  ): { input: RawInput; options: RawExplainOptions; naming: Naming } {
    if (typeof run !== 'object' || run === null)
      throw new Error(`${op}: run must be a result of this model's run(), got ${typeName(run)}`);
    const kept = RUNS.get(run);
    if (kept && kept.model !== this) throw new Error(`${op}: this run is another model's; explain it with that model`);
    const stacks = this.info.stacks;
    const naming = (tokens: string[][]): Naming => ({
      tokens,
      layers: stacks.map((s) => s.layers),
      heads: stacks.map((s) => s.heads),
    });
    const options = kept?.options ?? {};
    // Tokens as a person reads them (labels()), where the model has a tokenizer.
    const read = (ids: Int32Array, tokens: string[]) => (this.hasTokenizer ? this.labels(ids) : tokens);
    if ('sourceIds' in run && 'targetIds' in run) {
      const [source, target] = [idsOf(op, run.sourceIds), idsOf(op, run.targetIds)];
      return {
        input: { source, target },
        options,
        naming: naming([read(source, run.sourceTokens), read(target, run.targetTokens)]),
      };
    }
    if ('audioTokens' in run && 'features' in run) {
      const target = idsOf(op, run.targetIds);
      return {
        input: { features: run.features, target },
        options,
        naming: naming([run.audioTokens, read(target, run.targetTokens)]),
      };
    }
    if ('pixels' in run && 'grid' in run)
      return { input: { pixels: run.pixels }, options, naming: naming([run.tokens]) };
    if ('ids' in run && 'tokens' in run) {
      const ids = idsOf(op, run.ids);
      return { input: { ids }, options, naming: naming([read(ids, run.tokens)]) };
    }
    throw new Error(`${op}: run must be a result of this model's run(): text, a pair or an image`);
  }

  /** The input as the engine reads it: text normalized, ids checked, an image's RGBA bytes, a voice's samples. */
  private rawInput(op: string, input: string | ArrayLike<number> | PairInput | ImageInput | AudioInput): RawInput {
    if (isAudio(input)) {
      const target = this.prepare(`${op}: target`, input.target);
      if ('features' in input) {
        checkTensor(op, 'features', input.features);
        return { features: input.features, target };
      }
      return { audio: samplesOf(op, input.audio), target };
    }
    if (isPair(input))
      return {
        source: this.prepare(`${op}: source`, input.source),
        target: this.prepare(`${op}: target`, input.target),
      };
    if (isImage(input)) {
      if ('pixels' in input) {
        checkTensor(op, 'pixels', input.pixels);
        return { pixels: input.pixels };
      }
      return { image: rgbaOf(op, input.image) };
    }
    const prepared = this.prepare(op, input);
    return typeof prepared === 'string' ? { text: prepared } : { ids: prepared };
  }

  logits(hidden: Tensor): Tensor {
    const op = 'logits';
    const handle = this.live(op);
    checkTensor(op, 'hidden', hidden);
    const r = handle.logits(this.engine(), hidden);
    if ('error' in r) throw new Error(r.error);
    return r;
  }

  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string {
    const op = 'decode';
    const o = checkOptions(op, options, { skipSpecialTokens: 'boolean' }) as { skipSpecialTokens?: boolean };
    return utf8(orThrow(this.live(op).decode(idsOf(op, ids), o.skipSpecialTokens ?? false)).utf8);
  }

  labels(ids: ArrayLike<number>): string[] {
    return orThrow(this.live('labels').labels(idsOf('labels', ids)));
  }

  generate(input: string | ArrayLike<number>, options?: GenerateOptions): Promise<GenerateResult>;
  generate(input: { source: string | ArrayLike<number> }, options?: GenerateOptions): Promise<PairGenerateResult>;
  generate(input: SpeechInput, options?: SpeechGenerateOptions): Promise<SpeechGenerateResult>;
  generate(
    input: string | ArrayLike<number> | { source: string | ArrayLike<number> } | SpeechInput,
    options?: GenerateOptions | SpeechGenerateOptions,
  ): Promise<GenerateResult | PairGenerateResult | SpeechGenerateResult> {
    const handle = this.live('generate');
    const speech = this.info.speech;
    if (speech) {
      if (typeof input !== 'object' || input === null || !('audio' in input || 'features' in input))
        return Promise.reject(
          new Error(
            `generate: ${this.info.name} (${this.info.architecture}) is a speech model: generate({ audio }) ` +
              `transcribes mono samples at ${this.info.audio!.samplingRate} Hz (engine.decodeAudio reads a file)`,
          ),
        );
      return generateSpeech(
        this,
        handle,
        this.engine,
        this.newGeneration,
        speech,
        input,
        options as SpeechGenerateOptions,
      );
    }
    if (typeof input === 'object' && input !== null && ('audio' in input || 'features' in input))
      return Promise.reject(
        new Error(
          `generate: ${this.info.name} (${this.info.architecture}) does not hear; { audio } needs a speech model such as Whisper`,
        ),
      );
    input = input as string | ArrayLike<number> | { source: string | ArrayLike<number> };
    options = options as GenerateOptions | undefined;
    if (typeof input === 'object' && input !== null && 'source' in input && !('length' in input)) {
      if (!this.info.encoderDecoder)
        return Promise.reject(
          new Error(
            `generate: ${this.info.name} (${this.info.architecture}) is not an encoder-decoder model; { source } needs one such as BART`,
          ),
        );
      return generatePair(this, handle, this.engine, this.newGeneration, input, options);
    }
    if (this.info.encoderDecoder)
      return Promise.reject(
        new Error(
          `generate: ${this.info.name} (${this.info.architecture}) is an encoder-decoder model: generate({ source }) translates or summarizes a source`,
        ),
      );
    return generate(this, handle, this.engine, this.newGeneration, input as string | ArrayLike<number>, options);
  }

  scoreAlignmentHeads(
    result: SpeechGenerateResult,
    options?: { reference?: SpeechWord[]; tolerance?: number },
  ): AlignmentHeadScore[] {
    if (!this.info.speech)
      throw new Error(`scoreAlignmentHeads: ${this.info.name} (${this.info.architecture}) is not a speech model`);
    return scoreAlignmentHeads(this.info, result, options);
  }

  dispose(): void {
    this.handle?.delete();
    this.handle = null;
  }
}
