// llama.cpp, native (node-llama-cpp's prebuilt CPU binary, as tests/reference installs it), as a
// benchmark engine on the GGUF twin of the LLM rows' weights (BF16), or on a GGUF file the work names
// (section 14), F32 keys and values, flash attention off: node bench/engines/llamacpp.mjs <threads> <dir>
// It is the ceiling, not a peer: it returns no attention weights, and its prefill computes the
// logits of the last token only.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { median } from '../stats.mjs';
import { llmIds, serveEngine } from '../workloads.mjs';

const [threads, dir] = [Number(process.argv[2]), process.argv[3]];
// The package lives in tests/reference (installed by .ci/setup), outside the project's dependencies.
const require = createRequire(new URL('../../tests/reference/package.json', import.meta.url));
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(require.resolve('node-llama-cpp')).href);
const llama = await getLlama({
  gpu: false,
  build: 'never',
  skipDownload: true,
  logLevel: LlamaLogLevel.error,
  logger: (level, message) => process.stderr.write(`llama.cpp [${level}] ${message}\n`), // stdout is the protocol's
});
/** The model of the file loaded last, and its context's sequence: one at a time. */
let loaded = null;
async function sequenceOf(modelPath) {
  if (loaded?.modelPath === modelPath) return loaded.sequence;
  await loaded?.model.dispose();
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({
    contextSize: 2048,
    threads,
    flashAttention: false,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
  });
  loaded = { modelPath, model, sequence: context.getSequence() };
  return loaded.sequence;
}
const greedy = { generateNext: { token: true } };

serveEngine(async ({ work, n, context: length, tokens, file }) => {
  const sequence = await sequenceOf(file ?? join(dir, 'llm', 'model.gguf'));
  if (work === 'llm-prefill' || work === 'gguf-prefill') {
    const ids = llmIds(n);
    return async () => {
      await sequence.clearHistory();
      await sequence.controlledEvaluate(ids.map((id, i) => (i === n - 1 ? [id, greedy] : id)));
      return null; // nothing to compare: no attention weights
    };
  } else if (work === 'llm-decode' || work === 'gguf-decode') {
    const ids = llmIds(length);
    return async () => {
      await sequence.clearHistory();
      let [item] = (
        await sequence.controlledEvaluate(ids.map((id, i) => (i === length - 1 ? [id, greedy] : id)))
      ).slice(-1);
      const steps = [];
      for (let i = 0; i < tokens; i++) {
        const start = performance.now();
        [item] = await sequence.controlledEvaluate([[item.next.token, greedy]]);
        steps.push(performance.now() - start);
      }
      return { ms: median(steps), sample: null };
    };
  } else throw new Error(`llama.cpp has no ${work} workload here`);
});
