// llama.cpp (node-llama-cpp's prebuilt binary) on GGUF files, as a child process: an abort
// inside llama.cpp ends this process, never the test runner. Reads a JSON list of requests on stdin,
//   [{ file, ids, greedy?: number }]  ids: the tokens to evaluate; greedy: then that many more, each
//                                     the most likely next token under llama.cpp's own logits
// and writes one answer per request, [{ logits: number[][] (the next-token logits after each
// evaluated token), generated: number[] }]. Contexts keep keys and values in F32 with flash attention
// off (F16 caches add ~1e-3).
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';

const requests = JSON.parse(
  await new Promise((resolve) => {
    let text = '';
    process.stdin.on('data', (chunk) => (text += chunk));
    process.stdin.on('end', () => resolve(text));
  }),
);
const logs = [];
const llama = await getLlama({
  gpu: false,
  build: 'never',
  skipDownload: true,
  logLevel: LlamaLogLevel.warn,
  logger: (level, message) => logs.push(`[${level}] ${message.trim()}`),
});
/** One request's answer. */
async function evaluate(request) {
  const model = await llama.loadModel({ modelPath: request.file });
  const context = await model.createContext({
    contextSize: Math.max(256, request.ids.length + (request.greedy ?? 0)),
    flashAttention: false,
    threads: 1, // on a machine with few cores two threads make a single-token step far slower than one
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
  });
  const sequence = context.getSequence();
  const next = { generateNext: { logits: true } };
  const logitsOf = (item) => {
    const row = [];
    for (const [id, logit] of item.next.logits) row[id] = logit;
    return row;
  };
  const evaluated = await sequence.controlledEvaluate(request.ids.map((id) => [id, next]));
  const logits = evaluated.map(logitsOf);
  const generated = [];
  let last = logits[logits.length - 1];
  for (let i = 0; i < (request.greedy ?? 0); i++) {
    const id = last.indexOf(Math.max(...last));
    generated.push(id);
    const [item] = await sequence.controlledEvaluate([[id, next]]);
    last = logitsOf(item);
  }
  await context.dispose();
  await model.dispose();
  return { logits, generated };
}

try {
  const answers = [];
  for (const request of requests) answers.push(await evaluate(request));
  process.stdout.write(JSON.stringify(answers));
} catch (error) {
  process.stderr.write(`llama.cpp: ${error.message}\n${logs.join('\n')}\n`);
  process.exitCode = 1;
} finally {
  await llama.dispose();
}
