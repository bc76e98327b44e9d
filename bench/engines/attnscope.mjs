// AttnScope's wasm build as a benchmark engine:
//   node bench/engines/attnscope.mjs <threads> <simd|relaxed-simd> <dir> [<another checkout>]
// The build is named without its -threads suffix; two or more threads select it. With another checkout (built), its
// dist/ runs instead: the A/B rows of `npm run bench -- blocks`.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';

import { pathToFileURL } from 'node:url';

import { D, HEADS, SENTENCE, bertIds, llmIds, llmSample, readSafetensors, sample } from '../workloads.mjs';
import { seq2seqIds, seq2seqParts, seq2seqSample, serveEngine } from '../workloads.mjs';
import { memoryBandwidth } from '../bandwidth.mjs';
import { median } from '../stats.mjs';

/** Milliseconds `call` takes. */
const timed = (call) => {
  const start = performance.now();
  call();
  return performance.now() - start;
};

const [threads, kind, dir, other] = [Number(process.argv[2]), process.argv[3], process.argv[4], process.argv[5]];
const dist = other ? pathToFileURL(join(other, 'dist/node.js')).href : '../../dist/node.js';
const { createEngine } = await import(dist);
const engine = await createEngine({ threads, build: threads > 1 ? `${kind}-threads` : kind });
// The micro-kernel of the same build, for the peak the GEMM and long-input rows compare with (bench/kernel_peak.cpp).
// It and the shared workloads are read when first needed: the translation and vision sections run without them.
const require = createRequire(import.meta.url);
const peakBuild = `../../build/wasm/bench/kernel_peak_${kind === 'relaxed-simd' ? 'st-relaxed' : 'st'}`;
let kernel = null;
const peakKernel = async () =>
  (kernel ??= await require(`${peakBuild}.js`)({
    wasmBinary: readFileSync(new URL(`${peakBuild}.wasm`, import.meta.url)),
  }));
let inputsRead = null;
let mhaRead = null;
const inputs = () => (inputsRead ??= readSafetensors(join(dir, 'inputs.safetensors')));
const mhaWeights = () => (mhaRead ??= readSafetensors(join(dir, 'mha.safetensors')));
const files = (sub, names) => Object.fromEntries(names.map((f) => [f, readFileSync(join(sub, f))]));
/** The BERT workload loaded last: `{ work, model }`. */
let bert = null;
let layer = null;
/** Section 8's pair: the one-shot call and the layer on the same input (set up by `mha-oneshot`). */
let pair = null;
let llm = null;
let seq2seq = null;
let speech = null;
/** The vision model loaded last: `{ key, model }` (one at a time: ViT-B is 350 MB in float32). */
let vision = null;
/** The GGUF model loaded last (section 14), one at a time: `{ file, model }`. */
let ggufModel = null;
const loadGguf = async (file) => {
  if (ggufModel?.file === file) return ggufModel.model;
  ggufModel?.model.dispose();
  ggufModel = null;
  ggufModel = { file, model: await engine.loadModel({ files: { [basename(file)]: readFileSync(file) } }) };
  return ggufModel.model;
};
const loadLlm = async () =>
  (llm ??= await engine.loadModel({ files: files(join(dir, 'llm'), ['config.json', 'model.safetensors']) }));

