// The typed engine over the raw module: checks what JS types can get wrong,
// lets C++ check shapes and values, and turns { error } into a thrown Error.
import type {
  ModelFiles,
  Tokenizer,
  Model,
  ModelInfo,
  ModelRunResult,
  ModelSource,
  RunOptions,
  AttentionOptions,
  AttentionResult,
  BuildName,
  Comparison,
  Engine,
  HeadSummary,
  EngineInfo,
  MemoryInfo,
  LinearLayer,
  MultiHeadLayer,
  MultiHeadOptions,
  MultiHeadParams,
  MultiHeadResult,
  Tensor,
} from './types.js';
import { Analysis } from './analysis.js';
import { checkMask, checkOptions, checkTensor, typeName } from './checks.js';
import { fetchHubModel } from './hub.js';
import {
  type Platform,
  type RawModelHandle,
  type RawMultiHeadLayer,
  type RawTokenizerHandle,
  BUILD_FILES,
  type ModuleArgs,
  type ModuleFactory,
  type RawEngine,
  type RawModule,
  type RawResult,
} from './raw.js';

export const MAX_THREADS = 64;

const ATTENTION_OPTIONS = { causal: 'boolean', scale: 'number', mask: 'other', returnWeights: 'boolean' } as const;
const MULTI_HEAD_OPTIONS = {
  heads: 'number',
  causal: 'boolean',
  mask: 'other',
  context: 'other',
  returnWeights: 'boolean',
  returnProjections: 'boolean',
} as const;

function unwrap(result: RawResult): Record<string, Tensor> {
  if ('error' in result && typeof result.error === 'string') throw new Error(result.error);
  return result as Record<string, Tensor>;
}

/** The handle once `load` succeeded; on an error result, frees the handle and throws the error. */
function loaded<H extends { delete(): void }>(handle: H, load: (h: H) => { error?: string }): H {
  const result = load(handle);
  if (typeof result.error === 'string') {
    handle.delete();
    throw new Error(result.error);
  }
  return handle;
}

