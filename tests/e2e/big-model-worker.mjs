// In a browser Web Worker: the package's browser entry, straight from dist/, loads a
// random checkpoint of bert-base-uncased's size (109.5M parameters) and runs 128 tokens.
import { createEngine } from '../../dist/browser.js';
import { bertCheckpoint } from '../checkpoints.mjs';

try {
  const { params, files } = bertCheckpoint();
  const engine = await createEngine();
  const model = await engine.loadModel({ files });
  const r = model.run(Array.from({ length: 128 }, (_, i) => 1000 + i));
  postMessage({
    params,
    build: engine.info().build,
    shape: r.shape,
    finite: r.attentions.every(Number.isFinite),
    heapMiB: Math.round(engine.memory().heapBytes / 2 ** 20),
  });
  engine.dispose();
} catch (err) {
  postMessage({ error: String(err) });
}
