// Explanations as the package returns them (explain-types.ts): the engine's sources named in words for the run's
// tokens, the largest terms picked out, and a logit's heads laid out as a grid.
import type { RawLogitExplanation, RawScoreExplanation, RawSource } from './raw.js';
import type { LogitExplanation, ScoreExplanation, Source, Term } from './types.js';

/** What the words need of the run and the model: each sequence's tokens, each stack's layers and heads. */
export interface Naming {
  tokens: string[][];
  layers: number[];
  heads: number[];
}

const LAYER_NORMS = ['attention', 'cross', 'mlp'] as const;

function sourceOf(raw: RawSource, naming: Naming): Source {
  const { kind, stack: sequence, layer, head, position } = raw;
  const token = JSON.stringify(naming.tokens[sequence]?.[position] ?? `#${position}`);
  const stackName = naming.tokens.length > 1 ? (sequence === 0 ? 'encoder ' : 'decoder ') : '';
  const L = `${stackName}L${layer}`;
  const source: Source = { kind, sequence, layer, head, position, label: '' };
  switch (kind) {
    case 'token':
      source.label = `embedding of ${token}`;
      break;
    case 'position':
      source.label = `position ${position}`;
      break;
    case 'prefix':
    case 'register':
      source.label = `${token} embedding`;
      break;
    case 'patch':
      source.label = `${token} pixels`;
      break;
    case 'patchBias':
      source.label = 'patch projection bias';
      break;
    case 'audio':
      source.label = `sound at ${token}`;
      break;
    case 'head':
      source.label = `${L} H${head} at ${token}`;
      break;
    case 'attentionBias':
      source.label = `${L} W_O bias`;
      break;
    case 'cross':
      source.label = `${L} cross-attention at ${token}`;
      break;
    case 'mlp':
      source.label = `${L} MLP at ${token}`;
      break;
    case 'normBias':
      source.norm = layer < 0 ? 'embeddings' : layer >= naming.layers[sequence]! ? 'final' : LAYER_NORMS[head]!;
      source.label =
        source.norm === 'embeddings' || source.norm === 'final'
          ? `${stackName}${source.norm} norm bias`
          : `${L} ${source.norm} norm bias`;
      break;
    case 'widenBias':
      source.label = `${L} widening bias`;
      break;
    case 'queryBias':
      source.label = `${L} b_Q`;
      break;
    case 'keyBias':
      source.label = `${L} b_K`;
      break;
    case 'logitBias':
      source.label = 'logit bias';
      break;
  }
  return source;
}

/** The `count` largest terms by size, largest first, zeros left out: [index, value]. */
function largestOf(terms: Float64Array, count: number): Array<[number, number]> {
  const top: Array<[number, number]> = [];
  for (let i = 0; i < terms.length; i++) {
    const v = terms[i]!;
    if (v === 0) continue;
    if (top.length === count && Math.abs(v) <= Math.abs(top[count - 1]![1])) continue;
    let at = top.length === count ? count - 1 : top.length;
    while (at > 0 && Math.abs(top[at - 1]![1]) < Math.abs(v)) at--;
    top.splice(at, 0, [i, v]);
    if (top.length > count) top.pop();
  }
  return top;
}

export function scoreExplanation(raw: RawScoreExplanation, naming: Naming): ScoreExplanation {
  const querySources = raw.querySources.map((s) => sourceOf(s, naming));
  const keySources = raw.keySources.map((s) => sourceOf(s, naming));
  const nk = keySources.length;
  const largest: Term[] = largestOf(raw.terms, 10).map(([i, value]) => {
    const query = Math.floor(i / nk),
      key = i % nk;
    return {
      query,
      key,
      value,
      text: `${querySources[query]!.label} (query) × ${keySources[key]!.label} (key)`,
    };
  });
  return {
    querySources,
    keySources,
    terms: raw.terms,
    score: raw.score,
    positionBias: raw.positionBias,
    softcap: raw.softcap > 0 ? raw.softcap : null,
    largest,
  };
}

export function logitExplanation(raw: RawLogitExplanation, naming: Naming): LogitExplanation {
  const sources = raw.sources.map((s) => sourceOf(s, naming));
  const last = naming.tokens.length - 1;
  const layers = naming.layers[last]!,
    heads = naming.heads[last]!;
  const grid = new Float64Array(layers * heads),
    mlps = new Float64Array(layers);
  sources.forEach((s, i) => {
    if (s.sequence !== last) return;
    if (s.kind === 'head') grid[s.layer * heads + s.head] = raw.terms[i]!;
    if (s.kind === 'mlp') mlps[s.layer] = raw.terms[i]!;
  });
  return {
    sources,
    terms: raw.terms,
    logit: raw.logit,
    softcap: raw.softcap > 0 ? raw.softcap : null,
    heads: grid,
    mlps,
    largest: largestOf(raw.terms, 10).map(([query, value]) => ({
      query,
      key: -1,
      value,
      text: sources[query]!.label,
    })),
  };
}