/** Token ids as an Int32Array, or an Error naming the first bad one. */
function idsOf(op: string, input: unknown): Int32Array {
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

class WasmTokenizer implements Tokenizer {
  readonly info: { vocabSize: number };
  private readonly normalization: string;

  constructor(private handle: RawTokenizerHandle | null) {
    const { normalization, vocabSize } = handle!.info();
    this.info = { vocabSize };
    this.normalization = normalization;
  }

  tokenize(text: string): { tokens: string[]; ids: Int32Array } {
    if (!this.handle) throw new Error('tokenize: this tokenizer was disposed');
    const r = this.handle.tokenize(prepareText('tokenize', text, this.normalization));
    if ('error' in r) throw new Error(r.error);
    return r;
  }

  dispose(): void {
    this.handle?.delete();
    this.handle = null;
  }
}

class WasmModel implements Model {
  readonly info: ModelInfo;
  private readonly normalization: string;

  constructor(
    private handle: RawModelHandle | null,
    private readonly engine: () => RawEngine,
  ) {
    const { normalization, ...info } = handle!.info();
    this.info = info;
    this.normalization = normalization;
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

  tokenize(text: string): { tokens: string[]; ids: Int32Array } {
    const handle = this.live('tokenize');
    const r = handle.tokenize(prepareText('tokenize', text, this.normalization));
    if ('error' in r) throw new Error(r.error);
    return r;
  }

  run(input: string | ArrayLike<number>, options?: RunOptions): ModelRunResult {
    const op = 'run';
    const o = checkOptions(op, options, { returnProjections: 'boolean', attentionMask: 'other', ablateHeads: 'other' });
    if (o.attentionMask !== undefined) o.attentionMask = attentionMaskOf(op, o.attentionMask);
    const handle = this.live(op);
    const prepared = typeof input === 'string' ? prepareText(op, input, this.normalization) : idsOf(op, input);
    const r = handle.run(this.engine(), prepared, o);
    if ('error' in r && typeof r.error === 'string') throw new Error(r.error);
    const { attentions, ...rest } = r as unknown as Omit<ModelRunResult, 'attentions' | 'shape'> & {
      attentions: Tensor;
    };
    return { ...rest, attentions: attentions.data, shape: attentions.shape as ModelRunResult['shape'] };
  }

  dispose(): void {
    this.handle?.delete();
    this.handle = null;
  }
}

function checkParams(op: string, params: MultiHeadParams): void {
  if (typeof params !== 'object' || params === null)
    throw new Error(`${op}: params must be { wq, wk, wv, wo, bq?, bk?, bv?, bo? }, got ${typeName(params)}`);
  for (const name of ['wq', 'wk', 'wv', 'wo'] as const) checkTensor(op, name, params[name]);
  for (const name of ['bq', 'bk', 'bv', 'bo'] as const) checkTensor(op, name, params[name], true);
}

class WasmMultiHeadLayer implements MultiHeadLayer {
  constructor(
    private handle: RawMultiHeadLayer | null,
    private readonly engine: () => RawEngine,
  ) {}

  run<O extends Omit<MultiHeadOptions, 'heads'>>(x: Tensor, options?: O): MultiHeadResult<O & { heads: number }> {
    const op = 'multiHeadLayer.run';
    if (!this.handle) throw new Error(`${op}: this layer was disposed; create it again with engine.multiHeadLayer()`);
    checkTensor(op, 'x', x);
    const { heads: _, ...known } = MULTI_HEAD_OPTIONS;
    const o = checkOptions(op, options, known);
    checkMask(op, o.mask);
    checkTensor(op, 'context', o.context, true);
    return unwrap(this.handle.run(this.engine(), x, o)) as MultiHeadResult<O & { heads: number }>;
  }

  dispose(): void {
    this.handle?.delete();
    this.handle = null;
  }
}

class WasmEngine implements Engine {
  private raw: RawEngine | null;
  private readonly owned = new Set<{ dispose(): void }>(); // models and tokenizers, freed with the engine
  private readonly analysis: Analysis;

  constructor(
    private readonly module: RawModule,
    raw: RawEngine,
    private readonly build: BuildName,
    private readonly platform: Platform,
  ) {
    this.raw = raw;
    this.analysis = new Analysis(module);
  }

  rollout(...args: Parameters<Engine['rollout']>): Tensor {
    this.live('rollout');
    return this.analysis.rollout(...args);
  }

  attentionFlow(...args: Parameters<Engine['attentionFlow']>): Tensor {
    this.live('attentionFlow');
    return this.analysis.attentionFlow(...args);
  }

  headSummaries(...args: Parameters<Engine['headSummaries']>): HeadSummary[] {
    this.live('headSummaries');
    return this.analysis.headSummaries(...args);
  }

  compare(...args: Parameters<Engine['compare']>): Comparison {
    this.live('compare');
    return this.analysis.compare(...args);
  }

  cosineSimilarity(...args: Parameters<Engine['cosineSimilarity']>): Float32Array {
    this.live('cosineSimilarity');
    return this.analysis.cosineSimilarity(...args);
  }

  toNpy(...args: Parameters<Engine['toNpy']>): Uint8Array {
    this.live('toNpy');
    return this.analysis.toNpy(...args);
  }

  private async readFiles(op: string, source: unknown): Promise<Record<string, Uint8Array>> {
    const given = (source as { files?: unknown } | null)?.files;
    if (typeof given !== 'object' || given === null)
      throw new Error(
        `${op}: source must be ${op === 'loadModel' ? "'default', { hub } or " : ''}{ files }, got ${typeName(source)}`,
      );
    const files: Record<string, Uint8Array> = {};
    for (const [name, value] of Object.entries(given as ModelFiles))
      files[name] = await this.platform.read(op, name, value);
    return files;
  }

  async loadTokenizer(source: { files: ModelFiles }): Promise<Tokenizer> {
    const op = 'loadTokenizer';
    this.live(op);
    const files = await this.readFiles(op, source);
    const handle = loaded(new this.module.TokenizerHandle(), (h) => h.load(files));
    const tokenizer = new WasmTokenizer(handle);
    this.owned.add(tokenizer);
    return tokenizer;
  }

  async loadModel(source: ModelSource): Promise<Model> {
    const op = 'loadModel';
    this.live(op);
    const files =
      source === 'default'
        ? await this.platform.defaultModel()
        : typeof source === 'object' && source !== null && 'hub' in source
          ? await fetchHubModel(source, this.platform.hubCache)
          : await this.readFiles(op, source);
    const handle = loaded(new this.module.ModelHandle(), (h) => h.load(files));
    const model = new WasmModel(handle, () => this.live('run'));
    this.owned.add(model);
    return model;
  }

  private live(op: string): RawEngine {
    if (!this.raw) throw new Error(`${op}: this engine was disposed; create a new one with createEngine()`);
    return this.raw;
  }

  info(): EngineInfo {
    const raw = this.live('info');
    const b = this.module.buildInfo();
    return {
      version: b.version,
      simd: b.simd,
      relaxedSimd: b.relaxedSimd,
      threads: raw.threads(),
      build: this.build,
      maxCallBytes: b.maxCallBytes,
    };
  }

  attention<O extends AttentionOptions = AttentionOptions>(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    options?: O,
  ): AttentionResult<O> {
    const op = 'attention';
    const raw = this.live(op);
    checkTensor(op, 'q', q);
    checkTensor(op, 'k', k);
    checkTensor(op, 'v', v);
    const o = checkOptions(op, options, ATTENTION_OPTIONS);
    checkMask(op, o.mask);
    return unwrap(raw.attention(q, k, v, o)) as AttentionResult<O>;
  }

  selfAttention<O extends AttentionOptions = AttentionOptions>(x: Tensor, options?: O): AttentionResult<O> {
    const op = 'selfAttention';
    const raw = this.live(op);
    checkTensor(op, 'x', x);
    const o = checkOptions(op, options, ATTENTION_OPTIONS);
    checkMask(op, o.mask);
    return unwrap(raw.selfAttention(x, o)) as AttentionResult<O>;
  }

  multiHeadAttention<O extends MultiHeadOptions>(x: Tensor, params: MultiHeadParams, options: O): MultiHeadResult<O> {
    const op = 'multiHeadAttention';
    const raw = this.live(op);
    checkTensor(op, 'x', x);
    checkParams(op, params);
    const o = checkOptions(op, options, MULTI_HEAD_OPTIONS);
    if (typeof o.heads !== 'number') throw new Error(`${op}: options.heads must be a number, got ${typeName(o.heads)}`);
    checkMask(op, o.mask);
    checkTensor(op, 'context', o.context, true);
    return unwrap(raw.multiHeadAttention(x, params, o)) as MultiHeadResult<O>;
  }

  multiHeadLayer(params: MultiHeadParams, options: { heads: number }): MultiHeadLayer {
    const op = 'multiHeadLayer';
    this.live(op);
    checkParams(op, params);
    const o = checkOptions(op, options, { heads: 'number' });
    if (typeof o.heads !== 'number') throw new Error(`${op}: options.heads must be a number, got ${typeName(o.heads)}`);
    const handle = loaded(new this.module.MultiHeadLayer(), (h) => h.load(params, o));
    const layer = new WasmMultiHeadLayer(handle, () => this.live('multiHeadLayer.run'));
    this.owned.add(layer);
    return layer;
  }

  linearLayer(w: Tensor, b?: Tensor): LinearLayer {
    const op = 'linearLayer';
    this.live(op);
    checkTensor(op, 'w', w);
    checkTensor(op, 'b', b, true);
    const handle = loaded(new this.module.LinearLayer(), (h) => h.load(w, b));
    const live = () => this.live('linearLayer.run');
    let raw: typeof handle | null = handle;
    const layer: LinearLayer = {
      run(x: Tensor): Tensor {
        if (!raw)
          throw new Error('linearLayer.run: this layer was disposed; create it again with engine.linearLayer()');
        checkTensor('linearLayer.run', 'x', x);
        return unwrap(raw.run(live(), x)).output;
      },
      dispose(): void {
        raw?.delete();
        raw = null;
      },
    };
    this.owned.add(layer);
    return layer;
  }

  linear(x: Tensor, w: Tensor, b?: Tensor): Tensor {
    const op = 'linear';
    const raw = this.live(op);
    checkTensor(op, 'x', x);
    checkTensor(op, 'w', w);
    checkTensor(op, 'b', b, true);
    return unwrap(raw.linear(x, w, b)).output;
  }

  kernelPeak(): number {
    return this.live('kernelPeak').kernelPeak();
  }

  memory(): MemoryInfo {
    return { ...this.live('memory').memory(), handles: this.module.count_emval_handles() };
  }

  dispose(): void {
    if (!this.raw) return;
    for (const item of this.owned) item.dispose();
    this.raw.delete(); // joins the C++ thread pool
    this.raw = null;
    this.module.attnscopeTerminateWorkers();
  }
}

// (module (func (param v128 v128 v128) (result v128) local.get 0 local.get 1 local.get 2 f32x4.relaxed_madd))
// prettier-ignore
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x08, 0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b, 0x01, 0x7b, // type: (v128 v128 v128) -> v128
  0x03, 0x02, 0x01, 0x00, // one function of that type
  0x0a, 0x0d, 0x01, 0x0b, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfd, 0x85, 0x02, 0x0b, // its body
]);

