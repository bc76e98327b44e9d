// Language models through the package: next-token predictions and logit lens against the logits,
// generation against runs on the whole sequence, sampling that is seeded and honours its limits,
// streaming, stopping, and bad input that is an Error naming the field, with the engine still usable
// and its heap where it was. GPT-2's head is held to PyTorch's hidden states times its embedding.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, Model } from '../../dist/node.js';
import { goldenModelFiles } from '../golden-models.mjs';
import { safetensors } from '../safetensors.mjs';
import { byteLevelTokenizer, decoderCheckpoint } from '../llm/checkpoints.mjs';

/** The test tokenizer with one token more than the checkpoints' embedding table has rows. */
function wideTokenizer() {
  const t = byteLevelTokenizer();
  t.added_tokens.push({ id: 320, content: '<|extra|>', special: true, normalized: false });
  return t;
}
import { BUILDS, engineFor } from './engines.js';

function softmax(row: ArrayLike<number>): number[] {
  const max = Math.max(...Array.from(row));
  const e = Array.from(row, (x) => Math.exp(x - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

/** The largest |a[i] − b[i]|. */
function worst(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  return w;
}

const argmax = (row: ArrayLike<number>) => Array.from(row).reduce((best, x, i, a) => (x > a[best] ? i : best), 0);

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  let model: Model;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
    model = await engine.loadModel({
      files: decoderCheckpoint({ arch: 'qwen3', headDim: 16, tied: true, tokenizer: true }).files,
    });
  });
  afterAll(() => engine.dispose());

  it('says what it is: grouped-query heads, a language model', () => {
    expect(model.info).toMatchObject({
      architecture: 'Qwen3ForCausalLM',
      layers: 2,
      heads: 4,
      kvHeads: 2,
      headDim: 16,
      causal: true,
      languageModel: true,
      window: [0, 0],
      eosTokenIds: [319],
    });
    const r = model.run('the cat sat');
    expect(Array.from(r.kvHead!)).toEqual([0, 0, 1, 1]);
  });

  it('predicts the next token after every position: the top of softmax(logits), best first', () => {
    const r = model.run('the cat sat on the mat and', { topK: 5, returnLogits: true });
    const n = r.ids.length;
    const vocab = model.info.vocabSize;
    expect(r.logits!.shape).toEqual([n, vocab]);
    const p = r.predictions!;
    expect(p.k).toBe(5);
    for (let i = 0; i < n; i++) {
      const probs = softmax(r.logits!.data.subarray(i * vocab, (i + 1) * vocab));
      const order = probs.map((x, j) => [x, j]).sort((a, b) => b[0] - a[0]);
      for (let k = 0; k < 5; k++) {
        expect(p.ids[i * 5 + k]).toBe(order[k][1]);
        expect(Math.abs(p.probs[i * 5 + k] - order[k][0])).toBeLessThan(1e-6);
      }
      expect(p.tokens[i][0]).toBe(model.run([p.ids[i * 5]]).tokens[0]); // as the vocabulary spells it
    }
  });

  it("gives one position's logits from its hidden row: the run's own to float32 rounding; bad input is an Error", async () => {
    const r = model.run('the cat sat on the mat', { returnLogits: true });
    const [n, d] = r.hidden.shape;
    const vocab = model.info.vocabSize;
    const rows = { data: r.hidden.data.slice(2 * d, 4 * d), shape: [2, d] };
    const logits = model.logits(rows);
    expect(logits.shape).toEqual([2, vocab]);
    // A few rows take the decoding steps' kernel (cpp/src/kernels/few_rows.cpp), which sums in another order than
    // the run's GEMM over every position: the same numbers to float32 rounding, not bit for bit.
    const want = r.logits!.data.subarray(2 * vocab, 4 * vocab);
    const worst = logits.data.reduce(
      (m, x, i) => Math.max(m, Math.abs(x - want[i]) / Math.max(1, Math.abs(want[i]))),
      0,
    );
    expect(worst).toBeLessThan(1e-5);
    expect(n).toBeGreaterThan(4);
    expect(() => model.logits({ data: new Float32Array(d + 1), shape: [1, d + 1] })).toThrow(
      `logits: hidden must be [rows, ${d}] (rows ≥ 1), got [1, ${d + 1}]`,
    );
    expect(() => model.logits({ data: new Float32Array(d).fill(NaN), shape: [1, d] })).toThrow('not finite');
    expect(() => model.logits([1, 2] as never)).toThrow('logits: hidden must be { data: Float32Array');
    const encoder = await engine.loadModel('default');
    expect(() => encoder.logits({ data: new Float32Array(512), shape: [1, 512] })).toThrow(
      'logits: Universal Sentence Encoder lite is an encoder; logits needs a language model',
    );
    encoder.dispose();
  });

  it('keeps the last reusable run while runs that cannot be reused (projections, padding) come between', () => {
    model.run('the cat sat on the', { topK: 2 });
    model.run('the cat sat', { topK: 2, returnProjections: true });
    model.run('the cat sat', { topK: 2, attentionMask: [1, 1, 0] });
    expect(model.run('the cat sat on the mat', { topK: 2 }).reusedTokens).toBe(
      model.tokenize('the cat sat on the').ids.length,
    );
  });

  it("reads the logit lens: each layer's top token, the last layer's being the model's own", () => {
    const r = model.run('the cat sat on the mat', { logitLens: true, topK: 1 });
    const n = r.ids.length;
    const lens = r.logitLens!;
    expect(lens.ids.length).toBe(model.info.layers * n);
    expect(lens.tokens.length).toBe(model.info.layers);
    const last = (model.info.layers - 1) * n;
    for (let i = 0; i < n; i++) {
      expect(lens.ids[last + i]).toBe(r.predictions!.ids[i]);
      expect(Math.abs(lens.probs[last + i] - r.predictions!.probs[i])).toBeLessThan(1e-6);
    }
  });

  it('generates greedily: each token the most likely after the ones before, maps equal to a run', async () => {
    const rows: number[] = [];
    const g = await model.generate('the cat', {
      maxNewTokens: 12,
      temperature: 0,
      stopAtEos: false,
      onToken: (t) => rows.push(t.rows!.length),
    });
    expect(g.stopReason).toBe('maxNewTokens');
    expect(g.ids.length).toBe(g.promptTokens + 12);
    const run = model.run(g.ids, { returnLogits: true });
    const vocab = model.info.vocabSize;
    for (let i = g.promptTokens; i < g.ids.length; i++)
      expect(g.ids[i]).toBe(argmax(run.logits!.data.subarray((i - 1) * vocab, i * vocab)));
    expect(g.shape).toEqual(run.shape);
    let worst = 0;
    for (let i = 0; i < run.attentions.length; i++)
      worst = Math.max(worst, Math.abs(run.attentions[i] - g.attentions![i]));
    expect(worst).toBeLessThan(1e-5);
    const [layers, heads] = run.shape;
    expect(rows).toEqual(Array.from({ length: 12 }, (_, k) => layers * heads * (g.promptTokens + k + 1)));
    expect(g.text).toBe(model.decode(g.ids, { skipSpecialTokens: true }));
    // Without maps: the same tokens, attention fused, nothing kept.
    const bare = await model.generate('the cat', {
      maxNewTokens: 12,
      temperature: 0,
      stopAtEos: false,
      attentions: false,
    });
    expect(Array.from(bare.ids)).toEqual(Array.from(g.ids));
    expect(bare.attentions).toBeUndefined();
  });

  it("starts from the last run's keys and values, and gives each token's rows alone with attentions: 'rows'", async () => {
    const options = { maxNewTokens: 8, temperature: 0, stopAtEos: false };
    const rowsOf = async (o: object) => {
      const rows: Float32Array[] = [];
      const g = await model.generate('the cat sat on the', { ...options, ...o, onToken: (t) => rows.push(t.rows!) });
      return { g, rows };
    };
    const all = await rowsOf({});
    model.run('the cat sat on the');
    const alone = await rowsOf({ attentions: 'rows' });
    expect(alone.g.reusedTokens).toBe(model.tokenize('the cat sat on the').ids.length - 1);
    expect(Array.from(alone.g.ids)).toEqual(Array.from(all.g.ids));
    expect(alone.g.attentions).toBeUndefined();
    expect(alone.rows.map((r) => r.length)).toEqual(all.rows.map((r) => r.length));
    // The prompt's keys came from a run here and from the generation's own prefill there: the same to rounding.
    alone.rows.forEach((r, k) => {
      let worst = 0;
      r.forEach((x, i) => (worst = Math.max(worst, Math.abs(x - all.rows[k][i]))));
      expect(worst).toBeLessThan(1e-6);
    });
    await expect(model.generate('the', { attentions: 'some' as never })).rejects.toThrow(
      "generate: attentions must be true, false or 'rows', got string",
    );
  });

  it("writes each token's rows where rowsInto says, one buffer for all of them", async () => {
    const buffer = new Float32Array(1 << 16);
    let at = 0;
    const kept: Float32Array[] = [];
    const g = await model.generate('the cat sat', {
      maxNewTokens: 6,
      temperature: 0,
      stopAtEos: false,
      attentions: 'rows',
      rowsInto: (length) => buffer.subarray(at, (at += length)),
      onToken: (t) => kept.push(t.rows!),
    });
    expect(kept.every((r) => r.buffer === buffer.buffer)).toBe(true);
    const fresh: Float32Array[] = [];
    await model.generate('the cat sat', {
      maxNewTokens: 6,
      temperature: 0,
      stopAtEos: false,
      attentions: 'rows',
      onToken: (t) => fresh.push(t.rows!),
    });
    expect(kept).toEqual(fresh);
    expect(g.ids.length).toBe(g.promptTokens + 6);
    await expect(
      model.generate('the', { attentions: 'rows', rowsInto: (length) => new Float32Array(length + 1) }),
    ).rejects.toThrow(
      /generate: rowsInto\(\d+\) must return a Float32Array of exactly \d+ values, got Float32Array of/,
    );
    await expect(model.generate('the', { rowsInto: 3 as never })).rejects.toThrow(
      'generate: rowsInto must be a function, got number',
    );
  });

  it('samples reproducibly from a seed, and within top-k and top-p', async () => {
    const sample = (seed: number, o = {}) =>
      model.generate('the', { maxNewTokens: 16, temperature: 1.3, seed, stopAtEos: false, ...o }).then((g) => g.text);
    expect(await sample(3)).toBe(await sample(3));
    expect(await sample(3)).not.toBe(await sample(4));
    const greedy = await model.generate('the', { maxNewTokens: 16, temperature: 0, stopAtEos: false });
    expect(await sample(5, { topK: 1 })).toBe(greedy.text);
    expect(await sample(6, { topP: 1e-6 })).toBe(greedy.text);
  });

  it('stops at a stop string, at end of text, and when aborted', async () => {
    const free = await model.generate('the cat', { maxNewTokens: 24, temperature: 0, stopAtEos: false });
    const piece = free.generated.slice(2, 4);
    const stopped = await model.generate('the cat', { maxNewTokens: 24, temperature: 0, stop: [piece] });
    expect(stopped.stopReason).toBe('stop');
    expect(stopped.generated).toContain(piece);
    expect(stopped.generated.length).toBeLessThan(free.generated.length);
    const controller = new AbortController();
    let seen = 0;
    const aborted = await model.generate('the cat', {
      maxNewTokens: 24,
      onToken: () => ++seen === 3 && controller.abort(),
      signal: controller.signal,
      stopAtEos: false,
    });
    expect(aborted.stopReason).toBe('aborted');
    expect(aborted.ids.length).toBe(aborted.promptTokens + 3);
    // A model whose end-of-text id is the greedy choice stops there.
    const eos = free.ids[free.promptTokens + 1];
    const files = decoderCheckpoint({ arch: 'qwen3', headDim: 16, tied: true, tokenizer: true }).files;
    const config = JSON.parse(new TextDecoder().decode(files['config.json']));
    const withEos = await engine.loadModel({
      files: { ...files, 'config.json': new TextEncoder().encode(JSON.stringify({ ...config, eos_token_id: eos })) },
    });
    const g = await withEos.generate('the cat', { maxNewTokens: 24, temperature: 0 });
    expect(g.stopReason).toBe('eos');
    expect(g.ids.length).toBe(g.promptTokens + 2);
    withEos.dispose();
  });

  it('keeps 16-bit weights 16-bit: half the heap, and the same numbers as the float32 file of the same values', async () => {
    const spec = { arch: 'llama', d: 128, ffn: 384, heads: 4, kvHeads: 2, tokenizer: true, dtype: 'bf16' } as const;
    const c = decoderCheckpoint(spec);
    const f32 = { ...c.files, 'model.safetensors': safetensors(c.tensors) }; // the same (rounded) values as float32
    const before = engine.memory().allocatedBytes;
    const wide = await engine.loadModel({ files: f32 });
    const wideBytes = engine.memory().allocatedBytes - before;
    const narrow = await engine.loadModel({ files: c.files });
    const narrowBytes = engine.memory().allocatedBytes - before - wideBytes;
    expect(narrow.info.weightsDtype).toBe('bf16');
    expect(wide.info.weightsDtype).toBe('f32');
    const a = narrow.run('the cat sat on the mat', { returnLogits: true });
    const b = wide.run('the cat sat on the mat', { returnLogits: true });
    expect(Array.from(a.attentions)).toEqual(Array.from(b.attentions));
    expect(Array.from(a.logits!.data)).toEqual(Array.from(b.logits!.data));
    expect(narrowBytes / wideBytes).toBeLessThan(0.6);
    narrow.dispose();
    wide.dispose();
  });

  it('reuses the previous run while typing at the end: the same numbers as a fresh run', async () => {
    const files = decoderCheckpoint({ arch: 'gemma3', layers: 3, window: 4, tokenizer: true }).files;
    const typing = await engine.loadModel({ files });
    const fresh = await engine.loadModel({ files });
    const o = { topK: 3, logitLens: true, returnLogits: true };
    const text = 'the cat sat on the mat and the dog';
    let last = '';
    // What the previous run and this one share: the leading tokens that are kept.
    const shared = (now: string) => {
      const [x, y] = [typing.tokenize(last).ids, typing.tokenize(now).ids];
      let common = 0;
      while (common < x.length && common < y.length && x[common] === y[common]) common++;
      return last ? common : 0;
    };
    const check = (now: string) => {
      const reused = shared(now);
      const a = typing.run(now, o);
      const b = fresh.run(now, { ...o, reusePrefix: false });
      expect(a.reusedTokens).toBe(reused);
      expect(b.reusedTokens).toBe(0);
      // The appended rows come from the decoding kernels, the fresh run's from the GEMM's panels: float32 sums in
      // other orders, so the same numbers to float32 rounding and the same tokens, not the same bits.
      expect(a.attentions.length).toBe(b.attentions.length);
      expect(worst(a.attentions, b.attentions)).toBeLessThan(1e-5);
      expect(worst(a.hidden.data, b.hidden.data)).toBeLessThan(1e-4);
      expect(worst(a.logits!.data, b.logits!.data)).toBeLessThan(1e-4);
      expect(worst(a.predictions!.probs, b.predictions!.probs)).toBeLessThan(1e-5);
      expect(Array.from(a.predictions!.ids)).toEqual(Array.from(b.predictions!.ids));
      expect(Array.from(a.logitLens!.ids)).toEqual(Array.from(b.logitLens!.ids));
      last = now;
      return reused;
    };
    const reused = [];
    for (let end = 8; end <= text.length; end++) reused.push(check(text.slice(0, end))); // typing at the end
    expect(reused.slice(1).every((n) => n > 0)).toBe(true);
    check('the dog' + text.slice(7)); // an edit near the start: what follows it is computed again
    check(text.slice(0, 11)); // deleting most of the text
    expect(check(text.slice(0, 11))).toBe(typing.tokenize(text.slice(0, 11)).ids.length); // nothing to compute
    typing.dispose();
    fresh.dispose();
  });

  it('returns long causal maps whole: each row keys 0..i, summing to 1, then zeros; the same rows as a shorter run', async () => {
    // From 2,048 keys a row is copied out as keys 0..i alone, into a new array whose other pages are never touched.
    const files = decoderCheckpoint({
      arch: 'llama',
      layers: 1,
      d: 16,
      heads: 2,
      kvHeads: 1,
      maxPositions: 2100,
    }).files;
    const long = await engine.loadModel({ files });
    const n = 2050,
      short = 600;
    const ids = Int32Array.from({ length: n }, (_, i) => (i * 37) % 96);
    const a = long.run(ids, { reusePrefix: false });
    const b = long.run(ids.subarray(0, short), { reusePrefix: false });
    expect(a.shape).toEqual([1, 2, n, n]);
    for (let h = 0; h < 2; h++)
      for (let i = 0; i < n; i++) {
        const row = a.attentions.subarray((h * n + i) * n, (h * n + i + 1) * n);
        let sum = 0;
        for (let j = 0; j <= i; j++) sum += row[j];
        expect(Math.abs(sum - 1)).toBeLessThan(1e-4);
        expect(row[i]).toBeGreaterThan(0);
        for (let j = i + 1; j < n; j++) if (row[j] !== 0) expect(`row ${i} key ${j}: ${row[j]}`).toBe('zero');
        if (i < short) {
          const want = b.attentions.subarray((h * short + i) * short, (h * short + i + 1) * short);
          expect(worst(row.subarray(0, short), want)).toBeLessThan(1e-6);
        }
      }
    // Copied out while the run goes on (pieces of rows, beside the next loops' tasks with two threads), the maps are
    // the ones written into the caller's array after the run, bit for bit.
    const room = new Float32Array(a.attentions.length).fill(NaN);
    long.run(ids, { reusePrefix: false, into: { attentions: room } });
    expect(worst(a.attentions, room)).toBe(0);
    long.dispose();
  });

  it("returns the chosen layers' maps (mapLayers): a run of every layer's, fresh, from the kept queries, typing", async () => {
    const files = decoderCheckpoint({ arch: 'gemma3', layers: 3, window: 4, tokenizer: true }).files;
    const chosen = await engine.loadModel({ files });
    const every = await engine.loadModel({ files });
    const text = 'the cat sat on the mat and the dog';
    const check = (now: string, mapLayers: number[], reused: number) => {
      const a = chosen.run(now, { mapLayers });
      const b = every.run(now, { reusePrefix: false });
      const [, heads, n] = b.shape;
      const block = heads * n * n;
      expect(a.shape).toEqual([mapLayers.length, heads, n, n]);
      expect(a.mapLayers).toEqual(mapLayers);
      expect(b.mapLayers).toEqual([0, 1, 2]);
      expect(a.reusedTokens).toBe(reused);
      mapLayers.forEach((l, i) => {
        const want = b.attentions.subarray(l * block, (l + 1) * block);
        expect(worst(a.attentions.subarray(i * block, (i + 1) * block), want)).toBeLessThan(1e-6);
      });
      expect(worst(a.hidden.data, b.hidden.data)).toBeLessThan(1e-4);
      return n;
    };
    const n = check(text.slice(0, 20), [2, 0], 0);
    check(text.slice(0, 20), [1], n); // another layer of the same text: its attention alone, from the kept queries
    const [before, after] = [chosen.tokenize(text.slice(0, 20)).ids, chosen.tokenize(text).ids];
    let shared = 0;
    while (before[shared] === after[shared]) shared++;
    expect(shared).toBeGreaterThan(3);
    check(text, [1], shared); // typing at the end
    expect(chosen.run(text, { mapLayers: [] }).attentions.length).toBe(0);
    expect(() => chosen.run(text, { mapLayers: [3] })).toThrow(
      "run: mapLayers[0] = 3 is outside the model's 3 layers (counting from 0)",
    );
    expect(() => chosen.run(text, { mapLayers: [1, 1] })).toThrow('run: mapLayers names layer 1 twice');
    expect(() => chosen.run(text, { mapLayers: 1 as never })).toThrow(
      'run: mapLayers must be an array of whole numbers',
    );
    // Encoders compute every layer and keep the chosen ones.
    const bert = await engine.loadModel({ files: goldenModelFiles('bert') });
    const all = bert.run([2, 5, 7, 3]);
    const last = bert.run([2, 5, 7, 3], { mapLayers: [all.shape[0] - 1] });
    expect(last.shape).toEqual([1, ...all.shape.slice(1)]);
    expect(Array.from(last.attentions)).toEqual(
      Array.from(all.attentions.subarray(all.attentions.length - last.attentions.length)),
    );
    for (const m of [chosen, every, bert]) m.dispose();
  });

  it('writes the maps into options.into: the numbers of new arrays, every value, in the room it is given', async () => {
    const fresh = (text: string, o: object = {}) => model.run(text, { reusePrefix: false, ...o });
    const room = new Float32Array(4 * fresh('the cat sat on the mat').attentions.length).fill(NaN);
    const into = { attentions: room };
    const same = (a: Float32Array, b: Float32Array) => {
      expect(a.length).toBe(b.length);
      expect(worst(a, b)).toBe(0);
    };
    // Longer, then shorter: the second run's causal zeros land where the first run's maps were.
    for (const [text, o] of [
      ['the cat sat on the mat', {}],
      ['the cat', {}],
      ['the dog sat', { mapLayers: [1] }],
    ] as const) {
      const want = fresh(text, o);
      const before = room.slice();
      const got = fresh(text, { ...o, into });
      const past = (a: Float32Array) => new Uint32Array(a.buffer, got.attentions.length * 4); // bits: NaN too
      expect(got.attentions.buffer).toBe(room.buffer);
      expect(got.attentions.byteOffset).toBe(0);
      same(got.attentions, want.attentions);
      expect(got.shape).toEqual(want.shape);
      expect(got.maps.self!.attentions).toBe(got.attentions);
      expect(past(room)).toEqual(past(before)); // nothing written past the maps
    }
    // The array of exactly the maps' length is the result itself; reusing the previous run works too.
    const exact = new Float32Array(fresh('the cat').attentions.length);
    expect(fresh('the cat', { into: { attentions: exact } }).attentions).toBe(exact);
    // Typing at the end: the appended rows come from the decoding kernels, the same numbers to float32 rounding.
    model.run('the cat');
    const typed = model.run('the cat sat', { into });
    expect(typed.reusedTokens).toBeGreaterThan(0);
    expect(typed.attentions.buffer).toBe(room.buffer);
    expect(worst(typed.attentions, fresh('the cat sat').attentions)).toBeLessThan(1e-5);
    // Too little room: an Error naming what is needed, the array untouched, the model still usable.
    const small = new Float32Array(7).fill(5);
    const { shape } = fresh('the cat');
    expect(() => fresh('the cat', { into: { attentions: small } })).toThrow(
      `run: options.into.attentions has room for 7 values but the maps [${shape.join(', ')}] need ${shape.reduce((a, b) => a * b)}`,
    );
    expect(Array.from(small)).toEqual(Array(7).fill(5));
    expect(() => model.run('the cat', { into: { attentions: [0, 1] as never } })).toThrow(
      'run: options.into.attentions must be a Float32Array, got Array',
    );
    expect(() => model.run('the cat', { into: { weights: room } as never })).toThrow(
      "run: unknown option 'into.weights' (known: attentions)",
    );
    expect(worst(model.run('the cat').attentions, fresh('the cat').attentions)).toBeLessThan(1e-5); // still usable
    // An encoder's maps, and a run without into afterwards: new arrays again.
    const bert = await engine.loadModel({ files: goldenModelFiles('bert') });
    const bertRoom = new Float32Array(bert.run([2, 5, 7, 3, 9]).attentions.length + 3);
    const b = bert.run([2, 5, 7, 3], { into: { attentions: bertRoom } });
    expect(b.attentions.buffer).toBe(bertRoom.buffer);
    same(b.attentions, bert.run([2, 5, 7, 3]).attentions);
    expect(bert.run([2, 5, 7, 3]).attentions.buffer).not.toBe(bertRoom.buffer);
    bert.dispose();
  });

  it('refuses bad options with errors naming them, and stays usable with its heap where it was', async () => {
    const g = (o: object) => model.generate('the cat', o);
    await g({ maxNewTokens: 2, temperature: 0 });
    const before = engine.memory();
    for (let i = 0; i < 20; i++) {
      await expect(g({ maxNewTokens: 300 })).rejects.toThrow(
        'generate: maxNewTokens must be a whole number from 1 to 256, got 300',
      );
      await expect(g({ maxNewTokens: 255 })).rejects.toThrow(
        "generate: the prompt's 2 tokens and maxNewTokens=255 exceed the model's 256 tokens",
      );
      await expect(g({ temperature: NaN })).rejects.toThrow(
        'generate: temperature must be a finite number ≥ 0, got NaN',
      );
      await expect(g({ temperature: -1 })).rejects.toThrow('temperature must be a finite number ≥ 0, got -1');
      await expect(g({ topP: 0 })).rejects.toThrow('generate: topP must be in (0, 1], got 0');
      await expect(g({ topP: 1.5 })).rejects.toThrow('generate: topP must be in (0, 1], got 1.5');
      await expect(g({ topK: -1 })).rejects.toThrow('generate: topK must be a whole number from 0 to 320, got -1');
      await expect(g({ seed: 1.5 })).rejects.toThrow('generate: seed must be a whole number');
      await expect(g({ stop: 'x' })).rejects.toThrow('generate: stop must be an array of non-empty strings');
      await expect(g({ temprature: 1 })).rejects.toThrow("generate: unknown option 'temprature'");
      await expect(model.generate([1, 99999], {})).rejects.toThrow(
        'generate: id 99999 at position 1 is outside the vocabulary [0, 320)',
      );
      expect(() => model.run('the', { topK: 0.5 })).toThrow('run: topK must be a whole number from 1 to 1000000');
      expect(() => model.decode([-1])).toThrow('decode: id -1 at position 0 is outside the vocabulary [0, 320)');
    }
    const files = decoderCheckpoint({ arch: 'llama', tied: true, tokenizer: true }).files;
    const config = JSON.parse(new TextDecoder().decode(files['config.json']));
    const small = new TextEncoder().encode(JSON.stringify({ ...config, vocab_size: 300, eos_token_id: 2 }));
    await expect(engine.loadModel({ files: { ...files, 'config.json': small } })).rejects.toThrow(
      'model.safetensors: tensor "model.embed_tokens.weight" has shape [320, 32] but the config needs [300, 32]',
    );
    const { 'tokenizer.json': _, ...untokenized } = files;
    const bigger = { ...untokenized, 'tokenizer.json': new TextEncoder().encode(JSON.stringify(wideTokenizer())) };
    await expect(engine.loadModel({ files: bigger })).rejects.toThrow(
      "loadModel: the tokenizer has 321 entries, more than config.json's vocab_size=320",
    );
    const after = engine.memory();
    expect(after.allocatedBytes).toBe(before.allocatedBytes);
    expect(after.handles).toBe(before.handles);
    expect((await g({ maxNewTokens: 2, temperature: 0 })).ids.length).toBe(4);
  });
});

