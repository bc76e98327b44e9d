// The benchmark's workloads and their data, written once to files so that every
// engine (AttnScope wasm, AttnScope native, ONNX Runtime Web, TensorFlow.js) reads
// exactly the same weights and inputs.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { bertCheckpoint, safetensors, safetensorsViews } from '../tests/safetensors.mjs';
import { REAL_SHAPES, realShapeCheckpoint } from '../tests/llm/checkpoints.mjs';
import { whisperTokenizer } from '../tests/whisper.mjs';
import { median } from './stats.mjs';

export const D = 768;
export const HEADS = 12;
export const MHA_N = [16, 64, 128, 512, 2048];
/** One-shot multiHeadAttention (weights passed per call) against the layer that keeps them. */
export const ONE_SHOT_N = [64, 128, 512];
/** Long inputs: multi-head attention with every weight returned, full and causal, against the kernel's peak. */
export const LONG_N = [2048, 4096];
export const BERT_N = [32, 128];
/** [rows, k, m]: x [rows, k] · w [k, m], the projections and FFN of a bert-base layer. */
export const GEMMS = [
  [128, 768, 768],
  [128, 768, 3072],
  [128, 3072, 768],
  [512, 768, 768],
];
/** A typical sentence: 20 tokens for the default model's SentencePiece vocabulary. */
export const SENTENCE = 'The quick brown fox jumps over the lazy dog while the cat sleeps in the sun.';

/** Uniform values in [−0.1, 0.1) from a fixed LCG: the same numbers on every run. */
export function random(n, seed) {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) a[i] = ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5) * 0.2;
  return a;
}

/** The tensors of a safetensors file on disk, as { data: Float32Array, shape }. */
export function readSafetensors(path) {
  return safetensorsViews(new Uint8Array(readFileSync(path)));
}

const matrix = (rows, cols, seed) => ({ data: random(rows * cols, seed), shape: [rows, cols] });

/** The language model of the LLM rows: SmolLM2-135M's shape, random BF16 weights (tests/llm/checkpoints.mjs). */
export const LLM = 'SmolLM2-135M';
export const LLM_SHAPE = REAL_SHAPES[LLM];
export const LLM_PREFILL_N = [128, 512];
export const LLM_DECODE_CONTEXT = [128, 1024];

/** Token ids of the LLM rows: n ids spread over the vocabulary, the same in every engine. */
export const llmIds = (n) => Array.from({ length: n }, (_, i) => 1000 + ((i * 7919) % 40000));

/**
 * What an LLM engine reports for the agreement check: the last 3 rows of the last layer's first head,
 * and the 5 largest next-token probabilities after the last token.
 */
export function llmSample(lastLayerHead0, n, topProbs) {
  return [...Array.from(lastLayerHead0.subarray((n - 3) * n, n * n)), ...Array.from(topProbs)];
}

/** The k largest of softmax(logits), largest first. */
export function topProbabilities(logits, k) {
  let max = -Infinity;
  for (const x of logits) max = Math.max(max, x);
  let sum = 0;
  for (const x of logits) sum += Math.exp(x - max);
  return [...logits]
    .sort((a, b) => b - a)
    .slice(0, k)
    .map((x) => Math.exp(x - max) / sum);
}

/**
 * The LLM's files in `dir`/llm: config.json and model.safetensors (BF16) for AttnScope, model.gguf (BF16)
 * for llama.cpp, and llm.onnx (the same values in float32) for onnxruntime-web. 270 MB + 270 MB + 650 MB,
 * written once: the weights come from a fixed seed.
 */
export function writeLlm(dir) {
  const llm = join(dir, 'llm');
  if (existsSync(join(llm, 'llm.onnx'))) return;
  mkdirSync(llm, { recursive: true });
  const checkpoint = realShapeCheckpoint(LLM);
  for (const [name, bytes] of Object.entries(checkpoint.files)) writeFileSync(join(llm, name), bytes);
  writeFileSync(join(llm, 'model.gguf'), checkpoint.gguf());
  execFileSync('/usr/bin/python3', [new URL('./peers/onnx_graphs.py', import.meta.url).pathname, '--llm', llm], {
    stdio: 'inherit',
  });
}

