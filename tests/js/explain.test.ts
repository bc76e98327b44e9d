// Scores and logits taken apart by their sources, through the package, on every row: the terms add up to the score
// (and to the run's own logit), a planted circuit's induction head is explained by the previous-token head that
// feeds it, the words name the sources, and bad queries are Errors that leave the model usable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Model, ScoreExplanation } from '../../dist/node.js';
import { goldenModelFiles } from '../golden-models.mjs';
import { ARCHITECTURES, decoderCheckpoint } from '../llm/checkpoints.mjs';
import { gpt2Checkpoint } from '../llm/gpt2.mjs';
import { inductionCheckpoint } from '../llm/planted.mjs';
import { SEQ2SEQ_GOLDENS, seq2seqFiles } from '../seq2seq.mjs';
import { VISION_GOLDENS, visionFiles } from '../vision.mjs';
import { engineFor } from './engines.js';

/** |Σ terms + bias − value| in units of the largest of them: the terms are float32-sized parts. */
function identityError(terms: Float64Array, value: number, bias = 0): number {
  let sum = bias,
    largest = Math.abs(value);
  for (const t of terms) ((sum += t), (largest = Math.max(largest, Math.abs(t))));
  return Math.abs(sum - value) / largest;
}

function expectAddsUp(e: ScoreExplanation) {
  expect(e.terms.length).toBe(e.querySources.length * e.keySources.length);
  expect(identityError(e.terms, e.score, e.positionBias)).toBeLessThan(1e-5);
}

let engine: Engine;
beforeAll(async () => {
  engine = await engineFor('relaxed-simd-threads', 2);
});
afterAll(() => engine.dispose());

