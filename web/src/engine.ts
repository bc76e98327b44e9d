// The typed engine over the raw module: checks what JS types can get wrong,
// lets C++ check shapes and values, and turns { error } into a thrown Error.
import type {
  AttentionOptions,
  AttentionResult,
  BuildName,
  Engine,
  EngineInfo,
  MemoryInfo,
  MultiHeadOptions,
  MultiHeadParams,
  MultiHeadResult,
  Tensor,
} from './types.js';
import {
  BUILD_FILES,
  type ModuleArgs,
  type ModuleFactory,
  type RawEngine,
  type RawModule,
  type RawResult,
} from './raw.js';

export const MAX_THREADS = 64;

function typeName(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'Array';
  if (typeof x === 'object') return (x as object).constructor?.name ?? 'object';
  return typeof x;
}

function checkTensor(op: string, name: string, t: unknown, optional = false): void {
  if (t === undefined && optional) return;
  if (typeof t !== 'object' || t === null || !('data' in t) || !('shape' in t))
    throw new Error(`${op}: ${name} must be { data: Float32Array, shape: number[] }, got ${typeName(t)}`);
  const { data, shape } = t as { data: unknown; shape: unknown };
  if (!(data instanceof Float32Array))
    throw new Error(`${op}: ${name}.data must be a Float32Array, got ${typeName(data)}`);
  checkShapeList(op, name, shape);
}

function checkShapeList(op: string, name: string, shape: unknown): void {
  if (!Array.isArray(shape) || !shape.every((d) => typeof d === 'number'))
    throw new Error(`${op}: ${name}.shape must be an array of numbers, got ${typeName(shape)}`);
}

function checkMask(op: string, mask: unknown): void {
  if (mask === undefined) return;
  if (typeof mask !== 'object' || mask === null || !('data' in mask) || !('shape' in mask))
    throw new Error(`${op}: mask must be { data: Uint8Array | Float32Array, shape: number[] }, got ${typeName(mask)}`);
  const { data, shape } = mask as { data: unknown; shape: unknown };
  if (!(data instanceof Uint8Array) && !(data instanceof Float32Array))
    throw new Error(
      `${op}: mask.data must be a Uint8Array (1 = attend) or a Float32Array (additive), got ${typeName(data)}`,
    );
  checkShapeList(op, 'mask', shape);
}

function checkOption(op: string, options: Record<string, unknown>, name: string, type: 'boolean' | 'number'): void {
  const v = options[name];
  if (v !== undefined && typeof v !== type)
    throw new Error(`${op}: options.${name} must be a ${type}, got ${typeName(v)}`);
}

function checkOptions(
  op: string,
  options: unknown,
  known: Record<string, 'boolean' | 'number' | 'other'>,
): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null)
    throw new Error(`${op}: options must be an object, got ${typeName(options)}`);
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    const kind = known[key];
    if (!kind) throw new Error(`${op}: unknown option '${key}' (known: ${Object.keys(known).join(', ')})`);
    if (kind !== 'other') checkOption(op, o, key, kind);
  }
  return o;
}

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

class WasmEngine implements Engine {
  private raw: RawEngine | null;

  constructor(
    private readonly module: RawModule,
    raw: RawEngine,
    private readonly build: BuildName,
  ) {
    this.raw = raw;
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
    if (typeof params !== 'object' || params === null)
      throw new Error(`${op}: params must be { wq, wk, wv, wo, bq?, bk?, bv?, bo? }, got ${typeName(params)}`);
    for (const name of ['wq', 'wk', 'wv', 'wo'] as const) checkTensor(op, name, params[name]);
    for (const name of ['bq', 'bk', 'bv', 'bo'] as const) checkTensor(op, name, params[name], true);
    const o = checkOptions(op, options, MULTI_HEAD_OPTIONS);
    if (typeof o.heads !== 'number') throw new Error(`${op}: options.heads must be a number, got ${typeName(o.heads)}`);
    checkMask(op, o.mask);
    checkTensor(op, 'context', o.context, true);
    return unwrap(raw.multiHeadAttention(x, params, o)) as MultiHeadResult<O>;
  }

  memory(): MemoryInfo {
    return this.live('memory').memory();
  }

  dispose(): void {
    if (!this.raw) return;
    this.raw.delete(); // joins the C++ thread pool
    this.raw = null;
    this.module.attnscopeTerminateWorkers();
  }
}

/** Resolves the thread count and the build, or throws naming what is wrong. */
export function chooseBuild(
  options: { threads?: number; build?: BuildName },
  defaultThreads: number,
  threadsAvailable: boolean,
): { build: BuildName; threads: number } {
  const { threads, build } = options;
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1 && threads <= MAX_THREADS))
    throw new Error(`createEngine: threads must be an integer from 1 to ${MAX_THREADS}, got ${String(threads)}`);
  if (build !== undefined && !(build in BUILD_FILES))
    throw new Error(`createEngine: build must be 'simd-threads' or 'simd', got ${String(build)}`);
  if (build === 'simd-threads' && !threadsAvailable)
    throw new Error(
      "createEngine: build 'simd-threads' needs SharedArrayBuffer (and, in a page, cross-origin isolation via COOP/COEP headers)",
    );
  const wanted = threads ?? (build === 'simd' ? 1 : defaultThreads);
  const chosen: BuildName = build ?? (threadsAvailable && wanted > 1 ? 'simd-threads' : 'simd');
  return { build: chosen, threads: chosen === 'simd' ? 1 : wanted };
}

/** Instantiates one module and wraps it. */
export async function openEngine(
  factory: ModuleFactory,
  args: ModuleArgs,
  build: BuildName,
  threads: number,
  afterLoad?: (module: RawModule) => void,
): Promise<Engine> {
  const module = await factory({ ...args, attnscopePoolSize: build === 'simd-threads' ? threads - 1 : 0 });
  afterLoad?.(module);
  return new WasmEngine(module, new module.Engine(threads), build);
}