/**
 * A checkpoint's tensors drawn one after another from `random`, seeded from `seed` up, into `t` by name: `around`
 * adds a constant (1 for a norm's weights).
 */
function randomTensors(seed) {
  const t = {};
  const tensor = (name, shape, around = 0) => {
    const data = random(
      shape.reduce((a, b) => a * b, 1),
      seed++,
    );
    if (around) for (let i = 0; i < data.length; i++) data[i] += around;
    t[name] = { data, shape };
  };
  return { t, tensor };
}

/** The translation rows: Helsinki-NLP/opus-mt-en-de's shape (6 + 6 post-LN layers, d 512, 8 heads, FFN 2048, SiLU). */
export const SEQ2SEQ_SHAPE = { d: 512, heads: 8, ffn: 2048, layers: 6, vocab: 58101, positions: 512 };
export const SEQ2SEQ_SOURCE_N = 64;
export const SEQ2SEQ_TOKENS = 32;
/** The source's token ids, the same in every engine: n ids spread over the vocabulary, then </s> (0). */
export const seq2seqIds = (n) => [...Array.from({ length: n - 1 }, (_, i) => 100 + ((i * 7919) % 50000)), 0];

/**
 * The translation model's files in `dir`/seq2seq: config.json and model.safetensors (F32, random, the Hub's names,
 * the position tables left out as Marian's checkpoints leave them), and the ONNX graphs of the same weights
 * (encoder, cross keys and values, decoder with past). About 300 MB + 560 MB, written once.
 */
export function writeSeq2seq(dir) {
  const out = join(dir, 'seq2seq');
  if (existsSync(join(out, 'decoder.onnx'))) return;
  mkdirSync(out, { recursive: true });
  const { d, heads, ffn, layers, vocab, positions } = SEQ2SEQ_SHAPE;
  const config = {
    architectures: ['MarianMTModel'],
    model_type: 'marian',
    vocab_size: vocab,
    d_model: d,
    encoder_layers: layers,
    decoder_layers: layers,
    encoder_attention_heads: heads,
    decoder_attention_heads: heads,
    encoder_ffn_dim: ffn,
    decoder_ffn_dim: ffn,
    max_position_embeddings: positions,
    activation_function: 'swish',
    scale_embedding: true,
    pad_token_id: vocab - 1,
    eos_token_id: 0,
    decoder_start_token_id: vocab - 1,
  };
  const { t, tensor } = randomTensors(100);
  tensor('model.shared.weight', [vocab, d]);
  tensor('final_logits_bias', [1, vocab]);
  for (const stack of ['encoder', 'decoder'])
    for (let l = 0; l < layers; l++) {
      const p = `model.${stack}.layers.${l}.`;
      for (const attention of stack === 'decoder' ? ['self_attn', 'encoder_attn'] : ['self_attn']) {
        for (const w of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) {
          tensor(`${p}${attention}.${w}.weight`, [d, d]);
          tensor(`${p}${attention}.${w}.bias`, [d]);
        }
        tensor(`${p}${attention}_layer_norm.weight`, [d], 1);
        tensor(`${p}${attention}_layer_norm.bias`, [d]);
      }
      tensor(`${p}fc1.weight`, [ffn, d]);
      tensor(`${p}fc1.bias`, [ffn]);
      tensor(`${p}fc2.weight`, [d, ffn]);
      tensor(`${p}fc2.bias`, [d]);
      tensor(`${p}final_layer_norm.weight`, [d], 1);
      tensor(`${p}final_layer_norm.bias`, [d]);
    }
  writeFileSync(join(out, 'config.json'), JSON.stringify(config));
  writeFileSync(join(out, 'model.safetensors'), safetensors(t));
  execFileSync('/usr/bin/python3', [new URL('./peers/onnx_graphs.py', import.meta.url).pathname, '--marian', out], {
    stdio: 'inherit',
  });
}

