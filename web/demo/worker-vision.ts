// Vision transformers in the worker (ViT, DeiT, DINOv2 with or without registers, CLIP's vision tower): the page's
// image runs through the model as its preprocessor_config.json says, and the run comes back with what the image pane
// draws beside the maps: the patch grid, the model's input as a picture (de-normalized), each token's norm per layer
// and rollout through every layer. A second model can run beside the first on the same image (the side-by-side).
import type { Engine, ImageRunResult, Model } from 'attnscope';

import type { BesideRun, Reply, Request, RunResult, Source, VisionRun } from './protocol.js';
import type { Kept, Session } from './worker-analysis.js';

/** How the model's input was normalized, to draw it as a picture again: v = (p · std + mean) / rescale. */
export interface Normalization {
  mean: number[];
  std: number[];
  /** 1/255 when the processor rescales bytes to [0, 1] first, else 1. */
  rescale: number;
  /** Where it came from, for the pane's note. */
  from: string;
}

// Hugging Face's image processors' defaults (transformers' image_utils constants), by image_processor_type.
const IMAGENET_STANDARD = { mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] };
const IMAGENET_DEFAULT = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
const OPENAI_CLIP = { mean: [0.48145466, 0.4578275, 0.40821073], std: [0.26862954, 0.26130258, 0.27577711] };
const DEFAULTS: Record<string, { mean: number[]; std: number[] }> = {
  ViTImageProcessor: IMAGENET_STANDARD,
  ViTFeatureExtractor: IMAGENET_STANDARD,
  DeiTImageProcessor: IMAGENET_DEFAULT,
  DeiTFeatureExtractor: IMAGENET_DEFAULT,
  BitImageProcessor: OPENAI_CLIP,
  CLIPImageProcessor: OPENAI_CLIP,
  CLIPFeatureExtractor: OPENAI_CLIP,
};

const triple = (v: unknown, fallback: number[]) =>
  Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'number')
    ? (v as number[])
    : typeof v === 'number'
      ? [v, v, v]
      : fallback;

/** The mean and std a preprocessor_config.json's text says (without one, ViT's rules, as the engine reads it). */
export function normalizationOf(text: string | null): Normalization {
  let config: Record<string, unknown> = {};
  try {
    config = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    // The engine refused or accepted it already; the picture falls back to ViT's defaults.
  }
  const type = typeof config.image_processor_type === 'string' ? config.image_processor_type : 'ViTImageProcessor';
  const defaults = DEFAULTS[type] ?? IMAGENET_STANDARD;
  const normalize = config.do_normalize !== false;
  const rescale =
    config.do_rescale === false ? 1 : typeof config.rescale_factor === 'number' ? config.rescale_factor : 1 / 255;
  return {
    mean: normalize ? triple(config.image_mean, defaults.mean) : [0, 0, 0],
    std: normalize ? triple(config.image_std, defaults.std) : [1, 1, 1],
    rescale,
    from: text ? 'preprocessor_config.json' : `${type}'s defaults (the model has no preprocessor_config.json)`,
  };
}

/** A vision model's preprocessor_config.json as its source has it: among the files, or from the Hub; null if none. */
export async function preprocessorText(source: Source): Promise<string | null> {
  if (source.kind === 'files') {
    const bytes = source.files['preprocessor_config.json'];
    return bytes ? new TextDecoder().decode(bytes) : null;
  }
  if (source.kind !== 'hub') return null;
  try {
    // The load fetched it a moment ago: the browser's HTTP cache has it, or it is a small download.
    const response = await fetch(`https://huggingface.co/${source.id}/resolve/main/preprocessor_config.json`);
    return response.ok ? await response.text() : null;
  } catch {
    return null;
  }
}

/** The model's input [3, H, W] as the RGBA picture it was made from (within rounding), normalization undone. */
function pictureOf(pixels: ImageRunResult['pixels'], norm: Normalization): VisionRun['picture'] {
  const [, height, width] = pixels.shape;
  const plane = width * height;
  const data = new Uint8ClampedArray(plane * 4);
  for (let c = 0; c < 3; c++) {
    const [std, mean] = [norm.std[c], norm.mean[c]];
    for (let p = 0; p < plane; p++) data[p * 4 + c] = ((pixels.data[c * plane + p] * std + mean) / norm.rescale) | 0;
  }
  for (let p = 0; p < plane; p++) data[p * 4 + 3] = 255;
  return { data, width, height };
}

