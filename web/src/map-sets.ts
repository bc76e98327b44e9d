// Named sets of attention maps, each with the tokens of its rows (queries) and columns (keys): what a run returns as
// `maps`, built from the engine's sets (no copy of the maps).
import type { MapSet, MapSets } from './model-types.js';
import type { RawMapSet, RawSequence } from './raw.js';
import { summariesOf } from './analysis.js';

/** One of the engine's map sets with its sequences' tokens; the maps themselves are the engine's array. */
export function mapSetOf(set: RawMapSet, sequences: readonly RawSequence[]): MapSet {
  const rows = sequences[set.queries];
  const cols = sequences[set.keys];
  return {
    kind: set.queries === set.keys ? 'self' : 'cross',
    causal: set.causal,
    queryTokens: rows.tokens,
    keyTokens: cols.tokens,
    attentions: set.attentions.data,
    shape: set.attentions.shape as MapSet['shape'],
    mapLayers: set.mapLayers,
    layers: set.mapLayers,
    querySequence: rows.name,
    keySequence: cols.name,
    ...(set.headSummaries && { headSummaries: summariesOf(set.headSummaries, set.mapLayers) }),
    ...(set.rollout && { rollout: set.rollout }),
    ...(set.flow && { flow: set.flow }),
  };
}

/** Every map set of a run, by name. */
export function mapSetsOf(sets: readonly RawMapSet[], sequences: readonly RawSequence[]): MapSets {
  return Object.fromEntries(sets.map((set) => [set.name, mapSetOf(set, sequences)]));
}

/** A single-stack sequence's maps as its `self` set (a generation's, which the engine returns without a set). */
export function selfMaps(
  tokens: string[],
  attentions: Float32Array,
  shape: MapSet['shape'],
  layers: number[],
  causal: boolean,
  sequence = 'text',
): MapSet {
  return {
    kind: 'self',
    causal,
    queryTokens: tokens,
    keyTokens: tokens,
    attentions,
    shape,
    mapLayers: layers,
    layers,
    querySequence: sequence,
    keySequence: sequence,
  };
}