/**
 * A translation call's parts, from the time it started and the time each token came: `first`, the encoder, the cross
 * keys and values and the first token; `step`, each later token (the median).
 */
export function seq2seqParts([start, ...tokens]) {
  const steps = tokens.slice(1).map((t, i) => t - tokens[i]);
  return { first: tokens[0] - start, step: median(steps) };
}

/**
 * What the translation row's float32 model does, for the floor of section 11: `encodeFlops`, the encoder over n
 * tokens (projections, FFN and attention) and the decoder's cross keys and values of them; `stepBytes`, the weights a
 * decoding step reads: each decoder layer's self q, k, v, o, cross q, o and FFN, and the head; `screenedStepBytes`,
 * the same with the head read as 8-bit integers, as AttnScope's greedy steps read it first
 * (kernels/screened_argmax.hpp: the few float32 panels it reads again are left out).
 */
export function seq2seqWork(n) {
  const { d, ffn, layers, vocab } = SEQ2SEQ_SHAPE;
  const encoderLayer = 2 * n * (4 * d * d + 2 * d * ffn) + 4 * n * n * d;
  const crossKeysValues = 2 * n * 2 * d * d;
  return {
    encodeFlops: layers * (encoderLayer + crossKeysValues),
    stepBytes: 4 * (layers * (6 * d * d + 2 * d * ffn) + vocab * d),
    screenedStepBytes: 4 * layers * (6 * d * d + 2 * d * ffn) + vocab * d,
  };
}

/**
 * What a translation engine reports for the agreement check: the target's ids, then the last token's row of the
 * last layer's first cross-attention map.
 */
export function seq2seqSample(ids, lastCrossRow) {
  return [...Array.from(ids), ...Array.from(lastCrossRow)];
}

/**
 * The speech row: openai/whisper-tiny's shape (4 + 4 pre-LN layers, d 384, 6 heads, FFN 1536, 80 mel bins, 51,865
 * tokens, 448 target positions), encoding a whole 30 s window and writing 32 tokens.
 */
export const SPEECH_SHAPE = { d: 384, heads: 6, ffn: 1536, layers: 4, vocab: 51865, mels: 80, targets: 448 };
export const SPEECH_TOKENS = 32;
/** Whisper's prompt for English transcription without timestamps: start of transcript, <|en|>, transcribe, no timestamps. */
export const SPEECH_PROMPT = [50258, 50259, 50359, 50363];
/** 30 s at 16 kHz, the same in every engine: a few drifting tones over a little noise, loud and quiet in turn. */
export function speechAudio() {
  const noise = random(480000, 77);
  return Float32Array.from(noise, (r, i) => {
    const t = i / 16000;
    const envelope = 0.5 + 0.5 * Math.sin(2 * Math.PI * 0.7 * t);
    return (
      envelope * 0.2 * (Math.sin(2 * Math.PI * (220 + 40 * Math.sin(t)) * t) + 0.5 * Math.sin(2 * Math.PI * 1320 * t)) +
      0.02 * r
    );
  });
}

/**
 * The speech model's files in `dir`/speech: config.json, preprocessor_config.json, model.safetensors (F32, random,
 * the Hub's names), Whisper's tokenizer.json and generation_config.json (tests/whisper.mjs), the end of text among
 * the suppressed tokens so that every engine writes all 32; and the ONNX graphs of the same weights (encoder, cross
 * keys and values, decoder with past). About 160 MB + 330 MB, written once. The log-mel features both engines read,
 * computed by AttnScope from speechAudio(), are written by processes.mjs (prepareSpeech).
 */
