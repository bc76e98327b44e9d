/**
 * Why a head attends where it does, and what pushes a logit: `model.explainScore()` and
 * `model.explainLogit()` take one pre-softmax score, or one next-token logit, apart by what the residual stream
 * holds. Every norm's per-token scale (and LayerNorm's mean) is frozen at the run's own value, which makes the path
 * from the stream to the score linear, so the parts add up exactly:
 *
 *   score(i, j) = Σ_a Σ_b scale · q(a)_i · k(b)_j  (+ T5's position bias)
 *   logit(p, t) = Σ_a final_norm(a)_p · E_t
 *
 * where a and b run over the sources of the query's and the key's streams, each carried through its norm, W_Q (or
 * W_K), QK-norm and RoPE.
 * @packageDocumentation
 */
/**
 * One vector written into a token's residual stream:
 * - `token`: the token's embedding (× the model's embedding scale); `position`: its learned or sinusoidal position
 *   (BERT's token type 0 is part of it);
 * - `prefix`: an image's [CLS] or distillation token; `register`: a register token (DINOv2); `patch`: an image
 *   patch's projection, `patchBias` that projection's bias; `audio`: the sound at a speech model's frame, as its two
 *   convolutions make it (one source: their GELUs are not linear);
 * - `head`: layer `layer`'s head `head`, its output through its rows of W_O; `attentionBias`: W_O's bias;
 *   `cross`: the layer's cross-attention (an encoder-decoder's decoder); `mlp`: the layer's MLP;
 * - `normBias`: a LayerNorm's bias (`norm` says which), `widenBias`: the bias of USE-lite's widening projection;
 * - `queryBias`, `keyBias`: b_Q and b_K of the score's own layer; `logitBias`: the LM head's bias.
 */
export type SourceKind =
  | 'token'
  | 'position'
  | 'prefix'
  | 'register'
  | 'patch'
  | 'patchBias'
  | 'audio'
  | 'head'
  | 'attentionBias'
  | 'cross'
  | 'mlp'
  | 'normBias'
  | 'widenBias'
  | 'queryBias'
  | 'keyBias'
  | 'logitBias';

/** One source of a token's residual stream: what wrote it, where, and in words. */
export interface Source {
  /** What the source is (see {@link SourceKind}). */
  kind: SourceKind;
  /** The sequence whose stream holds it, as `run.maps[…].queries` counts them: 0, or 1 (an encoder-decoder's target). */
  sequence: number;
  /** The layer that wrote it; -1 for what the front end wrote (embeddings, positions, patches). */
  layer: number;
  /** `head`, `queryBias`, `keyBias`: the head; else -1. */
  head: number;
  /** The token whose stream holds it. */
  position: number;
  /** `normBias`: the norm: the embeddings', a layer's before (or after) its attention, cross-attention or MLP, or the final one. */
  norm?: 'embeddings' | 'attention' | 'cross' | 'mlp' | 'final';
  /**
   * The source in words, e.g. `L2 H3 at "␣the"`, `embedding of "␣cat"`: layers and heads counted from 0, tokens as
   * `model.labels()` spells them.
   */
  label: string;
}

/** One term of an explanation, in words: the largest are listed first. */
export interface Term {
  /** Index into `querySources` (a score) or `sources` (a logit). */
  query: number;
  /** Index into `keySources` (scores only; -1 for a logit). */
  key: number;
  /** The term's part of the score or logit. */
  value: number;
  /** e.g. `L0 H2 at "the" (query) × embedding of "cat" (key)`. */
  text: string;
}

/** Which score to take apart. */
export interface ScoreQuery {
  /** The map set: `self` (default) for a model of one stack; `encoder` (default), `decoder` or `cross`. */
  set?: string;
  /** The layer, counted from 0 (of the set's stack). */
  layer: number;
  /** The query head, counted from 0. */
  head: number;
  /** The query's row and the key's column of that set's maps. */
  query: number;
  /** The key's column. */
  key: number;
}

/** One score taken apart: the query's sources × the key's sources. */
export interface ScoreExplanation {
  /** The sources of the query token's stream, in the order the terms' rows take. */
  querySources: Source[];
  /** The sources of the key token's stream (the encoder's output for cross-attention), the terms' columns. */
  keySources: Source[];
  /** `[querySources.length, keySources.length]`, row-major: each pair's part of the score. */
  terms: Float64Array;
  /** The engine's pre-softmax score `scale · q_i · k_j` (+ `positionBias`), before any soft-cap. */
  score: number;
  /** T5's relative position bias: part of `score`, of no source (0 for other models). */
  positionBias: number;
  /** Gemma 2: the softmax reads `softcap · tanh(score / softcap)`; the terms take apart the score before it. */
  softcap: number | null;
  /** The ten largest terms by size (terms of exactly 0 left out). */
  largest: Term[];
}

/** Which logit to take apart: the next-token logit of `token` after `position` (of the target, for a pair). */
export interface LogitQuery {
  /** The position whose next-token logit it is, counted from 0. */
  position: number;
  /** The token id whose logit it is. */
  token: number;
}

/** One logit taken apart: each source's direct push through the frozen final norm. */
export interface LogitExplanation {
  /** The sources of the position's stream, in the order of `terms`. */
  sources: Source[];
  /** Each source's part of the logit. */
  terms: Float64Array;
  /** The engine's logit, before any soft-cap (`sum(terms)`). */
  logit: number;
  /** Gemma: the softmax reads `softcap · tanh(logit / softcap)`. */
  softcap: number | null;
  /** Each head's direct push on the logit, `[layers, heads]` of the last stack, row-major. */
  heads: Float64Array;
  /** Each layer's MLP's, `[layers]`. */
  mlps: Float64Array;
  /** The ten largest terms by size (`key` -1; terms of exactly 0 left out). */
  largest: Term[];
}