describe('explainScore on every row', () => {
  const decoders = Object.keys(ARCHITECTURES).map((arch) => ({
    name: arch,
    files: decoderCheckpoint({
      arch: arch as keyof typeof ARCHITECTURES,
      tokenizer: true,
      ...(arch === 'gemma2' && { attnSoftcap: 2.5, finalSoftcap: 4, window: 3 }),
      ...(arch === 'mistral' && { window: 4 }),
    }).files,
  }));
  it.each([...decoders, { name: 'gpt2', files: gpt2Checkpoint() }])(
    '$name: every cell of a layer adds up, and so does a logit',
    async ({ name, files }) => {
      const model: Model = await engine.loadModel({ files });
      const r = model.run('the cat sat on the mat', { returnLogits: true });
      const n = r.tokens.length;
      const { layers, heads } = model.info;
      for (let i = 0; i < n; i++)
        for (let j = 0; j <= i; j++) {
          const window = model.info.window[layers - 1]!;
          if (window && i - j >= window) continue;
          expectAddsUp(model.explainScore(r, { layer: layers - 1, head: (i + j) % heads, query: i, key: j }));
        }
      const e = model.explainScore(r, { layer: 1, head: 0, query: n - 1, key: n - 2 });
      expect(e.softcap).toBe(name === 'gemma2' ? 2.5 : null);
      const vocab = model.info.vocabSize;
      const l = model.explainLogit(r, { position: n - 1, token: 42 });
      expect(identityError(l.terms, l.logit)).toBeLessThan(1e-5);
      const engineLogit = r.logits!.data[(n - 1) * vocab + 42]!;
      const capped = l.softcap ? l.softcap * Math.tanh(l.logit / l.softcap) : l.logit;
      expect(Math.abs(capped - engineLogit)).toBeLessThan(1e-4 * Math.max(1, Math.abs(engineLogit)));
      // The grid holds each head's term, the MLPs theirs.
      const headTerms = l.sources.flatMap((s, i) => (s.kind === 'head' ? [l.terms[i]!] : []));
      expect(Array.from(l.heads).sort()).toEqual(headTerms.sort());
      expect(l.mlps.length).toBe(layers);
      model.dispose();
    },
  );

  it.each(['bert', 'distilbert-bf16', 'gpt2-f16'])('%s: the stored model adds up', async (name) => {
    const model = await engine.loadModel({ files: goldenModelFiles(name) });
    const ids = [1, 5, 9, 3, 7, 2];
    const r = model.run(ids);
    const { layers, heads } = model.info;
    for (const [i, j] of [
      [0, 0],
      [5, 2],
      [3, 3],
    ])
      expectAddsUp(model.explainScore(r, { layer: layers - 1, head: heads - 1, query: i!, key: j! }));
    const e = model.explainScore(r, { layer: 0, head: 0, query: 5, key: 2 });
    // Layer 0 reads the embeddings, the position and (LayerNorm) a bias: no head has written yet.
    expect(new Set(e.querySources.map((s) => s.kind))).toEqual(
      new Set([
        'token',
        'position',
        'normBias',
        ...(e.querySources.some((s) => s.kind === 'queryBias') ? ['queryBias'] : []),
      ]),
    );
    model.dispose();
  });

  it('the default model (USE-lite): its widened first layer adds up', async () => {
    const model = await engine.loadModel('default');
    const r = model.run('A sentence to explain.');
    const n = r.tokens.length;
    for (const layer of [0, model.info.layers - 1])
      expectAddsUp(model.explainScore(r, { layer, head: 1, query: n - 1, key: 0 }));
    const e = model.explainScore(r, { layer: model.info.layers - 1, head: 0, query: 1, key: 2 });
    expect(e.querySources.some((s) => s.kind === 'widenBias')).toBe(true);
    expect(() => model.explainLogit(r, { position: 0, token: 1 })).toThrow(/no LM head/);
    model.dispose();
  });

  it.each(SEQ2SEQ_GOLDENS.map((g) => ({ name: g.name, g })))(
    '$name: encoder, decoder and cross sets',
    async ({ g }) => {
      const model = await engine.loadModel({ files: seq2seqFiles(g) });
      const r = model.run({ source: g.source, target: g.target }, { returnLogits: true });
      const ns = r.sourceIds.length,
        nt = r.targetIds.length;
      const t5 = model.info.architecture === 'T5ForConditionalGeneration';
      for (const [set, query, key] of [
        ['encoder', ns - 1, 1],
        ['decoder', nt - 1, 0],
        ['cross', nt - 1, ns - 1],
      ] as const) {
        const layers = set === 'encoder' ? model.info.encoderLayers! : model.info.layers;
        const e = model.explainScore(r, { set, layer: layers - 1, head: 0, query, key });
        expectAddsUp(e);
        expect(e.positionBias !== 0).toBe(t5 && set !== 'cross');
        if (set === 'cross') {
          expect(new Set(e.querySources.map((s) => s.sequence))).toEqual(new Set([1]));
          expect(new Set(e.keySources.map((s) => s.sequence))).toEqual(new Set([0]));
          expect(e.keySources[0]!.label).toMatch(/^embedding of /);
          expect(e.querySources.find((s) => s.kind === 'head')!.label).toMatch(/^decoder L0 H0 at /);
        }
      }
      const l = model.explainLogit(r, { position: nt - 1, token: 3 });
      expect(identityError(l.terms, l.logit)).toBeLessThan(1e-5);
      expect(Math.abs(l.logit - r.logits!.data[(nt - 1) * model.info.vocabSize + 3]!)).toBeLessThan(1e-4);
      model.dispose();
    },
  );

  it.each(VISION_GOLDENS.map((g) => ({ name: g.name, g })))('$name: the [CLS] row', async ({ g }) => {
    const model = await engine.loadModel({ files: visionFiles(g) });
    const run = g.runs[0];
    const r = model.run({ pixels: { data: Float32Array.from(run.pixels.data), shape: run.pixels.shape } });
    const first = model.info.prefixTokens! + model.info.registers!;
    for (const key of [0, first, r.tokens.length - 1])
      expectAddsUp(model.explainScore(r, { layer: model.info.layers - 1, head: 0, query: 0, key }));
    const e = model.explainScore(r, { layer: 0, head: 0, query: 0, key: first });
    expect(e.keySources[0]!.label).toBe('"patch 0,0" pixels');
    expect(e.querySources[0]!.label).toBe('"[CLS]" embedding');
    model.dispose();
  });
});