export function writeSpeech(dir) {
  const out = join(dir, 'speech');
  if (existsSync(join(out, 'decoder.onnx'))) return out;
  mkdirSync(out, { recursive: true });
  const { d, heads, ffn, layers, vocab, mels, targets } = SPEECH_SHAPE;
  const config = {
    architectures: ['WhisperForConditionalGeneration'],
    model_type: 'whisper',
    vocab_size: vocab,
    num_mel_bins: mels,
    d_model: d,
    encoder_layers: layers,
    decoder_layers: layers,
    encoder_attention_heads: heads,
    decoder_attention_heads: heads,
    encoder_ffn_dim: ffn,
    decoder_ffn_dim: ffn,
    max_source_positions: 1500,
    max_target_positions: targets,
    decoder_start_token_id: 50258,
    eos_token_id: 50257,
    bos_token_id: 50257,
    pad_token_id: 50257,
  };
  const { t, tensor } = randomTensors(300);
  tensor('model.encoder.conv1.weight', [d, mels, 3]);
  tensor('model.encoder.conv1.bias', [d]);
  tensor('model.encoder.conv2.weight', [d, d, 3]);
  tensor('model.encoder.conv2.bias', [d]);
  tensor('model.encoder.embed_positions.weight', [1500, d]);
  tensor('model.decoder.embed_tokens.weight', [vocab, d]);
  tensor('model.decoder.embed_positions.weight', [targets, d]);
  for (const stack of ['encoder', 'decoder']) {
    for (let l = 0; l < layers; l++) {
      const p = `model.${stack}.layers.${l}.`;
      for (const attention of stack === 'decoder' ? ['self_attn', 'encoder_attn'] : ['self_attn']) {
        for (const w of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) tensor(`${p}${attention}.${w}.weight`, [d, d]);
        for (const w of ['q_proj', 'v_proj', 'out_proj']) tensor(`${p}${attention}.${w}.bias`, [d]);
        tensor(`${p}${attention}_layer_norm.weight`, [d], 1);
        tensor(`${p}${attention}_layer_norm.bias`, [d]);
      }
      tensor(`${p}fc1.weight`, [ffn, d]);
      tensor(`${p}fc1.bias`, [ffn]);
      tensor(`${p}fc2.weight`, [d, ffn]);
      tensor(`${p}fc2.bias`, [d]);
      tensor(`${p}final_layer_norm.weight`, [d], 1);
      tensor(`${p}final_layer_norm.bias`, [d]);
    }
    tensor(`model.${stack}.layer_norm.weight`, [d], 1);
    tensor(`model.${stack}.layer_norm.bias`, [d]);
  }
  const { tokenizer, generationConfig } = whisperTokenizer([]);
  const generation = JSON.parse(new TextDecoder().decode(generationConfig));
  generation.suppress_tokens = [...generation.suppress_tokens, 50257];
  writeFileSync(join(out, 'config.json'), JSON.stringify(config));
  writeFileSync(
    join(out, 'preprocessor_config.json'),
    JSON.stringify({ feature_extractor_type: 'WhisperFeatureExtractor', feature_size: mels }),
  );
  writeFileSync(join(out, 'generation_config.json'), JSON.stringify(generation));
  writeFileSync(join(out, 'tokenizer.json'), tokenizer);
  writeFileSync(join(out, 'model.safetensors'), safetensors(t));
  execFileSync('/usr/bin/python3', [new URL('./peers/onnx_graphs.py', import.meta.url).pathname, '--whisper', out], {
    stdio: 'inherit',
  });
  return out;
}

/** The ids a speech engine leaves out of the next token, as AttnScope's filters do (web/src/timestamps.ts, no timestamps). */
export function speechBanned(dir) {
  const g = JSON.parse(readFileSync(join(dir, 'speech', 'generation_config.json'), 'utf8'));
  const always = new Set(g.suppress_tokens);
  return (id, first) =>
    always.has(id) || id > g.no_timestamps_token_id || (first && g.begin_suppress_tokens.includes(id));
}

/**
 * What the speech row's model does, for its table: `encodeFlops`, the two convolutions, the encoder over 1,500
 * positions and the decoder's cross keys and values of them; `stepBytes`, the float32 weights a decoding step reads
 * (each decoder layer's self q, k, v, o, cross q, o and FFN, and the tied head).
 */