/** What the image pane needs of a run beside its maps. */
function visionOf(engine: Engine, model: Model, r: ImageRunResult, image: number, norm: Normalization): VisionRun {
  const [layers, , n] = r.shape;
  // Rollout through every layer, with the residual, as Abnar & Zuidema (2020): the last layer's n × n.
  const rollout = engine.rollout(r, { residual: true }).data.slice((layers - 1) * n * n);
  return {
    image,
    grid: r.grid,
    prefix: model.info.prefixTokens ?? 1,
    registers: model.info.registers ?? 0,
    patchSize: model.info.patchSize ?? 16,
    picture: pictureOf(r.pixels, norm),
    normalization: norm.from,
    tokenNorms: r.tokenNorms.data.slice(),
    rollout,
    labels: r.labels,
  };
}

/** Runs the image the request carries; the worker keeps it (for ablation), the page gets the maps and the rest. */
export function runImage(request: Request<'run'>, s: Session): { kept: Kept; extra: Partial<RunResult> } {
  const model = s.model!;
  const bitmap = request.image === undefined ? undefined : s.images.get(request.image);
  if (!bitmap) throw new Error('choose an image: this is a vision model');
  const r = model.run({ image: bitmap }, { headSummaries: true });
  const kept: Kept = {
    mode: 'model',
    tokens: r.tokens,
    special: r.special,
    attentions: r.attentions,
    shape: r.shape,
    mapLayers: r.mapLayers,
    headSummaries: r.headSummaries,
    hidden: r.hidden,
    causal: false,
    truncated: false,
    totalTokens: r.tokens.length,
    bitmap,
  };
  return { kept, extra: { vision: visionOf(s.engine, model, r, request.image!, s.normalization!) } };
}

/** Loads the second model (when asked to) and runs the image on it. */
export async function beside(request: Request<'beside'>, s: Session): Promise<Reply<'beside'>> {
  const { id, source, image } = request;
  if (source) {
    const next =
      source.kind === 'hub'
        ? await s.engine.loadModel({ hub: source.id })
        : source.kind === 'files'
          ? await s.engine.loadModel({ files: source.files })
          : await s.engine.loadModel('default');
    if (!next.info.vision) {
      next.dispose();
      throw new Error(`${next.info.name} is not a vision model: beside an image, choose ViT, DeiT, DINOv2 or CLIP`);
    }
    s.beside?.model.dispose();
    s.beside = { model: next, normalization: normalizationOf(await preprocessorText(source)) };
  }
  if (!s.beside) throw new Error('load a second vision model first');
  const { model, normalization } = s.beside;
  const bitmap = s.images.get(image);
  if (!bitmap) throw new Error('the image has changed since; choose it again');
  const r = model.run({ image: bitmap });
  const run: BesideRun = {
    model: model.info.name,
    architecture: model.info.architecture,
    tokens: r.tokens,
    attentions: r.attentions,
    shape: r.shape,
    vision: visionOf(s.engine, model, r, image, normalization),
  };
  return { id, kind: 'beside', ...run };
}

/** The selected head switched off (zeroed before W_O), the image run again: how far each token's last state moves. */
export function ablateImage(request: Request<'ablate'>, kept: Kept, s: Session): Reply<'ablate'> {
  const model = s.model;
  if (!model?.info.vision || !kept.bitmap || !kept.hidden) throw new Error('Head ablation: run the image again');
  const b = model.run({ image: kept.bitmap }, { ablateHeads: [[request.layer, request.head]] });
  const cosines = s.engine.cosineSimilarity(kept.hidden, b.hidden);
  const mean = cosines.reduce((sum, x) => sum + x, 0) / cosines.length;
  const { id, layer, head } = request;
  return { id, kind: 'ablate', layer, head, tokens: kept.tokens, cosines, mean };
}

/** The analyses that need a text (its ids, its layers' inputs): on an image they say why not. */
export function refuseImage(what: string, why: string): never {
  throw new Error(`${what} ${why}; on an image, the map, the heads table, rollout, flow and ablation work`);
}
