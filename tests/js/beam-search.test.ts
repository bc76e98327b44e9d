// Beam search and the search settings of encoder-decoders, on the checkpoints of tests/golden/seq2seq.json (BART, T5,
// Flan-T5, Marian). The engine's search (C++, each beam a KV cache) is held to a reference written here from
// transformers' BeamSearchScorer rules that scores every candidate with a whole teacher-forced run (no cache); the
// winner's maps are a teacher-forced run's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Model } from '../../dist/node.js';
import { SEQ2SEQ_GOLDENS, seq2seqFiles } from '../seq2seq.mjs';
import { engineFor } from './engines.js';

interface Settings {
  beams: number;
  lengthPenalty: number;
  noRepeatNgramSize: number;
  earlyStopping: boolean;
  maxLength: number;
  banned?: number[];
}

/** The tokens that would repeat an n-gram of ids. */
function repeating(ids: number[], n: number): number[] {
  const out: number[] = [];
  if (n <= 0 || ids.length + 1 < n) return out;
  const tail = ids.slice(ids.length - (n - 1));
  for (let s = 0; s + n <= ids.length; s++) if (tail.every((t, k) => ids[s + k] === t)) out.push(ids[s + n - 1]);
  return out;
}

/** Beam search by transformers' rules, each step's log-probabilities from a whole run of the sequence. */
function referenceBeams(model: Model, source: number[], start: number[], o: Settings): number[] {
  const eos = model.info.eosTokenIds;
  const logProbs = (target: number[]) => {
    const r = model.run({ source, target: Int32Array.from(target) }, { returnLogits: true });
    const v = model.info.vocabSize;
    const row = Array.from(r.logits!.data.subarray((target.length - 1) * v, target.length * v));
    const top = Math.max(...row);
    const total = top + Math.log(row.reduce((s, x) => s + Math.exp(x - top), 0));
    return row.map((x) => x - total);
  };
  const finished: Array<{ ids: number[]; score: number }> = [];
  const add = (ids: number[], sum: number, length: number) => {
    const score = sum / length ** o.lengthPenalty;
    if (finished.length < o.beams) finished.push({ ids, score });
    else {
      const worst = finished.reduce((w, h, i) => (h.score < finished[w].score ? i : w), 0);
      if (score > finished[worst].score) finished[worst] = { ids, score };
    }
  };
  const over = (best: number, length: number) =>
    finished.length >= o.beams &&
    (o.earlyStopping || Math.min(...finished.map((h) => h.score)) >= best / length ** o.lengthPenalty);
  let running = [{ ids: start, sum: 0 }];
  const keep = Math.max(2, 1 + eos.length) * o.beams;
  for (;;) {
    const length = running[0].ids.length;
    const candidates: Array<{ score: number; beam: number; token: number }> = [];
    running.forEach((b, beam) => {
      const lp = logProbs(b.ids);
      for (const t of [...(o.banned ?? []), ...repeating(b.ids, o.noRepeatNgramSize)]) lp[t] = -Infinity;
      const order = lp.map((_, t) => t).sort((a, c) => lp[c] - lp[a] || a - c);
      for (const t of order.slice(0, keep))
        if (Number.isFinite(lp[t])) candidates.push({ score: b.sum + lp[t], beam, token: t });
    });
    candidates.sort((a, c) => c.score - a.score); // stable: beam order, then each beam's own order
    const next: Array<{ ids: number[]; sum: number }> = [];
    for (const [rank, c] of candidates.slice(0, keep).entries()) {
      if (eos.includes(c.token)) {
        if (rank < o.beams) add([...running[c.beam].ids, c.token], c.score, length);
        continue;
      }
      next.push({ ids: [...running[c.beam].ids, c.token], sum: c.score });
      if (next.length === o.beams) break;
    }
    if (over(candidates[0].score, length) || !next.length) break;
    running = next;
    if (length + 1 >= o.maxLength) {
      for (const r of running) add(r.ids, r.sum, length + 1);
      break;
    }
  }
  return finished.reduce((b, h) => (h.score > b.score ? h : b)).ids;
}

let engine: Engine;
beforeAll(async () => {
  engine = await engineFor('relaxed-simd', 1);
});
afterAll(() => engine.dispose());

const SETTINGS: Array<Partial<Settings> & { beams: number }> = [
  { beams: 2 },
  { beams: 4 },
  { beams: 8 },
  { beams: 4, lengthPenalty: 2 },
  { beams: 3, lengthPenalty: 0.5, noRepeatNgramSize: 2 },
  { beams: 4, earlyStopping: true },
];