export function speechWork() {
  const { d, ffn, layers, vocab, mels } = SPEECH_SHAPE;
  const n = 1500;
  const convs = 2 * 3000 * d * mels * 3 + 2 * n * d * d * 3;
  const encoderLayer = 2 * n * (4 * d * d + 2 * d * ffn) + 4 * n * n * d;
  return {
    encodeFlops: convs + layers * (encoderLayer + 2 * n * 2 * d * d),
    stepBytes: 4 * (layers * (6 * d * d + 2 * d * ffn) + vocab * d),
  };
}

/**
 * The vision rows: the base models of google/vit-base-patch16-224 (ViTModel: its ViT and pooler, without the
 * 1,000-class classifier) and facebook/dinov2-small (Dinov2Model), each at its trained size, so that neither engine
 * resizes the position table. `ffn` is ViT's intermediate_size and DINOv2's hidden_size × mlp_ratio (4).
 */
export const VISION_MODELS = {
  vit: {
    name: 'ViT-B/16 224²',
    config: {
      architectures: ['ViTModel'],
      model_type: 'vit',
      attention_probs_dropout_prob: 0.0,
      hidden_act: 'gelu',
      hidden_dropout_prob: 0.0,
      hidden_size: 768,
      image_size: 224,
      initializer_range: 0.02,
      intermediate_size: 3072,
      layer_norm_eps: 1e-12,
      num_attention_heads: 12,
      num_channels: 3,
      num_hidden_layers: 12,
      patch_size: 16,
      qkv_bias: true,
      torch_dtype: 'float32',
    },
    ffn: 3072,
  },
  dinov2: {
    name: 'DINOv2-S/14 518²',
    config: {
      architectures: ['Dinov2Model'],
      model_type: 'dinov2',
      attention_probs_dropout_prob: 0.0,
      drop_path_rate: 0.0,
      hidden_act: 'gelu',
      hidden_dropout_prob: 0.0,
      hidden_size: 384,
      image_size: 518,
      initializer_range: 0.02,
      layer_norm_eps: 1e-6,
      layerscale_value: 1.0,
      mlp_ratio: 4,
      num_attention_heads: 6,
      num_channels: 3,
      num_hidden_layers: 12,
      patch_size: 14,
      qkv_bias: true,
      torch_dtype: 'float32',
      use_swiglu_ffn: false,
    },
    ffn: 1536,
  },
};

/** A vision row's tokens: [CLS] and one per patch of its trained size (197 for ViT-B/16, 1,370 for DINOv2-S/14). */
export const visionTokens = ({ config: c }) => 1 + (c.image_size / c.patch_size) ** 2;
/** The floats of a vision model's maps, every layer and head: [layers, heads, n, n]. */
export const visionMapFloats = (model) =>
  model.config.num_hidden_layers * model.config.num_attention_heads * visionTokens(model) ** 2;

/**
 * A vision row's input [3, H, W] as an image processor leaves it (values of a normalized photo, about ±2): smooth
 * colour waves with a little noise, so that heads attend to regions rather than uniformly.
 */
function visionPixels({ config: c }, seed) {
  const side = c.image_size;
  const noise = random(3 * side * side, seed);
  const data = new Float32Array(3 * side * side);
  for (let ch = 0, i = 0; ch < 3; ch++)
    for (let y = 0; y < side; y++)
      for (let x = 0; x < side; x++, i++)
        data[i] = 1.5 * Math.sin(0.05 * x + 0.9 * ch) * Math.cos(0.037 * y - 0.4 * ch) + 5 * noise[i];
  return { data, shape: [3, side, side] };
}

/**
 * The vision models' files in `dir`/vision/<vit|dinov2>: config.json and model.safetensors (F32, random, the Hub's
 * names and shapes: LayerNorms 1 and 0, as a trained model starts, DINOv2's layer scales about 1), pixels.safetensors
 * (the input), and model.onnx, an ONNX graph of the same weights with every layer's attention probabilities as
 * outputs (bench/peers/onnx_graphs.py --vit, --dinov2). About 350 + 90 MB of weights and as much of graphs, written once.
 */
