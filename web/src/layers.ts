// Attention weights and linear maps kept in the engine between calls.
import type {
  LinearLayer,
  MultiHeadLayer,
  MultiHeadOptions,
  MultiHeadParams,
  MultiHeadResult,
  Tensor,
} from './types.js';
import { checkInto, checkMask, checkOptions, checkTensor, typeName } from './checks.js';
import { type RawEngine, type RawLinearLayer, type RawMultiHeadLayer, unwrap } from './raw.js';

export const MULTI_HEAD_OPTIONS = {
  heads: 'number',
  causal: 'boolean',
  mask: 'other',
  context: 'other',
  returnWeights: 'boolean',
  returnProjections: 'boolean',
  into: 'other',
} as const;

export function checkParams(op: string, params: MultiHeadParams): void {
  if (typeof params !== 'object' || params === null)
    throw new Error(`${op}: params must be { wq, wk, wv, wo, bq?, bk?, bv?, bo? }, got ${typeName(params)}`);
  for (const name of ['wq', 'wk', 'wv', 'wo'] as const) checkTensor(op, name, params[name]);
  for (const name of ['bq', 'bk', 'bv', 'bo'] as const) checkTensor(op, name, params[name], true);
}

export class WasmMultiHeadLayer implements MultiHeadLayer {
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
    checkInto(op, o.into, { x, 'options.context': o.context, 'options.mask': o.mask });
    return unwrap(this.handle.run(this.engine(), x, o)) as MultiHeadResult<O & { heads: number }>;
  }

  dispose(): void {
    this.handle?.delete();
    this.handle = null;
  }
}

/** A {@link LinearLayer} over a loaded raw handle. */
export function linearLayer(handle: RawLinearLayer, engine: () => RawEngine): LinearLayer {
  let raw: RawLinearLayer | null = handle;
  return {
    run(x: Tensor): Tensor {
      if (!raw) throw new Error('linearLayer.run: this layer was disposed; create it again with engine.linearLayer()');
      checkTensor('linearLayer.run', 'x', x);
      return unwrap(raw.run(engine(), x)).output;
    },
    dispose(): void {
      raw?.delete();
      raw = null;
    },
  };
}
