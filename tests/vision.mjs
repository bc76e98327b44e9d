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
