// Rollout, flow, head summaries, comparison and .npy over the raw module's
// analysis functions (cpp/bindings/analysis.cpp): checks what JS types can get
// wrong, lets C++ check shapes and values, and throws its { error } messages.
import type { AttentionMaps, Comparison, FlowOptions, HeadSummary, MapSet, Tensor } from './types.js';
import type { RawAnalysis } from './raw.js';
import { checkOptions, checkTensor, typeName } from './checks.js';

type Maps = Pick<AttentionMaps, 'attentions' | 'shape'>;

function result<T>(r: { error: string } | T): T {
  if (typeof r === 'object' && r !== null && 'error' in r && typeof r.error === 'string') throw new Error(r.error);
  return r as T;
}

/** The maps as a raw tensor argument, or an Error naming what is wrong. */
function mapsOf(op: string, name: string, maps: unknown): Tensor {
  if (typeof maps !== 'object' || maps === null || !('attentions' in maps) || !('shape' in maps))
    throw new Error(
      `${op}: ${name} must be { attentions: Float32Array, shape: [layers, heads, n, n] }, got ${typeName(maps)}`,
    );
  const { attentions, shape } = maps as { attentions: unknown; shape: unknown };
  const t = { data: attentions, shape: Array.isArray(shape) ? [...shape] : shape };
  checkTensor(op, `${name}.attentions`, t);
  return t as Tensor;
}

/**
 * The raw head summaries `[layers, heads, 6]` as objects; `layers` names each slot's layer in the model (a run's
 * mapLayers), else the slot is the layer.
 */
export function summariesOf(s: Tensor, layers?: readonly number[]): HeadSummary[] {
  const [held, heads] = s.shape;
  const out: HeadSummary[] = [];
  for (let slot = 0; slot < held; slot++)
    for (let head = 0; head < heads; head++) {
      const m = s.data.subarray((slot * heads + head) * 6);
      out.push({
        layer: layers?.[slot] ?? slot,
        head,
        entropy: m[0],
        distance: m[1],
        previous: m[2],
        self: m[3],
        special: m[4],
        punctuation: m[5],
      });
    }
  return out;
}

/**
 * Why rollout and attention flow are not defined on these maps, or undefined when they are. Both multiply each
 * layer's maps into the next layer's: each layer's keys must be the tokens the previous layer's queries were, one
 * sequence attending to itself.
 */
export function whyNoFlow(maps: { kind?: unknown; shape: readonly number[] }): string | undefined {
  if (maps.shape.length !== 4) return undefined; // not maps at all: the engine's shape check says what is wrong
  const [, , nq, nk] = maps.shape;
  if (maps.kind === 'cross' || nq !== nk)
    return `these are cross-attention maps (${nq} queries × ${nk} keys): rollout and flow follow attention back through the layers of one sequence attending to itself, and cross-attention's keys are another sequence's tokens`;
  return undefined;
}

/** The maps for rollout or flow, or an Error saying why they are not defined on them. */
function flowMapsOf(op: string, maps: Maps | MapSet): Tensor {
  const t = mapsOf(op, 'maps', maps);
  const why = whyNoFlow({ kind: 'kind' in maps ? maps.kind : undefined, shape: t.shape });
  if (why) throw new Error(`${op}: not defined here: ${why}`);
  return t;
}

/** A self-attention set as a run's maps, or an Error for a cross-attention one. */
function selfSetMaps(op: string, set: MapSet): AttentionMaps {
  if (set.kind !== 'self' || !Array.isArray(set.queryTokens) || set.queryTokens.length !== set.keyTokens?.length)
    throw new Error(
      `${op}: defined for self-attention: its distance, previous-token and self measures compare a query's position with its keys' positions in the same sequence, and this set's keys are another sequence's tokens`,
    );
  return { attentions: set.attentions, shape: set.shape, tokens: set.queryTokens };
}

function tokensOf(op: string, name: string, maps: AttentionMaps): string[] {
  const { tokens } = maps;
  if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === 'string'))
    throw new Error(`${op}: ${name}.tokens must be an array of strings, got ${typeName(tokens)}`);
  return tokens;
}

const FLOW_OPTIONS = { residual: 'boolean', rows: 'other' } as const;

