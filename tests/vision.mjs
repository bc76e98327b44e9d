// Vision checkpoints and images for the tests: the goldens of tests/golden/vision.json (written by
// make_vision_goldens.py with torchvision) as model files, and the generated test images of
// tests/reference/pil_reference.py, byte for byte, with what Pillow and Hugging Face's image processors make of them.
// Plain JS: Vitest and the browser tests (Node) both import it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { safetensors } from './safetensors.mjs';

/** @typedef {{ shape: number[], data: number[] }} Stored */
/**
 * @typedef {{ pixels: Stored, grid: [number, number], tokens: string[], attentions: Stored, hidden: Stored,
 *   token_norms: Stored, pooled?: Stored, logits?: Stored, image_embeds?: Stored }} VisionRun
 * @typedef {{ name: string, config: Record<string, any>, state: Record<string, Stored>, runs: VisionRun[] }} VisionGolden
 */

/** @type {VisionGolden[]} */
export const VISION_GOLDENS = JSON.parse(readFileSync(new URL('./golden/vision.json', import.meta.url), 'utf8')).cases;

/**
 * A golden's checkpoint as model files: config.json, model.safetensors (F32, and any `extra` tensors beside) and,
 * when given, a preprocessor_config.json.
 * @param {VisionGolden} golden
 * @param {Record<string, unknown>} [preprocessor]
 * @param {Record<string, { data: BigInt64Array, shape: number[], dtype: 'I64' }>} [extra]
 * @returns {Record<string, Uint8Array>}
 */
export function visionFiles(golden, preprocessor, extra = {}) {
  const state = Object.fromEntries(
    Object.entries(golden.state).map(([name, t]) => [
      name,
      // a scalar (CLIP's logit_scale) as one value
      { shape: t.shape.length ? t.shape : [1], data: Float32Array.from(t.data) },
    ]),
  );
  const json = (/** @type {unknown} */ j) => new TextEncoder().encode(JSON.stringify(j));
  return {
    'config.json': json(golden.config),
    'model.safetensors': safetensors({ ...state, ...extra }),
    ...(preprocessor && { 'preprocessor_config.json': json(preprocessor) }),
  };
}

/**
 * tests/reference/pil_reference.py's test image: [height, width, 4] RGBA, from its pattern and seed.
 * @param {number} width
 * @param {number} height
 * @param {'gradient' | 'noise' | 'checker' | 'grey' | 'alpha'} pattern
 * @param {number} [seed]
 */
export function testImage(width, height, pattern, seed = 0) {
  const data = new Uint8ClampedArray(width * height * 4);
  let s = seed >>> 0;
  const draw = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s >>> 24;
  };
  const cell = 1 + (seed % 5);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const p = (y * width + x) * 4;
      let rgba;
      if (pattern === 'gradient')
        rgba = [
          Math.floor((x * 255) / Math.max(width - 1, 1)),
          Math.floor((y * 255) / Math.max(height - 1, 1)),
          Math.floor(((x + y) * 255) / Math.max(width + height - 2, 1)),
          255,
        ];
      else if (pattern === 'noise') rgba = [draw(), draw(), draw(), 255];
      else if (pattern === 'checker') {
        const v = ((Math.floor(x / cell) + Math.floor(y / cell)) & 1) === 1 ? 255 : 0;
        rgba = [v, 255 - v, v, 255];
      } else if (pattern === 'grey') {
        const v = draw();
        rgba = [v, v, v, 255];
      } else rgba = [draw(), draw(), draw(), draw()];
      data.set(rgba, p);
    }
  return { data, width, height };
}

/**
 * What Hugging Face's image processor (its Pillow path) makes of each test image, from tests/reference/pil_reference.py
 * run by Debian's python3 with python3-pil: [3, H, W] float32 per job.
 * @param {Array<{ width: number, height: number, pattern: string, seed?: number, preprocess: Record<string, unknown> }>} jobs
 * @returns {Float32Array[]}
 */
export function pillowPixels(jobs) {
  const out = execFileSync('/usr/bin/python3', [new URL('./reference/pil_reference.py', import.meta.url).pathname], {
    input: JSON.stringify(jobs),
    maxBuffer: 1 << 30,
  });
  return JSON.parse(out.toString()).results.map((/** @type {{ pixels: string }} */ r) => {
    const bytes = Buffer.from(r.pixels, 'hex');
    return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4).slice();
  });
}