describe.each(SEQ2SEQ_GOLDENS.map((g) => [g.name, g] as const))('%s', (_, golden) => {
  let model: Model;
  beforeAll(async () => {
    model = await engine.loadModel({ files: seq2seqFiles(golden) });
  });
  afterAll(() => model.dispose());
  const start = () => [
    model.info.decoderStartTokenId!,
    ...(model.info.forcedBosTokenId === undefined ? [] : [model.info.forcedBosTokenId]),
  ];

  it.each(SETTINGS.map((s) => [JSON.stringify(s), s] as const))(
    'beam search %s: the reference search, scored by whole runs; the maps cover every token',
    async (_, s) => {
      const o: Settings = { lengthPenalty: 1, noRepeatNgramSize: 0, earlyStopping: false, maxLength: 12, ...s };
      const { maxLength, ...options } = o;
      const g = await model.generate({ source: golden.source }, { ...options, maxNewTokens: maxLength - 1 });
      const want = referenceBeams(model, golden.source, start(), o);
      expect(Array.from(g.targetIds)).toEqual(want);
      expect(g.stopReason).toBe(model.info.eosTokenIds.includes(want[want.length - 1]) ? 'eos' : 'maxNewTokens');
      const run = model.run({ source: golden.source, target: g.targetIds });
      expect(g.maps.cross!.attentions).toEqual(run.maps.cross.attentions);
      expect(g.maps.decoder!.attentions).toEqual(run.maps.decoder.attentions);
      expect(g.maps.decoder!.shape.slice(2)).toEqual([want.length, want.length]);
      if (o.noRepeatNgramSize) {
        const pairs = want.slice(1).map((t, i) => `${want[i]},${t}`);
        expect(new Set(pairs).size).toBe(pairs.length);
      }
    },
  );

  it('one beam is greedy; noRepeatNgramSize holds for greedy too', async () => {
    const one = await model.generate(
      { source: golden.source },
      { beams: 1, temperature: 0, maxNewTokens: 9, stopAtEos: false },
    );
    expect(Array.from(one.targetIds)).toEqual(golden.greedy);
    const fresh = await model.generate(
      { source: golden.source },
      { temperature: 0, maxNewTokens: 9, stopAtEos: false, noRepeatNgramSize: 2 },
    );
    const ids = Array.from(fresh.targetIds);
    const pairs = ids.slice(1).map((t, i) => `${ids[i]},${t}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    // It changes only what would repeat: up to the first repeat, greedy's.
    const greedyPairs = golden.greedy.slice(1).map((t, i) => `${golden.greedy[i]},${t}`);
    const firstRepeat = greedyPairs.findIndex((p, i) => greedyPairs.indexOf(p) < i);
    if (firstRepeat >= 0) expect(ids.slice(0, firstRepeat + 1)).toEqual(golden.greedy.slice(0, firstRepeat + 1));
    else expect(ids).toEqual(golden.greedy);
  });
});

describe('search settings and bad input', () => {
  const golden = SEQ2SEQ_GOLDENS[0];

  it("reads the model's settings from generation_config.json; max_length caps every generation", async () => {
    const files = {
      ...seq2seqFiles(golden),
      'generation_config.json': new TextEncoder().encode(
        JSON.stringify({
          num_beams: 3,
          length_penalty: 1.5,
          no_repeat_ngram_size: 2,
          early_stopping: true,
          max_length: 6,
          bad_words_ids: [[7], [8, 9]],
          decoder_start_token_id: 2,
          forced_bos_token_id: 0,
        }),
      ),
    };
    const model = await engine.loadModel({ files });
    expect(model.info.generation).toEqual({
      numBeams: 3,
      lengthPenalty: 1.5,
      noRepeatNgramSize: 2,
      earlyStopping: true,
      maxLength: 6,
      bannedTokenIds: [7],
    });
    const greedy = await model.generate(
      { source: golden.source },
      { temperature: 0, maxNewTokens: 30, stopAtEos: false },
    );
    expect(greedy.targetIds.length).toBe(6);
    expect(Array.from(greedy.targetIds)).not.toContain(7);
    const beams = await model.generate({ source: golden.source }, { beams: 3, maxNewTokens: 30 });
    expect(beams.targetIds.length).toBeLessThanOrEqual(6);
    const want = referenceBeams(model, golden.source, [2, 0], {
      beams: 3,
      lengthPenalty: 1.5,
      noRepeatNgramSize: 2,
      earlyStopping: true,
      maxLength: 6,
      banned: [7],
    });
    expect(Array.from(beams.targetIds)).toEqual(want);
    model.dispose();
  });

  it('a beam count outside 1 to 8, or beams for a one-stack model, is refused naming why', async () => {
    const model = await engine.loadModel({ files: seq2seqFiles(golden) });
    for (const beams of [0, 9, 2.5])
      await expect(model.generate({ source: golden.source }, { beams })).rejects.toThrow(
        `generate: beams must be a whole number from 1 to 8, got ${beams}`,
      );
    await expect(model.generate({ source: golden.source }, { beams: 2, lengthPenalty: NaN })).rejects.toThrow(
      /lengthPenalty must be a finite number/,
    );
    const g = await model.generate({ source: golden.source }, { beams: 2, maxNewTokens: 4 });
    expect(g.targetIds.length).toBeLessThanOrEqual(5);
    model.dispose();
  });
});
