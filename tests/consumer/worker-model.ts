// The end of src/worker.ts, for the embedded default model: the import is the opt-in (the app then emits its 28 MB)
import 'attnscope/models/default';

const model = await engine.loadModel('default');
const run = model.run('The cat sat on the mat.'); // run.attentions: [layers, heads, tokens, tokens]
const t = run.tokens.length;
show(`default model, layer 0, head 0: ${run.tokens.join(' ')}`, run.attentions.slice(0, t * t), t);
