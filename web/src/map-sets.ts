// Named sets of attention maps, each with the tokens of its rows (queries) and columns (keys): what a run
// returns as `maps`, and what the analysis functions read to know whether a measure is defined.
import type { MapSet } from './model-types.js';

/** A single-stack run's maps as its `self` set: queries and keys are the run's tokens; no copy of the maps. */
export function selfMaps(
  tokens: string[],
  attentions: Float32Array,
  shape: MapSet['shape'],
  layers: number[],
  causal: boolean,
): MapSet {
  return { kind: 'self', causal, queryTokens: tokens, keyTokens: tokens, attentions, shape, layers };
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