describe('a planted circuit', () => {
  it("the induction head's score on the repeated token is mostly the previous-token head's output × the token", async () => {
    const planted = inductionCheckpoint();
    const model = await engine.loadModel({ files: planted.files });
    // Random tokens, then the same again: the second copy's token t attends to the token after t's first copy.
    const first = [65, 120, 77, 201, 90, 150, 33, 180];
    const ids = [...first, ...first];
    const r = model.run(ids);
    const { layer, head } = planted.induction;
    const query = first.length + 3,
      key = 4; // the second copy's 4th token → the token after its first copy
    const e = model.explainScore(r, { layer, head, query, key });
    expectAddsUp(e);
    const [top] = e.largest;
    expect(e.querySources[top!.query]).toMatchObject({ kind: 'token', position: query });
    expect(e.keySources[top!.key]).toMatchObject({
      kind: 'head',
      layer: planted.previous.layer,
      head: planted.previous.head,
      position: key,
    });
    const labels = model.labels(ids);
    expect(top!.text).toBe(`embedding of "${labels[query]}" (query) × L0 H0 at "${labels[key]}" (key)`);
    // It is most of the score.
    expect(top!.value / e.score).toBeGreaterThan(0.8);
    model.dispose();
  });
});

describe('runs, options and errors', () => {
  it('explains a run as it ran: its ablated heads and its mask; and a replay leaves the kept run as it was', async () => {
    const model = await engine.loadModel({ files: decoderCheckpoint({ arch: 'llama', tokenizer: true }).files });
    const text = 'one two three four';
    const ablated = model.run(text, { ablateHeads: [[0, 1]] });
    const e = model.explainScore(ablated, { layer: 1, head: 0, query: 5, key: 2 });
    expectAddsUp(e);
    const nk = e.keySources.length;
    e.querySources.forEach((s, a) => {
      if (s.kind === 'head' && s.layer === 0 && s.head === 1)
        for (let b = 0; b < nk; b++) expect(e.terms[a * nk + b]).toBe(0);
    });
    const plain = model.run(text);
    const p = model.explainScore(plain, { layer: 1, head: 0, query: 5, key: 2 });
    expect(p.score).not.toBe(e.score);
    // The plain run is kept: the next run on a longer text reuses all of it, explanations between or not.
    model.explainLogit(plain, { position: 5, token: 9 });
    expect(model.run(`${text} five`).reusedTokens).toBe(plain.tokens.length);
    const mask = plain.tokens.map((_, i) => (i === 2 ? 0 : 1));
    const masked = model.run(text, { attentionMask: mask });
    expect(() => model.explainScore(masked, { layer: 0, head: 0, query: 4, key: 2 })).toThrow(/key 2 is padding/);
    model.dispose();
  });

  it('bad queries are Errors that say what is wrong, and the model stays usable', async () => {
    const model = await engine.loadModel({ files: decoderCheckpoint({ arch: 'qwen2', tokenizer: true }).files });
    const r = model.run('abc');
    const bad: Array<[unknown, RegExp]> = [
      [{ layer: 0, head: 0, query: 1 }, /query.key is missing/],
      [{ layer: 0, head: 0, query: 1, key: 2 }, /key 2 comes after query 1/],
      [{ layer: 5, head: 0, query: 1, key: 0 }, /layer 5 is outside the 2 layers/],
      [{ layer: 0, head: 0.5, query: 1, key: 0 }, /head/],
      [{ layer: 0, head: 0, query: 1, key: 0, set: 'cross' }, /set "cross" is not one of/],
      [{ layer: 0, head: 0, query: 1, key: 0, colour: 1 }, /colour/],
    ];
    for (const [query, message] of bad) expect(() => model.explainScore(r, query as never)).toThrow(message);
    expect(() => model.explainScore({} as never, { layer: 0, head: 0, query: 0, key: 0 })).toThrow(
      /result of this model's run/,
    );
    expect(() => model.explainLogit(r, { position: 9, token: 1 })).toThrow(/position 9 is outside/);
    const other = await engine.loadModel({ files: decoderCheckpoint({ arch: 'llama', tokenizer: true }).files });
    expect(() => other.explainScore(r, { layer: 0, head: 0, query: 0, key: 0 })).toThrow(/another model's/);
    other.dispose();
    expectAddsUp(model.explainScore(r, { layer: 1, head: 3, query: 2, key: 1 }));
    model.dispose();
  });
});
