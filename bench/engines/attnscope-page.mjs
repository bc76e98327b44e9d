// AttnScope in Debian's headless Chromium, as the page runs it, as a benchmark engine on a GGUF file the work names
// (section 14's page rows):
//   node bench/engines/attnscope-page.mjs <threads> <dir>
// The package's browser build (dist/browser.js, relaxed SIMD, with threads where asked) in a module Worker of a
// cross-origin isolated page, as the demo's worker runs it; the file given to it as the disk-backed File of an
// <input type=file>, as a person drops one. The work and its timing are Node's (bench/engines/attnscope.mjs): a
// prefill with the last layer's maps and the top 5 after every position, timed around the run inside the worker; a
// greedy decode after a context, the median of its steps. Its sample is Node's, so the agreement check holds the
// page to the Node engine's numbers.
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launch, serve } from '../../tests/e2e/harness.mjs';
import { llmIds, serveEngine } from '../workloads.mjs';

const threads = Number(process.argv[2]);
const root = fileURLToPath(new URL('../..', import.meta.url));

const WORKER = `
import { createEngine } from './dist/browser.js';
let engine = null;
let model = null;
const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
const ops = {
  async load({ threads, file }) {
    model?.dispose();
    model = null;
    engine ??= await createEngine({ threads, build: threads > 1 ? 'relaxed-simd-threads' : 'relaxed-simd' });
    model = await engine.loadModel({ files: { [file.name]: file } });
    return { build: engine.info().build, threads: engine.info().threads, layers: model.info.layers };
  },
  prefill({ ids }) {
    const n = ids.length;
    const start = performance.now();
    const r = model.run(ids, { topK: 5, reusePrefix: false, mapLayers: [model.info.layers - 1] });
    const ms = performance.now() - start;
    const [layers, heads] = r.shape;
    const head0 = r.attentions.subarray((layers - 1) * heads * n * n);
    const top = r.predictions.probs.subarray((n - 1) * 5, n * 5);
    return { ms, sample: [...head0.subarray((n - 3) * n, n * n), ...top] };
  },
  async decode({ ids, tokens }) {
    const stamps = [];
    const r = await model.generate(ids, { maxNewTokens: tokens + 1, temperature: 0, attentions: false,
      stopAtEos: false, onToken: () => stamps.push(performance.now()) });
    const steps = stamps.slice(1).map((t, i) => t - stamps[i]);
    return { ms: median(steps), sample: Array.from(r.ids.slice(ids.length)) };
  },
};
onmessage = async ({ data }) => {
  try {
    postMessage(await ops[data.op](data));
  } catch (e) {
    postMessage({ error: String(e?.stack ?? e) });
  }
};
`;

const PAGE = `<!doctype html><title>AttnScope</title><input type="file" id="file">
<script type="module">
const worker = new Worker('./worker.js', { type: 'module' });
window.ask = (message) =>
  new Promise((resolve) => {
    worker.onmessage = ({ data }) => resolve(data);
    worker.postMessage(message.op === 'load' ? { ...message, file: document.getElementById('file').files[0] } : message);
  });
</script>`;

const dir = mkdtempSync(join(tmpdir(), 'attnscope-page-'));
symlinkSync(join(root, 'dist'), join(dir, 'dist'));
writeFileSync(join(dir, 'index.html'), PAGE);
writeFileSync(join(dir, 'worker.js'), WORKER);
const server = await serve(true, dir);
const browser = await launch();
const page = await browser.newPage();
page.on('pageerror', (e) => process.stderr.write(`AttnScope page: ${e}\n`));
await page.goto(`http://127.0.0.1:${server.address().port}/`);
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

async function ask(message) {
  const reply = await page.evaluate((m) => window.ask(m), message);
  if (reply.error) throw new Error(`AttnScope page, ${message.op}: ${reply.error}`);
  return reply;
}

/** The file loaded last: one at a time (a 1B model is 1.3 GB in Q8_0). */
let loaded = null;
async function load(file) {
  if (loaded === file) return;
  loaded = null;
  await page.setInputFiles('#file', file);
  const got = await ask({ op: 'load', threads });
  const want = threads > 1 ? 'relaxed-simd-threads' : 'relaxed-simd';
  if (got.build !== want || got.threads !== threads)
    throw new Error(`the page runs ${got.build} on ${got.threads} thread(s), asked for ${want} on ${threads}`);
  loaded = file;
}

// Chromium goes with this process (Playwright closes the browsers it launched when its process exits).
serveEngine(async ({ work, n, context, tokens, file }) => {
  await load(file);
  if (work === 'gguf-prefill') {
    const ids = llmIds(n);
    return () => ask({ op: 'prefill', ids });
  } else if (work === 'gguf-decode') {
    const ids = llmIds(context);
    return () => ask({ op: 'decode', ids, tokens });
  } else throw new Error(`the page engine has no ${work} workload (${basename(file ?? '')})`);
});
