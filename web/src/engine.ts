// The typed engine over the raw module: checks what JS types can get wrong, lets C++ check
// shapes and values, and turns { error } into a thrown Error.
import type {
  AttentionOptions,
  AttentionResult,
  BuildName,
  Comparison,
  DecodedAudio,
  DefaultSource,
  Engine,
  EngineInfo,
  HeadSummary,
  HubPlan,
  HubSource,
  LinearLayer,
  MemoryInfo,
  Model,
  ModelFiles,
  ModelSource,
  MultiHeadLayer,
  MultiHeadOptions,
  MultiHeadParams,
  MultiHeadResult,
  Tensor,
  Tokenizer,
} from './types.js';
import { Analysis } from './analysis.js';
import { Audio } from './audio.js';
import { checkInto, checkMask, checkOptions, checkTensor, message, typeName, useMessages } from './checks.js';
import { type FilePieces, piecesHead, releaseAll, WEIGHTS_FILE } from './file-pieces.js';
import { blobHead, type GgufHead, ggufWeightBytes } from './gguf-heap.js';
import { fetchHubModel, planHubFiles } from './hub.js';
import { MULTI_HEAD_OPTIONS, WasmMultiHeadLayer, checkParams, linearLayer } from './layers.js';
import { WasmModel, WasmTokenizer } from './model.js';
import {
  type ModuleArgs,
  type ModuleFactory,
  type Platform,
  type RawEngine,
  type RawModelHandle,
  type RawModule,
  loaded,
  unwrap,
} from './raw.js';

const ATTENTION_OPTIONS = {
  causal: 'boolean',
  scale: 'number',
  mask: 'other',
  returnWeights: 'boolean',
  into: 'other',
} as const;

/** `{ default: true, onProgress? }`: the default model with options (an `onProgress` that is not a function is refused). */
function isDefaultSource(source: unknown): source is DefaultSource {
  if (typeof source !== 'object' || source === null || (source as DefaultSource).default !== true) return false;
  const { onProgress } = source as DefaultSource;
  if (onProgress !== undefined && typeof onProgress !== 'function')
    throw new Error(`loadModel: onProgress must be a function, got ${typeName(onProgress)}`);
  return true;
}

class WasmEngine implements Engine {
  private raw: RawEngine | null;
  private readonly owned = new Set<{ dispose(): void }>(); // models and tokenizers, freed with the engine
  private readonly analysis: Analysis;
  private readonly audio: Audio;

