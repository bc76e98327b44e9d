// Vision transformers through the package: random checkpoints in the Hub's names and layout (ViT, DeiT with its
// distillation token, DINOv2 with and without registers, CLIP's vision tower), held to torchvision's own
// VisionTransformer (tests/golden/make_vision_goldens.py), and images preprocessed as Hugging Face's image processors
// do with Pillow (tests/reference/pil_reference.py, Debian's python3-pil), on every build.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Engine, ImageRunResult } from '../../dist/node.js';
import { SEQ2SEQ_GOLDENS, seq2seqFiles } from '../seq2seq.mjs';
import { dinov2Files, pillowPixels, testImage, VISION_GOLDENS, visionFiles, type VisionGolden } from '../vision.mjs';
import { BUILDS, engineFor } from './engines.js';

function worstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

const golden = (name: string) => VISION_GOLDENS.find((g) => g.name === name) as VisionGolden;

// Preprocessor configs as the Hub's checkpoints write them, at the goldens' small image sizes.
const DINOV2_PREPROCESSOR = {
  image_processor_type: 'BitImageProcessor',
  do_resize: true,
  size: { shortest_edge: 64 },
  resample: 3,
  do_center_crop: true,
  crop_size: { height: 56, width: 56 },
  do_rescale: true,
  rescale_factor: 0.00392156862745098,
  do_normalize: true,
  image_mean: [0.485, 0.456, 0.406],
  image_std: [0.229, 0.224, 0.225],
  do_convert_rgb: true,
};
const CLIP_PREPROCESSOR = {
  image_processor_type: 'CLIPImageProcessor',
  do_resize: true,
  size: { shortest_edge: 18 },
  resample: 3,
  do_center_crop: true,
  crop_size: 18,
  do_rescale: true,
  rescale_factor: 0.00392156862745098,
  do_normalize: true,
  image_mean: [0.48145466, 0.4578275, 0.40821073],
  image_std: [0.26862954, 0.26130258, 0.27577711],
  do_convert_rgb: true,
};
const VIT_PREPROCESSOR = {
  image_processor_type: 'ViTImageProcessor',
  do_resize: true,
  size: { height: 32, width: 32 },
  resample: 2,
  do_rescale: true,
  rescale_factor: 0.00392156862745098,
  do_normalize: true,
  image_mean: [0.5, 0.5, 0.5],
  image_std: [0.5, 0.5, 0.5],
};