export class Analysis {
  constructor(private readonly raw: RawAnalysis) {}

  rollout(maps: Maps | MapSet, options?: FlowOptions): Tensor {
    const o = checkOptions('rollout', options, { residual: 'boolean' });
    return result(this.raw.rollout(flowMapsOf('rollout', maps), o));
  }

  attentionFlow(maps: Maps | MapSet, options?: FlowOptions & { rows?: number[] }): Tensor {
    const op = 'attentionFlow';
    const o = checkOptions(op, options, FLOW_OPTIONS);
    if (o.rows !== undefined && !Array.isArray(o.rows))
      throw new Error(`${op}: options.rows must be an array of token positions, got ${typeName(o.rows)}`);
    return result(this.raw.attentionFlow(flowMapsOf(op, maps), o));
  }

  headSummaries(input: AttentionMaps | MapSet): HeadSummary[] {
    const op = 'headSummaries';
    const maps = 'queryTokens' in input ? selfSetMaps(op, input) : input;
    const t = mapsOf(op, 'maps', maps);
    const tokens = tokensOf(op, 'maps', maps);
    const special = maps.special ?? tokens.map(() => false);
    if (!Array.isArray(special) || special.length !== tokens.length)
      throw new Error(`${op}: maps.special must have one boolean per token (${tokens.length})`);
    const s = result(
      this.raw.headSummaries(
        t,
        tokens,
        special.map((x) => (x ? 1 : 0)),
      ),
    );
    return summariesOf(s);
  }

  compare(a: AttentionMaps, b: AttentionMaps): Comparison {
    const op = 'compare';
    const ta = mapsOf(op, 'a', a),
      tb = mapsOf(op, 'b', b);
    const flat = result(this.raw.alignTokens(tokensOf(op, 'a', a), tokensOf(op, 'b', b))).pairs;
    const pairs: Array<[number, number]> = [];
    for (let k = 0; k < flat.length; k += 2) pairs.push([flat[k], flat[k + 1]]);
    const unaligned = {
      a: a.tokens.map((_, i) => i).filter((i) => !pairs.some((p) => p[0] === i)),
      b: b.tokens.map((_, j) => j).filter((j) => !pairs.some((p) => p[1] === j)),
    };
    const [la, ha, na] = ta.shape,
      [lb, hb, nb] = tb.shape;
    if (na !== a.tokens.length || nb !== b.tokens.length)
      throw new Error(`${op}: each run needs one token per row of its maps (${na} and ${nb} rows)`);
    let message: string | undefined;
    let change: Tensor | undefined;
    if (!pairs.length) message = 'No tokens align between the two runs, so their maps cannot be compared.';
    else if (la !== lb || ha !== hb)
      message = `The runs have ${la} × ${ha} and ${lb} × ${hb} layers × heads: only heads both have can be compared.`;
    else change = result(this.raw.attentionChange(ta, tb, flat));
    const difference = (layer: number, head: number): Tensor => {
      for (const [name, v, limit] of [
        ['layer', layer, Math.min(la, lb)],
        ['head', head, Math.min(ha, hb)],
      ] as const)
        if (!Number.isInteger(v) || v < 0 || v >= limit)
          throw new Error(`compare: ${name} ${String(v)} is not in both runs (0 to ${limit - 1})`);
      const k = pairs.length;
      const data = new Float32Array(k * k);
      const A = ta.data.subarray((layer * ha + head) * na * na),
        B = tb.data.subarray((layer * hb + head) * nb * nb);
      pairs.forEach(([i, i2], r) =>
        pairs.forEach(([j, j2], c) => {
          data[r * k + c] = A[i * na + j] - B[i2 * nb + j2];
        }),
      );
      return { data, shape: [k, k] };
    };
    return { pairs, unaligned, change, message, difference };
  }

  cosineSimilarity(a: Tensor, b: Tensor): Float32Array {
    checkTensor('cosineSimilarity', 'a', a);
    checkTensor('cosineSimilarity', 'b', b);
    return result(this.raw.cosineSimilarity(a, b)).data;
  }

  toNpy(tensor: Tensor): Uint8Array {
    checkTensor('toNpy', 'tensor', tensor);
    return result(this.raw.toNpy(tensor)).bytes;
  }
}