serveEngine(
  async ({ work, n, rows, k, m, context, tokens, model: key, causal = false, into = false, file }) => {
    if (work === 'mha') {
      // Weights held in the engine, as the peers hold theirs (initializers, tensors).
      layer ??= engine.multiHeadLayer(mhaWeights(), { heads: HEADS });
      const x = inputs()[`x${n}`];
      return () => {
        const r = layer.run(x, { causal });
        return sample(r.weights.data, n, r.output.data, D);
      };
    } else if (work === 'mha-into') {
      // The layer writing into the caller's arrays, the same two every call (options.into): no new arrays to touch.
      layer ??= engine.multiHeadLayer(mhaWeights(), { heads: HEADS });
      const x = inputs()[`x${n}`];
      const into = { output: new Float32Array(n * D), weights: new Float32Array(HEADS * n * n) };
      return () => {
        const r = layer.run(x, { causal, into });
        return sample(r.weights.data, n, r.output.data, D);
      };
    } else if (work === 'mha-oneshot') {
      // The stateless call most users make: the weights cross into the engine on every call.
      const x = inputs()[`x${n}`];
      layer ??= engine.multiHeadLayer(mhaWeights(), { heads: HEADS });
      pair = {
        oneShot: () => engine.multiHeadAttention(x, mhaWeights(), { heads: HEADS, causal }),
        layer: () => layer.run(x, { causal }),
      };
      return () => {
        const r = pair.oneShot();
        return sample(r.weights.data, n, r.output.data, D);
      };
    } else if (work === 'bert' || work === 'bert-bf16') {
      if (bert?.work !== work) {
        // one BERT loaded at a time: base is 440 MB in float32
        bert?.model.dispose();
        bert = {
          work,
          model: await engine.loadModel({ files: files(join(dir, work), ['config.json', 'model.safetensors']) }),
        };
      }
      const { model } = bert;
      const ids = bertIds(n);
      return () => {
        const r = model.run(ids);
        return sample(r.attentions.subarray((r.shape[0] - 1) * r.shape[1] * n * n), n, r.hidden.data, D);
      };
    } else if (work === 'gemm') {
      const x = inputs()[`a${rows}x${k}`];
      const dense = engine.linearLayer(readSafetensors(join(dir, `gemm_${k}x${m}.safetensors`)).w);
      return () => Array.from(dense.run(x).data.subarray(0, m));
    } else if (work === 'default') {
      const model = await engine.loadModel('default');
      return () => {
        const r = model.run(SENTENCE);
        return sample(r.attentions, r.shape[2], r.hidden.data, r.hidden.shape[1]);
      };
    } else if (work === 'llm-prefill' || work === 'gguf-prefill') {
      // Every layer's maps (a GGUF's 1-3B model: the last layer's, as the page runs one past what fits) and the top 5
      // next tokens after every position (the page's run); no prefix taken.
      const model = work === 'gguf-prefill' ? await loadGguf(file) : await loadLlm();
      const ids = llmIds(n);
      const mapLayers = work === 'gguf-prefill' ? [model.info.layers - 1] : undefined;
      return () => {
        const r = model.run(ids, { topK: 5, reusePrefix: false, mapLayers });
        const [layers, heads] = r.shape;
        const head0 = r.attentions.subarray((layers - 1) * heads * n * n);
        return llmSample(head0, n, r.predictions.probs.subarray((n - 1) * 5, n * 5));
      };
    } else if (work === 'llm-append') {
      // Typing at the end: the run on n tokens, then (timed) the run on n + 1 that reuses its keys and values.
      const model = await loadLlm();
      const [before, after] = [llmIds(n), llmIds(n + 1)];
      return () => {
        model.run(before, { topK: 5 });
        const start = performance.now();
        const r = model.run(after, { topK: 5 });
        if (r.reusedTokens !== n) throw new Error(`reused ${r.reusedTokens} tokens, not ${n}`);
        const ms = performance.now() - start;
        const [layers, heads] = r.shape;
        const head0 = r.attentions.subarray((layers - 1) * heads * (n + 1) * (n + 1));
        return { ms, sample: llmSample(head0, n + 1, r.predictions.probs.subarray(n * 5, (n + 1) * 5)) };
      };
    } else if (work === 'llm-explain-score' || work === 'llm-explain-logit') {
      // The Why pane's clicks after the page's run on n tokens: one score (the last layer's head 4, from the last
      // token to the one in the middle) or one next-token logit (the likeliest after the last token), each replayed
      // against the run's keys and values.
      const model = await loadLlm();
      const ids = llmIds(n);
      const run = model.run(ids, { topK: 5 });
      const { layers } = model.info;
      const token = run.predictions.ids[(n - 1) * 5];
      return () => {
        const start = performance.now();
        const value =
          work === 'llm-explain-score'
            ? model.explainScore(run, { layer: layers - 1, head: 4, query: n - 1, key: n >> 1 }).score
            : model.explainLogit(run, { position: n - 1, token }).logit;
        return { ms: performance.now() - start, sample: [value] };
      };
    } else if (work === 'llm-decode' || work === 'gguf-decode') {
      // Greedy tokens after `context` tokens with the KV cache, no maps kept: the median time per token.
      const model = work === 'gguf-decode' ? await loadGguf(file) : await loadLlm();
      const ids = llmIds(context);
      return async () => {
        const stamps = [];
        const r = await model.generate(ids, {
          maxNewTokens: tokens + 1,
          temperature: 0,
          attentions: false,
          stopAtEos: false,
          onToken: () => stamps.push(performance.now()),
        });
        const steps = stamps.slice(1).map((t, i) => t - stamps[i]);
        return { ms: median(steps), sample: Array.from(r.ids.slice(context)) };
      };
    } else if (work === 'seq2seq') {
      // Translation: the source through the encoder once, then greedy tokens with the decoder's KV cache and the
      // cross keys and values computed once; every encoder, decoder and cross map of the whole target returned.
      seq2seq ??= await engine.loadModel({
        files: files(join(dir, 'seq2seq'), ['config.json', 'model.safetensors']),
      });
      const source = seq2seqIds(n);
      return async () => {
        const stamps = [performance.now()];
        const g = await seq2seq.generate(
          { source },
          { maxNewTokens: tokens, temperature: 0, stopAtEos: false, onToken: () => stamps.push(performance.now()) },
        );
        const [layers, heads, rows, m] = g.maps.cross.shape;
        const last = ((layers - 1) * heads * rows + rows - 1) * m; // the last layer's first head, its last row
        return {
          sample: seq2seqSample(g.targetIds, g.maps.cross.attentions.subarray(last, last + m)),
          parts: seq2seqParts(stamps),
        };
      };
    } else if (work === 'speech') {
      // A 30 s window's log-mel features (those ORT-web reads) through the encoder once, then greedy tokens with the
      // decoder's KV cache and the cross keys and values computed once; every decoder and cross map returned.
      const names = ['config.json', 'preprocessor_config.json', 'generation_config.json', 'tokenizer.json'];
      speech ??= await engine.loadModel({ files: files(join(dir, 'speech'), [...names, 'model.safetensors']) });
      const bytes = readFileSync(join(dir, 'speech', 'features.f32'));
      const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
      const features = { data, shape: [speech.info.audio.melBins, speech.info.audio.frames] };
      return async () => {
        const stamps = [performance.now()];
        const g = await speech.generate(
          { features },
          { language: 'en', maxNewTokens: tokens, onToken: () => stamps.push(performance.now()) },
        );
        const [layers, heads, rows, m] = g.maps.cross.shape;
        const last = ((layers - 1) * heads * rows + rows - 1) * m; // the last layer's first head, its last row
        return {
          sample: seq2seqSample(g.targetIds, g.maps.cross.attentions.subarray(last, last + m)),
          parts: seq2seqParts(stamps),
        };
      };
    } else if (work === 'vision') {
      // An image's pixels [3, H, W] through a vision transformer, every layer's and head's map returned (the default):
      // in a new array each call, or `into` the caller's array, the same one every call (options.into).
      const folder = join(dir, 'vision', key);
      if (vision?.key !== key) {
        vision?.model.dispose();
        vision = { key, model: await engine.loadModel({ files: files(folder, ['config.json', 'model.safetensors']) }) };
      }
      const { model } = vision;
      const { pixels } = readSafetensors(join(folder, 'pixels.safetensors'));
      const arrays = into ? { into: { attentions: new Float32Array(model.run({ pixels }).attentions.length) } } : {};
      return () => {
        const r = model.run({ pixels }, arrays);
        const [layers, heads, tokens] = r.shape;
        const last = r.attentions.subarray((layers - 1) * heads * tokens * tokens);
        return sample(last, tokens, r.hidden.data, r.hidden.shape[1]);
      };
    } else throw new Error(`unknown work ${work}`);
  },
  {
    heap: () => ({ bytes: engine.memory().heapBytes }),
    // The micro-kernel's GFLOPS on one thread now (about 0.3 s): the GEMM rows compare against it.
    peak: async () => ({ gflops: (await peakKernel())._kernel_peak(0.3) }),
    // This machine's memory bandwidth now (bench/bandwidth.mjs): bytes copied and bytes read per second.
    bandwidth: () => memoryBandwidth(),
    // What a new array of `floats` values costs now to allocate and write once (its pages touched for the first time):
    // what a call returning its maps in a new array pays on top of one writing them into the caller's.
    touch: ({ floats }) => ({ ms: timed(() => new Float32Array(floats).fill(1)) }),
    // Section 8, cold: the layer on the one-shot call's input, right after that call in the same round, so that
    // each round pairs two calls a moment apart (a machine's speed drifts within a minute).
    layer: () => ({ ms: timed(pair.layer) }),
    // Section 8, warm: `blocks` times five one-shot calls back to back and then five layer calls; the median of
    // each five's last three (the first two warm that call up), block by block.
    warmPair: ({ blocks }) => {
      const oneShot = [],
        kept = [];
      for (let b = 0; b < blocks; b++) {
        const three = (call) => median([0, 1, 2, 3, 4].map(() => timed(call)).slice(2));
        oneShot.push(three(pair.oneShot));
        kept.push(three(pair.layer));
      }
      return { oneShot, layer: kept };
    },
  },
);