export function writeVision(dir) {
  for (const [key, model] of Object.entries(VISION_MODELS)) {
    const out = join(dir, 'vision', key);
    if (existsSync(join(out, 'model.onnx'))) continue;
    mkdirSync(out, { recursive: true });
    const c = model.config;
    const [d, patch, layers] = [c.hidden_size, c.patch_size, c.num_hidden_layers];
    const positions = visionTokens(model);
    const dinov2 = c.model_type === 'dinov2';
    let seed = 300;
    const t = {};
    const tensor = (name, shape, fill = null) => {
      const data = random(
        shape.reduce((a, b) => a * b, 1),
        seed++,
      );
      if (fill === 'one') data.fill(1);
      if (fill === 'zero') data.fill(0);
      if (fill === 'around one') for (let i = 0; i < data.length; i++) data[i] += 1;
      t[name] = { data, shape };
    };
    tensor('embeddings.cls_token', [1, 1, d]);
    if (dinov2) tensor('embeddings.mask_token', [1, d]);
    tensor('embeddings.position_embeddings', [1, positions, d]);
    tensor('embeddings.patch_embeddings.projection.weight', [d, 3, patch, patch]);
    tensor('embeddings.patch_embeddings.projection.bias', [d]);
    const names = dinov2
      ? ['norm1', 'norm2', 'mlp.fc1', 'mlp.fc2']
      : ['layernorm_before', 'layernorm_after', 'intermediate.dense', 'output.dense'];
    const [norm1, norm2, up, down] = names;
    for (let l = 0; l < layers; l++) {
      const p = `encoder.layer.${l}.`;
      tensor(`${p}${norm1}.weight`, [d], 'one');
      tensor(`${p}${norm1}.bias`, [d], 'zero');
      for (const w of ['attention.attention.query', 'attention.attention.key', 'attention.attention.value']) {
        tensor(`${p}${w}.weight`, [d, d]);
        tensor(`${p}${w}.bias`, [d]);
      }
      tensor(`${p}attention.output.dense.weight`, [d, d]);
      tensor(`${p}attention.output.dense.bias`, [d]);
      if (dinov2) tensor(`${p}layer_scale1.lambda1`, [d], 'around one');
      tensor(`${p}${norm2}.weight`, [d], 'one');
      tensor(`${p}${norm2}.bias`, [d], 'zero');
      tensor(`${p}${up}.weight`, [model.ffn, d]);
      tensor(`${p}${up}.bias`, [model.ffn]);
      tensor(`${p}${down}.weight`, [d, model.ffn]);
      tensor(`${p}${down}.bias`, [d]);
      if (dinov2) tensor(`${p}layer_scale2.lambda1`, [d], 'around one');
    }
    tensor('layernorm.weight', [d], 'one');
    tensor('layernorm.bias', [d], 'zero');
    if (!dinov2) {
      tensor('pooler.dense.weight', [d, d]);
      tensor('pooler.dense.bias', [d]);
    }
    writeFileSync(join(out, 'config.json'), JSON.stringify(c));
    writeFileSync(join(out, 'model.safetensors'), safetensors(t));
    writeFileSync(join(out, 'pixels.safetensors'), safetensors({ pixels: visionPixels(model, seed) }));
    execFileSync('/usr/bin/python3', [new URL('./peers/onnx_graphs.py', import.meta.url).pathname, `--${key}`, out], {
      stdio: 'inherit',
    });
  }
}

