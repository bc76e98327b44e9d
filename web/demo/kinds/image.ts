// An image through one stack (ViT, DeiT, DINOv2 with or without registers, CLIP's vision tower): the run reads the
// image the page decoded (sent to the worker once, named by its id), and comes back with what the image pane draws
// beside the maps: the patch grid, the model's input as a picture, each token's norm per layer and rollout. A vision
// model opens on the image pane, and a text model after one gives the head view back.
import { acrossOptions, acrossReply, type Kept } from '../worker-analysis.js';
import { visionOf, visionOptions } from '../worker-vision.js';
import type { PageKind, WorkerKind } from './kind.js';

const TEXT_TOOLS = ['next', 'lens', 'induction', 'compare', 'intervene'];

export const imagePage: PageKind = {
  id: 'image',
  input: (s) => `image ${s.image?.id ?? 'none'}`,
  // The image went to the worker when it was decoded (sendImage): the run names it. Without one, nothing runs yet
  // (the side panel draws a sample at once).
  ask: (s) => (s.image ? { text: s.text, image: s.image.id } : null),
  shown: (reply) => reply,
  // The panes that need a text (the math view, the next token, the logit lens, induction, compare, intervene) are
  // not offered: a link or the model before cannot leave one open.
  opened: (_model, _before, linked) => ({
    main: linked.main && linked.main !== 'math' ? linked.main : 'image',
    tools: linked.tools && !TEXT_TOOLS.includes(linked.tools) ? linked.tools : 'heads',
    mode: 'model',
  }),
};

export const imageWorker: WorkerKind = {
  id: 'image',
  run(request, s) {
    const model = s.model!;
    const bitmap = request.image === undefined ? undefined : s.images.get(request.image);
    if (!bitmap) throw new Error('choose an image: this is a vision model');
    // The image pane's rollout follows the residual the page shows rollout with; flow is its own.
    const across = request.across?.view === 'flow' ? acrossOptions(request.across, Infinity, model.info.layers) : {};
    const r = model.run(
      { image: bitmap },
      { headSummaries: true, ...visionOptions(request.across?.residual), ...across },
    );
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
      result: r,
    };
    const extra = {
      vision: visionOf(model, r, request.image!),
      ...acrossReply(request.across, r.maps.self, request.id),
    };
    return [{ set: 'self', kept, extra }];
  },
};