/** Whether this JS engine runs relaxed SIMD (the shipped opcodes): Chrome and Edge 114+, Node 22+. */
export function relaxedSimdAvailable(): boolean {
  return WebAssembly.validate(RELAXED_SIMD_PROBE);
}

const BUILD_NAMES = Object.keys(BUILD_FILES).map((b) => `'${b}'`);

/** Resolves the thread count and the build, or throws naming what is wrong. */
export function chooseBuild(
  options: { threads?: number; build?: BuildName },
  defaultThreads: number,
  available: { threads: boolean; relaxedSimd: boolean },
): { build: BuildName; threads: number } {
  const { threads, build } = options;
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1 && threads <= MAX_THREADS))
    throw new Error(`createEngine: threads must be an integer from 1 to ${MAX_THREADS}, got ${String(threads)}`);
  if (build !== undefined && !Object.hasOwn(BUILD_FILES, build))
    throw new Error(`createEngine: build must be one of ${BUILD_NAMES.join(', ')}, got ${String(build)}`);
  if (build?.endsWith('-threads') && !available.threads)
    throw new Error(
      `createEngine: build '${build}' needs SharedArrayBuffer (and, in a page, cross-origin isolation via COOP/COEP headers)`,
    );
  if (build?.startsWith('relaxed-') && !available.relaxedSimd)
    throw new Error(
      `createEngine: build '${build}' needs relaxed SIMD, which this JavaScript engine lacks (Chrome and Edge 114+, Node 22+, or Node 20 with --experimental-wasm-relaxed-simd)`,
    );
  const single = build !== undefined && !build.endsWith('-threads');
  const wanted = threads ?? (single ? 1 : defaultThreads);
  const chosen: BuildName =
    build ?? `${available.relaxedSimd ? 'relaxed-' : ''}${available.threads && wanted > 1 ? 'simd-threads' : 'simd'}`;
  return { build: chosen, threads: chosen.endsWith('-threads') ? wanted : 1 };
}

/** Instantiates one module and wraps it. */
export async function openEngine(
  factory: ModuleFactory,
  args: ModuleArgs,
  build: BuildName,
  threads: number,
  platform: Platform,
  afterLoad?: (module: RawModule) => void,
): Promise<Engine> {
  const module = await factory({ ...args, attnscopePoolSize: build.endsWith('-threads') ? threads - 1 : 0 });
  afterLoad?.(module);
  return new WasmEngine(module, new module.Engine(threads), build, platform);
}

/** Bytes of a `{ files }` value that every platform can read. */
export async function bytesOf(op: string, name: string, value: unknown): Promise<Uint8Array | undefined> {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof Blob !== 'undefined' && value instanceof Blob) return new Uint8Array(await value.arrayBuffer());
  if (typeof value === 'string') return undefined; // a path: the platform decides
  throw new Error(`${op}: files["${name}"] must be a Blob, File, ArrayBuffer or Uint8Array, got ${typeName(value)}`);
}