/** Writes every workload's files into `dir`, then the ONNX graphs of the same weights (python3-onnx). */
export function writeWorkloads(dir) {
  mkdirSync(join(dir, 'bert'), { recursive: true });
  writeFileSync(
    join(dir, 'mha.safetensors'),
    safetensors({ wq: matrix(D, D, 2), wk: matrix(D, D, 3), wv: matrix(D, D, 4), wo: matrix(D, D, 5) }),
  );
  const inputs = {};
  for (const n of new Set([...MHA_N, ...LONG_N])) inputs[`x${n}`] = matrix(n, D, 1);
  for (const [rows, k, m] of GEMMS) {
    inputs[`a${rows}x${k}`] = matrix(rows, k, 6);
    writeFileSync(join(dir, `gemm_${k}x${m}.safetensors`), safetensors({ w: matrix(k, m, k + m) }));
  }
  writeFileSync(join(dir, 'inputs.safetensors'), safetensors(inputs));
  const { files } = bertCheckpoint();
  unitLayerNorms(files['model.safetensors']);
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, 'bert', name), bytes);
  // The same weights in BF16, as the Hub ships many checkpoints: half the bytes to stream through every GEMM.
  mkdirSync(join(dir, 'bert-bf16'), { recursive: true });
  writeFileSync(join(dir, 'bert-bf16', 'config.json'), files['config.json']);
  writeFileSync(join(dir, 'bert-bf16', 'model.safetensors'), bf16Copy(files['model.safetensors']));
  execFileSync('/usr/bin/python3', [new URL('./peers/onnx_graphs.py', import.meta.url).pathname, dir], {
    stdio: 'inherit',
  });
}

/** A safetensors file's F32 tensors as BF16 (rounded to nearest even), the same names and shapes. */
function bf16Copy(file) {
  const tensors = {};
  for (const [name, { shape, data }] of Object.entries(safetensorsViews(file))) {
    const bits = new Uint32Array(Float32Array.from(data).buffer);
    const half = new Uint16Array(bits.length);
    for (let i = 0; i < bits.length; i++) half[i] = (bits[i] + 0x7fff + ((bits[i] >>> 16) & 1)) >>> 16;
    tensors[name] = { data: half, shape, dtype: 'BF16' };
  }
  return safetensors(tensors);
}

/**
 * LayerNorm scales of 1 and shifts of 0, as a trained model starts: with the random
 * ±0.05 of the checkpoint every activation would shrink and every map be uniform.
 */
function unitLayerNorms(file) {
  for (const [name, { data }] of Object.entries(safetensorsViews(file)))
    if (name.includes('LayerNorm.')) data.fill(name.endsWith('.weight') ? 1 : 0);
}

/** Token ids of the BERT workload: n ids, the same in every engine. */
export const bertIds = (n) => Array.from({ length: n }, (_, i) => 1000 + i);

/**
 * What each engine reports for the agreement check: a few rows of attention weights
 * and of the output, so that engines are compared without moving megabytes.
 */
export function sample(weights, n, output, width) {
  const rows = Math.min(n, 3);
  return [...Array.from(weights.subarray(0, rows * n)), ...Array.from(output.subarray(0, width))];
}

/**
 * Runs an engine process's side of the protocol: one JSON request per stdin line, one JSON reply per line.
 * `setup(request)` returns the job for a workload (a function giving the sample, or a promise of it);
 * `run` times one call of it, `sample` returns what the last call gave. Other ops go to `handlers`.
 */
export function serveEngine(setup, handlers = {}) {
  let job = null;
  let last = null;
  const ops = {
    ...handlers,
    async setup(request) {
      job = await setup(request);
      return { ok: true };
    },
    // A job returns what the agreement check compares, or { ms, sample } when it times a part of itself, or
    // { sample, parts }: the whole call timed here, and the parts' times as the job measured them.
    async run() {
      const start = performance.now();
      const out = job();
      const result = out instanceof Promise ? await out : out;
      const ms = performance.now() - start;
      if (result && !Array.isArray(result) && 'sample' in result) {
        last = result.sample;
        return { ms: result.ms ?? ms, parts: result.parts };
      }
      last = result;
      return { ms };
    },
    sample: () => ({ sample: last }),
  };
  let queue = Promise.resolve();
  let buffer = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      queue = queue.then(async () => {
        const request = JSON.parse(line);
        if (request.op === 'quit') process.exit(0);
        try {
          const reply = await ops[request.op](request);
          process.stdout.write(`${JSON.stringify(reply ?? {})}\n`);
        } catch (err) {
          process.stdout.write(`${JSON.stringify({ error: String(err?.message ?? err) })}\n`);
        }
      });
    }
  });
}