describe('GPT-2 gains its language-model head', () => {
  it("gives PyTorch's hidden states times its embedding as logits, and predicts, lenses and generates", async () => {
    const engine = await engineFor('relaxed-simd', 1);
    const files = goldenModelFiles('gpt2-f16');
    const golden = JSON.parse(readFileSync(new URL('../golden/models/gpt2-f16/golden.json', import.meta.url), 'utf8'));
    const model = await engine.loadModel({ files });
    const r = model.run(golden.ids, { returnLogits: true, topK: 2, logitLens: true });
    // PyTorch's final hidden state times the tied embedding (read here from the F16 file) is GPT-2's logits.
    const wte = readF16(files['model.safetensors'], 'wte.weight');
    const [n, d] = golden.hidden.shape;
    const vocab = model.info.vocabSize;
    let worst = 0;
    for (let i = 0; i < n; i++)
      for (let t = 0; t < vocab; t++) {
        let logit = 0;
        for (let j = 0; j < d; j++) logit += golden.hidden.data[i * d + j] * wte[t * d + j];
        worst = Math.max(worst, Math.abs(logit - r.logits!.data[i * vocab + t]));
      }
    expect(worst).toBeLessThan(1e-3);
    expect(r.logitLens!.ids.length).toBe(model.info.layers * n);
    const g = await model.generate(golden.ids.slice(0, 4), { maxNewTokens: 6, temperature: 0, stopAtEos: false });
    expect(g.ids.length).toBe(10);
    engine.dispose();
  });
});

/** A tensor of an F16 safetensors file, as float32. */
function readF16(file: Uint8Array, name: string): Float32Array {
  const view = new DataView(file.buffer, file.byteOffset);
  const length = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + length)));
  const [a, b] = (header[name] ?? header[`transformer.${name}`]).data_offsets;
  const out = new Float32Array((b - a) / 2);
  for (let i = 0; i < out.length; i++) {
    const h = view.getUint16(8 + length + a + 2 * i, true);
    const exponent = (h >> 10) & 31;
    const mantissa = h & 1023;
    const sign = h & 0x8000 ? -1 : 1;
    out[i] =
      exponent === 0
        ? sign * 2 ** -14 * (mantissa / 1024)
        : exponent === 31
          ? NaN
          : sign * 2 ** (exponent - 15) * (1 + mantissa / 1024);
  }
  return out;
}
