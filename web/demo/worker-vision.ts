// Vision transformers in the worker (ViT, DeiT, DINOv2 with or without registers, CLIP's vision tower): the page's
// image runs through the model as its preprocessor_config.json says, and the run comes back with what the image pane
// draws beside the maps: the patch grid, the model's input as a picture (de-normalized), each token's norm per layer
// and rollout through every layer. A second model can run beside the first on the same image (the side-by-side).
import type { ImageNormalization, ImageRunResult, Model } from 'attnscope';

import type { BesideRun, Reply, Request, VisionRun } from './protocol.js';
import type { Kept, Session } from './worker-analysis.js';

/**
 * The model's input [3, H, W] as the RGBA picture it was made from (within rounding), with the normalization the
 * engine applied undone: p = (v · std + mean) / rescale.
 */
function pictureOf(pixels: ImageRunResult['pixels'], norm: ImageNormalization): VisionRun['picture'] {
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

/** What the image pane needs of a run beside its maps (a run with rollout, visionOptions). */
export function visionOf(model: Model, r: ImageRunResult, image: number): VisionRun {
  const norm = model.info.imageNormalization!;
  return {
    image,
    grid: r.grid,
    prefix: model.info.prefixTokens ?? 1,
    registers: model.info.registers ?? 0,
    patchSize: model.info.patchSize ?? 16,
    picture: pictureOf(r.pixels, norm),
    normalization: norm.fromFile
      ? 'preprocessor_config.json'
      : `${norm.processor}'s defaults (the model has no preprocessor_config.json)`,
    tokenNorms: r.tokenNorms.data.slice(),
    rollout: r.maps.self.rollout!.data,
    labels: r.labels,
  };
}

/** What a vision model's run computes for the image pane beside the maps: rollout through every layer (Abnar & Zuidema, 2020), with the residual unless the page shows it without. */
export const visionOptions = (residual = true) => ({ rollout: { residual } });

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
    if (next.info.input !== 'image') {
      next.dispose();
      throw new Error(`${next.info.name} is not a vision model: beside an image, choose ViT, DeiT, DINOv2 or CLIP`);
    }
    s.beside?.dispose();
    s.beside = next;
  }
  if (!s.beside) throw new Error('load a second vision model first');
  const model = s.beside;
  const bitmap = s.images.get(image);
  if (!bitmap) throw new Error('the image has changed since; choose it again');
  const r = model.run({ image: bitmap }, visionOptions());
  const run: BesideRun = {
    model: model.info.name,
    architecture: model.info.architecture,
    tokens: r.tokens,
    attentions: r.attentions,
    shape: r.shape,
    vision: visionOf(model, r, image),
  };
  return { id, kind: 'beside', ...run };
}

/** The selected head switched off (zeroed before W_O), the image run again: how far each token's last state moves. */
export function ablateImage(request: Request<'ablate'>, kept: Kept, s: Session): Reply<'ablate'> {
  const model = s.model;
  if (model?.info.input !== 'image' || !kept.bitmap || !kept.hidden)
    throw new Error('Head ablation: run the image again');
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
