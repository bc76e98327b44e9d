// ONNX Runtime Web (WebAssembly backend, SIMD) as a benchmark engine, on the graphs
// bench/peers/onnx_graphs.py built from the same weights: node bench/engines/ort.mjs <threads> <dir>
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-web';

import {
  D,
  bertIds,
  llmIds,
  llmSample,
  readSafetensors,
  sample,
  seq2seqIds,
  seq2seqParts,
  seq2seqSample,
  serveEngine,
  SPEECH_PROMPT,
  speechBanned,
  topProbabilities,
} from '../workloads.mjs';

const [threads, dir] = [Number(process.argv[2]), process.argv[3]];
ort.env.wasm.numThreads = threads;
ort.env.wasm.simd = true;
// The shared workloads' inputs, read when first needed: the translation and vision sections run without them.
let inputsRead = null;
const inputs = () => (inputsRead ??= readSafetensors(join(dir, 'inputs.safetensors')));
const sessions = {};
const session = async (name) => (sessions[name] ??= await ort.InferenceSession.create(join(dir, `${name}.onnx`)));

serveEngine(async ({ work, n, rows, k, m, tokens, model }) => {
  if (work === 'mha') {
    const s = await session('mha');
    const x = inputs()[`x${n}`];
    const feeds = { X: new ort.Tensor('float32', x.data, x.shape) };
    return async () => {
      const r = await s.run(feeds);
      return sample(r.P.data, n, r.Y.data, D);
    };
  } else if (work === 'bert') {
    const s = await session('bert');
    const ids = BigInt64Array.from(bertIds(n), BigInt);
    const positions = BigInt64Array.from({ length: n }, (_, i) => BigInt(i));
    const feeds = { ids: new ort.Tensor('int64', ids, [n]), positions: new ort.Tensor('int64', positions, [n]) };
    return async () => {
      const r = await s.run(feeds);
      return sample(r.P11.data, n, r.hidden.data, D);
    };
  } else if (work === 'gemm') {
    const s = await session(`gemm_${k}x${m}`);
    const x = inputs()[`a${rows}x${k}`];
    const feeds = { X: new ort.Tensor('float32', x.data, x.shape) };
    return async () => Array.from((await s.run(feeds)).Y.data.subarray(0, m));
  } else if (work === 'llm-prefill') {
    const s = await session('llm/llm');
    const config = JSON.parse(readFileSync(join(dir, 'llm', 'config.json'), 'utf8'));
    const [heads, vocab, layers] = [config.num_attention_heads, config.vocab_size, config.num_hidden_layers];
    const feeds = llmFeeds(n, config.hidden_size / heads, config.rope_theta);
    return async () => {
      const r = await s.run(feeds);
      const last = r.logits.data.subarray((n - 1) * vocab, n * vocab);
      return llmSample(r[`P${layers - 1}`].data, n, topProbabilities(last, 5));
    };
  } else if (work === 'seq2seq') {
    // As transformers.js translates: the encoder once, the cross keys and values once, then the decoder one token a
    // call on its past keys and values, greedy; every map kept (the encoder's, and each token's decoder and cross
    // rows). The last token is run too, for its rows, as AttnScope's maps hold them.
    const [encoder, cross, decoder] = [
      await session('seq2seq/encoder'),
      await session('seq2seq/cross'),
      await session('seq2seq/decoder'),
    ];
    const c = JSON.parse(readFileSync(join(dir, 'seq2seq', 'config.json'), 'utf8'));
    const [layers, heads] = [c.decoder_layers, c.decoder_attention_heads];
    const hd = c.d_model / heads;
    const source = {
      ids: new ort.Tensor('int64', BigInt64Array.from(seq2seqIds(n), BigInt), [n]),
      positions: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: n }, (_, i) => BigInt(i)),
        [n],
      ),
    };
    const int = (x) => new ort.Tensor('int64', BigInt64Array.of(BigInt(x)), [1]);
    return async () => {
      const stamps = [performance.now()];
      const e = await encoder.run(source);
      const maps = {
        encoder: Array.from({ length: c.encoder_layers }, (_, l) => e[`E${l}`].data),
        self: [],
        cross: [],
      };
      const feeds = { ...(await cross.run({ hidden: e.hidden })) };
      for (let l = 0; l < layers; l++)
        for (const kv of ['pk', 'pv'])
          feeds[`${kv}${l}`] = new ort.Tensor('float32', new Float32Array(0), [heads, 0, hd]);
      const ids = [c.decoder_start_token_id];
      let last;
      for (let step = 0; step <= tokens; step++) {
        const r = await decoder.run({ ...feeds, id: int(ids[step]), position: int(step) });
        for (let l = 0; l < layers; l++) {
          feeds[`pk${l}`] = r[`k${l}`];
          feeds[`pv${l}`] = r[`v${l}`];
          maps.self.push(r[`S${l}`].data);
          maps.cross.push(r[`C${l}`].data);
        }
        last = r[`C${layers - 1}`].data.subarray(0, n);
        if (step === tokens) break;
        const logits = r.logits.data;
        let best = 0;
        for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
        ids.push(best);
        stamps.push(performance.now());
      }
      return { sample: seq2seqSample(ids, last), parts: seq2seqParts(stamps) };
    };
  } else if (work === 'speech') {
    // As transformers.js transcribes: the encoder on the log-mel features once (their computation, in JavaScript
    // there, is not timed here), the cross keys and values once, the prompt's 4 tokens in one decoder call, then one
    // token a call on the past keys and values, greedy under Whisper's filters; every decoder and cross map kept.
    // The last token is run too, for its rows, as AttnScope's maps hold them.
    const [encoder, cross, decoder] = [
      await session('speech/encoder'),
      await session('speech/cross'),
      await session('speech/decoder'),
    ];
    const c = JSON.parse(readFileSync(join(dir, 'speech', 'config.json'), 'utf8'));
    const [layers, heads] = [c.decoder_layers, c.decoder_attention_heads];
    const hd = c.d_model / heads;
    const bytes = readFileSync(join(dir, 'speech', 'features.f32'));
    const features = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    const input = { features: new ort.Tensor('float32', features, [1, c.num_mel_bins, 3000]) };
    const banned = speechBanned(dir);
    const ints = (xs) => new ort.Tensor('int64', BigInt64Array.from(xs, BigInt), [xs.length]);
    /** Each new token sees the past and the new ones up to itself. */
    const mask = (past, fresh) => {
      const m = new Float32Array(fresh * (past + fresh));
      for (let i = 0; i < fresh; i++) m.fill(-Infinity, i * (past + fresh) + past + i + 1, (i + 1) * (past + fresh));
      return new ort.Tensor('float32', m, [fresh, past + fresh]);
    };
    return async () => {
      const stamps = [performance.now()];
      const e = await encoder.run(input);
      const feeds = { ...(await cross.run({ hidden: e.hidden })) };
      for (let l = 0; l < layers; l++)
        for (const kv of ['pk', 'pv'])
          feeds[`${kv}${l}`] = new ort.Tensor('float32', new Float32Array(0), [heads, 0, hd]);
      const ids = [...SPEECH_PROMPT];
      const maps = { self: [], cross: [] };
      let last;
      for (let step = 0; step <= tokens; step++) {
        const fresh = step === 0 ? ids : [ids[ids.length - 1]];
        const past = ids.length - fresh.length;
        const positions = fresh.map((_, i) => past + i);
        const r = await decoder.run({
          ...feeds,
          ids: ints(fresh),
          positions: ints(positions),
          mask: mask(past, fresh.length),
        });
        for (let l = 0; l < layers; l++) {
          feeds[`pk${l}`] = r[`k${l}`];
          feeds[`pv${l}`] = r[`v${l}`];
          maps.self.push(r[`S${l}`].data);
          maps.cross.push(r[`C${l}`].data);
        }
        const rows = fresh.length;
        last = r[`C${layers - 1}`].data.subarray((rows - 1) * 1500, rows * 1500);
        if (step === tokens) break;
        const logits = r.logits.data.subarray((rows - 1) * c.vocab_size, rows * c.vocab_size);
        let best = -1;
        for (let i = 0; i < logits.length; i++)
          if (!banned(i, step === 0) && (best < 0 || logits[i] > logits[best])) best = i;
        ids.push(best);
        stamps.push(performance.now());
      }
      return { sample: seq2seqSample(ids, last), parts: seq2seqParts(stamps) };
    };
  } else if (work === 'vision') {
    // pixel_values [1, 3, H, W] through the graph of a "-with-attentions" export: every layer's attention returned.
    const s = await session(`vision/${model}/model`);
    const { pixels } = readSafetensors(join(dir, 'vision', model, 'pixels.safetensors'));
    const c = JSON.parse(readFileSync(join(dir, 'vision', model, 'config.json'), 'utf8'));
    const last = `P${c.num_hidden_layers - 1}`;
    const feeds = { pixel_values: new ort.Tensor('float32', pixels.data, [1, ...pixels.shape]) };
    return async () => {
      const r = await s.run(feeds);
      return sample(r[last].data, r[last].dims[1], r.last_hidden_state.data, c.hidden_size);
    };
  } else throw new Error(`onnxruntime-web has no ${work} workload here`);
});

/** The graph's inputs for n tokens: ids, the rotary tables (rotate-half layout, as transformers builds them), the causal mask. */
function llmFeeds(n, headDim, theta) {
  const cos = new Float32Array(n * headDim),
    sin = new Float32Array(n * headDim),
    mask = new Float32Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < headDim / 2; f++) {
      const angle = i * theta ** ((-2 * f) / headDim);
      cos[i * headDim + f] = cos[i * headDim + f + headDim / 2] = Math.cos(angle);
      sin[i * headDim + f] = sin[i * headDim + f + headDim / 2] = Math.sin(angle);
    }
    for (let j = i + 1; j < n; j++) mask[i * n + j] = -Infinity;
  }
  return {
    ids: new ort.Tensor('int64', BigInt64Array.from(llmIds(n), BigInt), [n]),
    cos: new ort.Tensor('float32', cos, [n, headDim]),
    sin: new ort.Tensor('float32', sin, [n, headDim]),
    mask: new ort.Tensor('float32', mask, [n, n]),
  };
}