/** DINOv2's image processor as facebook/dinov2-small has it: shortest edge to 256 (bicubic), the centre 224 × 224. */
export const DINOV2_PREPROCESSOR = {
  crop_size: { height: 224, width: 224 },
  do_center_crop: true,
  do_convert_rgb: true,
  do_normalize: true,
  do_rescale: true,
  do_resize: true,
  image_mean: [0.485, 0.456, 0.406],
  image_processor_type: 'BitImageProcessor',
  image_std: [0.229, 0.224, 0.225],
  resample: 3,
  rescale_factor: 0.00392156862745098,
  size: { shortest_edge: 256 },
};

/**
 * A random DINOv2 (with registers when `registers` > 0) at 224² with patch 14: a 16 × 16 grid of patches, large
 * enough to see in the page. The golden checkpoints' names and shapes (Dinov2Model, Dinov2WithRegistersModel), other
 * sizes; weights from a fixed generator, queries and keys wide enough for attention that is not uniform.
 * @param {{ registers?: number, hidden?: number, heads?: number, layers?: number, seed?: number }} [options]
 * @returns {Record<string, Uint8Array>}
 */
export function dinov2Files({ registers = 0, hidden = 48, heads = 6, layers = 3, seed = 1 } = {}) {
  let s = seed >>> 0;
  const uniform = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
  /** @type {Record<string, { data: Float32Array, shape: number[] }>} */
  const state = {};
  const put = (
    /** @type {string} */ name,
    /** @type {number[]} */ shape,
    /** @type {number | 'one' | 'zero'} */ scale,
  ) => {
    const size = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size).map(() => (scale === 'one' ? 1 : scale === 'zero' ? 0 : scale * uniform()));
    state[name] = { data, shape };
  };
  const patches = (224 / 14) ** 2;
  put('embeddings.cls_token', [1, 1, hidden], 1);
  put('embeddings.mask_token', [1, hidden], 'zero');
  if (registers) put('embeddings.register_tokens', [1, registers, hidden], 1);
  put('embeddings.position_embeddings', [1, 1 + patches, hidden], 0.5);
  put('embeddings.patch_embeddings.projection.weight', [hidden, 3, 14, 14], 0.06);
  put('embeddings.patch_embeddings.projection.bias', [hidden], 0.1);
  for (let l = 0; l < layers; l++) {
    const p = `encoder.layer.${l}.`;
    put(`${p}norm1.weight`, [hidden], 'one');
    put(`${p}norm1.bias`, [hidden], 'zero');
    for (const [name, scale] of [
      ['query', 1.2],
      ['key', 1.2],
      ['value', 0.4],
    ]) {
      put(`${p}attention.attention.${name}.weight`, [hidden, hidden], Number(scale));
      put(`${p}attention.attention.${name}.bias`, [hidden], 0.1);
    }
    put(`${p}attention.output.dense.weight`, [hidden, hidden], 0.4);
    put(`${p}attention.output.dense.bias`, [hidden], 0.1);
    put(`${p}layer_scale1.lambda1`, [hidden], 'one');
    put(`${p}norm2.weight`, [hidden], 'one');
    put(`${p}norm2.bias`, [hidden], 'zero');
    put(`${p}mlp.fc1.weight`, [2 * hidden, hidden], 0.4);
    put(`${p}mlp.fc1.bias`, [2 * hidden], 0.1);
    put(`${p}mlp.fc2.weight`, [hidden, 2 * hidden], 0.3);
    put(`${p}mlp.fc2.bias`, [hidden], 0.1);
    put(`${p}layer_scale2.lambda1`, [hidden], 'one');
  }
  put('layernorm.weight', [hidden], 'one');
  put('layernorm.bias', [hidden], 'zero');
  const config = {
    architectures: [registers ? 'Dinov2WithRegistersModel' : 'Dinov2Model'],
    model_type: registers ? 'dinov2_with_registers' : 'dinov2',
    hidden_act: 'gelu',
    hidden_size: hidden,
    image_size: 224,
    layer_norm_eps: 1e-6,
    layerscale_value: 1,
    mlp_ratio: 2,
    num_attention_heads: heads,
    num_channels: 3,
    num_hidden_layers: layers,
    patch_size: 14,
    qkv_bias: true,
    use_swiglu_ffn: false,
    ...(registers && { num_register_tokens: registers }),
  };
  const json = (/** @type {unknown} */ j) => new TextEncoder().encode(JSON.stringify(j));
  return {
    'config.json': json(config),
    'model.safetensors': safetensors(state),
    'preprocessor_config.json': json(DINOV2_PREPROCESSOR),
  };
}