  constructor(
    private readonly module: RawModule,
    raw: RawEngine,
    private readonly choice: { build: BuildName; reason: string },
    private readonly platform: Platform,
  ) {
    this.raw = raw;
    this.analysis = new Analysis(module);
    this.audio = new Audio(platform);
    useMessages(module.messages());
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

  decodeAudio(...args: Parameters<Engine['decodeAudio']>): Promise<DecodedAudio> {
    this.live('decodeAudio');
    return this.audio.decodeAudio(...args);
  }

  private async readFiles(op: string, source: unknown): Promise<Record<string, Uint8Array | FilePieces>> {
    const given = (source as { files?: unknown } | null)?.files;
    if (typeof given !== 'object' || given === null)
      throw new Error(
        `${op}: source must be ${op === 'loadModel' ? "'default', { hub } or " : ''}{ files }, got ${typeName(source)}`,
      );
    const entries = Object.entries(given as ModelFiles);
    // A weight file is read a tensor at a time where the platform can (a Blob in a worker, a path in Node).
    const files: Record<string, Uint8Array | FilePieces> = {};
    if (op === 'loadModel')
      for (const [name, value] of entries) {
        const pieces = WEIGHTS_FILE.test(name) ? this.platform.pieces(op, name, value) : undefined;
        if (pieces) files[name] = pieces;
      }
    try {
      // A GGUF too large for the heap is refused from its headers, before it is read.
      const ggufs = entries.filter(([name]) => name.endsWith('.gguf'));
      const heads = ggufs.map(([name, value]) =>
        files[name] ? piecesHead(name, files[name] as FilePieces) : isBlob(value) ? blobHead(name, value) : undefined,
      );
      if (op === 'loadModel' && ggufs.length && heads.every((head) => head)) {
        const weightBytes = await ggufWeightBytes(this.module, op, heads as GgufHead[]);
        this.checkFits(op, ggufs.map(([name]) => name).join(', '), weightBytes, 'read');
      }
      for (const [name, value] of entries) files[name] ??= await this.platform.read(op, name, value);
    } catch (err) {
      releaseAll(files);
      throw err;
    }
    return files;
  }

  async loadTokenizer(source: { files: ModelFiles }): Promise<Tokenizer> {
    const op = 'loadTokenizer';
    this.live(op);
    // Only a model's weight files are read in pieces: a tokenizer's are bytes.
    const files = (await this.readFiles(op, source)) as Record<string, Uint8Array>;
    const handle = loaded(new this.module.TokenizerHandle(), (h) => h.load(files));
    const tokenizer = new WasmTokenizer(handle);
    this.owned.add(tokenizer);
    return tokenizer;
  }

  async loadModel(source: ModelSource): Promise<Model> {
    const op = 'loadModel';
    this.live(op);
    const defaults: Partial<DefaultSource> | undefined =
      source === 'default' ? {} : isDefaultSource(source) ? source : undefined;
    const files = defaults
      ? await this.platform.defaultModel(defaults.onProgress)
      : typeof source === 'object' && source !== null && 'hub' in source
        ? await fetchHubModel(
            source,
            this.platform.hubStorage,
            (bytes) => this.checkFits(op, source.hub, bytes),
            (heads) => ggufWeightBytes(this.module, op, heads),
          )
        : await this.readFiles(op, source);
    let handle: RawModelHandle;
    try {
      handle = loaded(new this.module.ModelHandle(), (h) => h.load(files));
    } finally {
      releaseAll(files); // the weights read in pieces are in the heap, or the load failed
    }
    const generationConfig = files['generation_config.json'];
    const model = new WasmModel(
      handle,
      () => this.live('run'),
      () => new this.module.GenerationHandle(),
      generationConfig instanceof Uint8Array ? generationConfig : undefined,
    );
    this.owned.add(model);
    return model;
  }

  async hubPlan(source: Pick<HubSource, 'hub' | 'baseUrl' | 'revision' | 'file'>): Promise<HubPlan> {
    const op = 'hubPlan';
    this.live(op);
    if (typeof source !== 'object' || source === null)
      throw new Error(`${op}: source must be { hub: 'org/name' }, got ${typeName(source)}`);
    const { hub, baseUrl, revision, file } = source;
    const { id, files, heads } = await planHubFiles({ hub, baseUrl, revision, file });
    const weightBytes = heads
      ? await ggufWeightBytes(this.module, op, heads)
      : files.reduce((sum, f) => sum + (f.weights ? f.size : 0), 0);
    const { heapBytes, freeBytes, fits } = this.heapFor(op, weightBytes);
    return {
      id,
      files,
      downloadBytes: files.reduce((sum, f) => sum + f.size, 0),
      weightBytes,
      heapBytes,
      freeBytes,
      fits,
    };
  }

  /** The heap weights need (with the room to run), what is free beside what the engine holds, and whether they fit. */
  private heapFor(op: string, weightBytes: number): { heapBytes: number; freeBytes: number; fits: boolean } {
    const { maxHeapBytes, runningRoomBytes } = this.module.buildInfo();
    const heapBytes = weightBytes + runningRoomBytes;
    const freeBytes = maxHeapBytes - this.live(op).memory().allocatedBytes;
    return { heapBytes, freeBytes, fits: heapBytes <= freeBytes };
  }

  /** Refuses weights that cannot fit the heap beside what it holds (as the C++ load would, but before a download). */
  private checkFits(op: string, name: string, weightBytes: number, before: 'downloaded' | 'read' = 'downloaded'): void {
    if (this.heapFor(op, weightBytes).fits) return;
    const { maxHeapBytes, runningRoomBytes } = this.module.buildInfo();
    const inUse = this.live(op).memory().allocatedBytes;
    const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
    throw new Error(
      `${op}: ${name} needs ${mib(weightBytes)} MiB for its weights, and the engine's ${mib(maxHeapBytes)} MiB heap ` +
        `holds ${mib(inUse)} MiB already and keeps ${mib(runningRoomBytes)} MiB for running: the model is too large ` +
        `for this engine (dispose of other models first); nothing was ${before}`,
    );
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
      build: this.choice.build,
      reason: this.choice.reason,
      maxCallBytes: b.maxCallBytes,
      maxHeapBytes: b.maxHeapBytes,
      runningRoomBytes: b.runningRoomBytes,
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
    checkInto(op, o.into, { q, k, v, 'options.mask': o.mask });
    return unwrap(raw.attention(q, k, v, o)) as AttentionResult<O>;
  }

  selfAttention<O extends AttentionOptions = AttentionOptions>(x: Tensor, options?: O): AttentionResult<O> {
    const op = 'selfAttention';
    const raw = this.live(op);
    checkTensor(op, 'x', x);
    const o = checkOptions(op, options, ATTENTION_OPTIONS);
    checkMask(op, o.mask);
    checkInto(op, o.into, { x, 'options.mask': o.mask });
    return unwrap(raw.selfAttention(x, o)) as AttentionResult<O>;
  }

  multiHeadAttention<O extends MultiHeadOptions>(x: Tensor, params: MultiHeadParams, options: O): MultiHeadResult<O> {
    const op = 'multiHeadAttention';
    const raw = this.live(op);
    checkTensor(op, 'x', x);
    checkParams(op, params);
    const o = checkOptions(op, options, MULTI_HEAD_OPTIONS);
    if (typeof o.heads !== 'number')
      throw new Error(message('option_type', { op, name: 'heads', type: 'number', got: typeName(o.heads) }));
    checkMask(op, o.mask);
    checkTensor(op, 'context', o.context, true);
    checkInto(op, o.into, { x, ...params, 'options.context': o.context, 'options.mask': o.mask });
    return unwrap(raw.multiHeadAttention(x, params, { ...o, heads: o.heads })) as MultiHeadResult<O>;
  }

  multiHeadLayer(params: MultiHeadParams, options: { heads: number }): MultiHeadLayer {
    const op = 'multiHeadLayer';
    this.live(op);
    checkParams(op, params);
    const o = checkOptions(op, options, { heads: 'number' });
    if (typeof o.heads !== 'number')
      throw new Error(message('option_type', { op, name: 'heads', type: 'number', got: typeName(o.heads) }));
    const heads = o.heads;
    const handle = loaded(new this.module.MultiHeadLayer(), (h) => h.load(params, { heads }));
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
    const layer = linearLayer(handle, () => this.live('linearLayer.run'));
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

/** Instantiates one module and wraps it. */
export async function openEngine(
  factory: ModuleFactory,
  args: ModuleArgs,
  choice: { build: BuildName; threads: number; reason: string },
  platform: Platform,
  afterLoad?: (module: RawModule) => void,
): Promise<Engine> {
  const { build, threads } = choice;
  // A threaded build keeps at least one pthread worker: with none, its module never finishes starting. On one
  // thread that worker stays idle.
  const pool = build.endsWith('-threads') ? Math.max(1, threads - 1) : 0;
  const module = await factory({ ...args, attnscopePoolSize: pool });
  afterLoad?.(module);
  return new WasmEngine(module, new module.Engine(threads), choice, platform);
}

/** Whether a value is a Blob (a File), where this platform has them. */
const isBlob = (value: unknown): value is Blob => typeof Blob !== 'undefined' && value instanceof Blob;

/** Bytes of a `{ files }` value that every platform can read. */
export async function bytesOf(op: string, name: string, value: unknown): Promise<Uint8Array | undefined> {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (isBlob(value)) return new Uint8Array(await value.arrayBuffer());
  if (typeof value === 'string') return undefined; // a path: the platform decides
  throw new Error(`${op}: files["${name}"] must be a Blob, File, ArrayBuffer or Uint8Array, got ${typeName(value)}`);
}