describe.each(BUILDS)('$build build', ({ build, threads }) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await engineFor(build, threads);
  });
  afterAll(() => engine.dispose());

  it.each(VISION_GOLDENS.map((g) => [g.name, g] as const))(
    '%s: every map, the hidden state, the token norms and the heads match torchvision within 1e-4',
    async (_, g) => {
      const model = await engine.loadModel({ files: visionFiles(g) });
      const vision = g.config.vision_config ?? g.config;
      expect(model.info).toMatchObject({
        architecture: g.config.architectures[0],
        vision: true,
        patchSize: vision.patch_size,
        registers: g.name === 'Dinov2WithRegistersModel' ? 4 : 0,
        prefixTokens: g.name.startsWith('DeiT') ? 2 : 1,
        causal: false,
        languageModel: false,
      });
      if (g.config.id2label) expect(model.info.labels).toEqual(Object.values(g.config.id2label));
      for (const run of g.runs) {
        const r: ImageRunResult = model.run({
          pixels: { data: Float32Array.from(run.pixels.data), shape: run.pixels.shape },
        });
        expect(r.tokens).toEqual(run.tokens);
        expect(r.grid).toEqual(run.grid);
        expect(r.shape).toEqual(run.attentions.shape);
        expect(worstDifference(r.attentions, run.attentions.data)).toBeLessThanOrEqual(1e-4);
        expect(r.maps.self).toMatchObject({
          kind: 'self',
          causal: false,
          queryTokens: run.tokens,
          keyTokens: run.tokens,
        });
        expect(worstDifference(r.hidden.data, run.hidden.data)).toBeLessThanOrEqual(1e-4);
        expect(r.tokenNorms.shape).toEqual(run.token_norms.shape);
        expect(worstDifference(r.tokenNorms.data, run.token_norms.data)).toBeLessThanOrEqual(1e-4);
        expect(r.special).toEqual(run.tokens.map((t) => !t.startsWith('patch')));
        if (run.pooled) expect(worstDifference(r.pooled!, run.pooled.data)).toBeLessThanOrEqual(1e-4);
        else expect(r.pooled).toBeUndefined();
        if (run.image_embeds)
          expect(worstDifference(r.imageEmbedding!, run.image_embeds.data)).toBeLessThanOrEqual(1e-4);
        if (run.logits) {
          expect(worstDifference(r.logits!, run.logits.data)).toBeLessThanOrEqual(1e-4);
          const best = run.logits.data.indexOf(Math.max(...run.logits.data));
          expect(r.labels[0]).toMatchObject({ id: best, label: model.info.labels![best] });
        } else expect(r.labels).toEqual([]);
        // Rollout and the head summaries read patch tokens as any self-attention.
        expect(engine.rollout(r.maps.self).shape).toEqual([r.shape[0], r.tokens.length, r.tokens.length]);
      }
      model.dispose();
    },
  );

  it("copies a long run's maps out while it runs: the maps a run writes into the caller's array", async () => {
    // 476² at patch 14: 1,157 tokens, each head's map more than one piece (2^20 values) of the copy, which runs beside
    // the next layers' loops with two threads.
    const model = await engine.loadModel({ files: dinov2Files() });
    const pixels = {
      data: Float32Array.from({ length: 3 * 476 * 476 }, (_, i) => Math.sin(i * 0.37)),
      shape: [3, 476, 476],
    };
    const fresh = model.run({ pixels });
    expect(fresh.shape).toEqual([3, 6, 1157, 1157]);
    const room = new Float32Array(fresh.attentions.length).fill(NaN);
    expect(model.run({ pixels }, { into: { attentions: room } }).attentions === room).toBe(true);
    expect(worstDifference(fresh.attentions, room)).toBe(0);
    const again = model.run({ pixels });
    expect(again.attentions === fresh.attentions).toBe(false);
    expect(worstDifference(again.attentions, room)).toBe(0);
    model.dispose();
  });

  it('preprocesses an image exactly as Pillow and the image processor do, at odd sizes, grey and with alpha', async () => {
    const cases = [
      { name: 'Dinov2WithRegistersModel', preprocess: DINOV2_PREPROCESSOR },
      { name: 'CLIPModel', preprocess: CLIP_PREPROCESSOR },
      { name: 'ViTForImageClassification', preprocess: VIT_PREPROCESSOR },
    ];
    const images = [
      [97, 131, 'noise', 1],
      [131, 97, 'gradient', 0],
      [37, 23, 'alpha', 5],
      [13, 11, 'grey', 2],
      [1, 1, 'noise', 3],
      [640, 427, 'checker', 4],
    ] as const;
    const jobs = cases.flatMap((c) =>
      images.map(([width, height, pattern, seed]) => ({ width, height, pattern, seed, preprocess: c.preprocess })),
    );
    const want = pillowPixels(jobs);
    let job = 0;
    for (const c of cases) {
      const model = await engine.loadModel({ files: visionFiles(golden(c.name), c.preprocess) });
      let room: Float32Array | undefined;
      for (const [width, height, pattern, seed] of images) {
        const image = testImage(width, height, pattern, seed);
        const r = model.run({ image });
        expect(r.pixels.data.length).toBe(want[job].length);
        // The same bytes after resizing, then float32 steps: within a float32 rounding of Pillow + NumPy.
        expect(worstDifference(r.pixels.data, want[job])).toBeLessThanOrEqual(1e-5);
        // The pixels as the model's input give the same run, into one array reused from image to image.
        room ??= new Float32Array(r.attentions.length + 5).fill(NaN);
        const again = model.run({ pixels: r.pixels }, { into: { attentions: room } });
        expect(again.attentions.buffer).toBe(room.buffer);
        expect(again.attentions).toEqual(r.attentions);
        job++;
      }
      model.dispose();
    }
  });

  it("loads a CLIP checkpoint that keeps its int64 position_ids, as openai's files do", async () => {
    const g = golden('CLIPModel');
    const ids = (n: number) => ({
      data: BigInt64Array.from({ length: n }, (_, i) => BigInt(i)),
      shape: [1, n],
      dtype: 'I64' as const,
    });
    const model = await engine.loadModel({
      files: visionFiles(g, undefined, {
        'vision_model.embeddings.position_ids': ids(10),
        'text_model.embeddings.position_ids': ids(77),
      }),
    });
    const run = g.runs[0];
    const r = model.run({ pixels: { data: Float32Array.from(run.pixels.data), shape: run.pixels.shape } });
    expect(worstDifference(r.attentions, run.attentions.data)).toBeLessThanOrEqual(1e-4);
    model.dispose();
  });

  it('refuses bad images with errors that name them, and stays usable', async () => {
    const model = await engine.loadModel({ files: visionFiles(golden('ViTForImageClassification'), VIT_PREPROCESSOR) });
    const small = testImage(5, 7, 'noise', 1);
    expect(() => model.run({ image: { data: new Uint8ClampedArray(0), width: 10_000, height: 10_000 } })).toThrowError(
      /10000 × 10000, more than the 50 megapixels an image may have; scale it down first/,
    );
    expect(() => model.run({ image: { ...small, width: 6 } })).toThrowError(/140 bytes, not width × height × 4 = 168/);
    expect(() => model.run({ image: { ...small, width: 0 } })).toThrowError(/image.width must be a whole number/);
    expect(() => model.run({ image: { width: 3, height: 3, close() {} } })).toThrowError(/needs OffscreenCanvas/);
    expect(() => model.run({ pixels: { data: new Float32Array(12), shape: [3, 2, 2] } })).toThrowError(
      /pixels must be \[3, H, W\] with H and W at least the patch size 8/,
    );
    expect(() => model.run('a text')).toThrowError(/is a vision model: run it on an image/);
    expect(() => model.run({ image: small }, { topK: 3 })).toThrowError(/topK/);
    // Still usable, and a text model says what an image needs.
    expect(model.run({ image: small }).grid).toEqual([4, 4]);
    const text = await engine.loadModel({ files: seq2seqFiles(SEQ2SEQ_GOLDENS[0]) });
    expect(() => text.run({ image: small })).toThrowError(/is not a vision model; an image needs one such as ViT/);
    text.dispose();
    model.dispose();
  });
});
