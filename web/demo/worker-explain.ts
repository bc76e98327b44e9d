// The Why pane's questions, answered by the engine on the run the worker kept: one score of a map taken apart by its
// sources (model.explainScore), or one next-token logit (model.explainLogit). The run kept is the model's own result,
// so the explanation reads the input, mask and ablated heads it ran with.
import type { Reply, Request } from './protocol.js';
import type { Kept, Session } from './worker-analysis.js';
import { labelsOf } from './worker-llm.js';

export function explain(request: Request<'explain'>, kept: Kept, s: Session): Reply<'explain'> {
  const { id, kind: _, ...ask } = request;
  const model = s.model;
  if (!model || kept.mode !== 'model' || !kept.result)
    throw new Error(
      kept.mode === 'model'
        ? 'Why takes apart a run of the loaded model: run the text again'
        : `Why takes apart a model's own scores; the ${kept.mode === 'two-texts' ? 'two-texts' : 'parameter-free'} mode's maps are not a model's run`,
    );
  const start = performance.now();
  if (ask.what === 'score') {
    const { set, layer, head, query, key } = ask;
    const e = model.explainScore(kept.result, { set, layer, head, query, key });
    return { id, kind: 'explain', explained: { what: 'score', ask, ms: performance.now() - start, ...e } };
  }
  const { position, token } = ask;
  const e = model.explainLogit(kept.result as Parameters<typeof model.explainLogit>[0], { position, token });
  const text = labelsOf(model, Int32Array.of(ask.token))[0] ?? `#${ask.token}`;
  return { id, kind: 'explain', explained: { what: 'logit', ask, ms: performance.now() - start, text, ...e } };
}
