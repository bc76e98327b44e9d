// The engine alone in a Chromium worker against Node (`node bench/worker.mjs [small|SmolLM2] [threads]`): the page
// bench's models generating to 2,048 tokens in a module Worker of an empty page, the package's browser build
// imported as it is, nothing drawn, beside the same files generating in Node on the same thread count. It separates
// what the page costs a generation from what the browser's engine does: rounds alternate Chromium and Node, and each
// context window's ratio is the median of the rounds'. The worker writes each token's rows into new arrays (as
// Node does), then into one buffer reused from token to token (rowsInto, as the page's worker does).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launch, serve } from '../tests/e2e/harness.mjs';
import { median } from './stats.mjs';
import { WINDOWS, models, nodeGeneration, perWindow } from './page.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = 3;
const PROMPT = 'the cat';

/** The worker: loads the files, generates, and posts every token's arrival time. */
const WORKER = `
import { createEngine } from './dist/browser.js';
onmessage = async ({ data: { threads, names, prompt, tokens, reuse } }) => {
  try {
    const files = {};
    for (const n of names) files[n] = new Uint8Array(await (await fetch('./model/' + n)).arrayBuffer());
    const engine = await createEngine({ threads, build: threads > 1 ? 'relaxed-simd-threads' : 'relaxed-simd' });
    const model = await engine.loadModel({ files });
    const ids = model.tokenize(prompt).ids;
    let buffer = new Float32Array(0);
    const rowsInto = (length) => (buffer.length < length ? (buffer = new Float32Array(2 * length)) : buffer).subarray(0, length);
    const arrivals = [];
    await model.generate(ids, { maxNewTokens: tokens - ids.length, temperature: 0, stopAtEos: false,
      attentions: 'rows', ...(reuse && { rowsInto }),
      onToken: (t) => arrivals.push({ position: t.position, time: performance.now() }) });
    engine.dispose();
    postMessage({ arrivals, ids: Array.from(ids) });
  } catch (e) {
    postMessage({ error: String(e?.stack ?? e) });
  }
};`;

async function main(only = '', threadsArg = '1,2') {
  const threadCounts = threadsArg.split(',').map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'attnscope-worker-'));
  symlinkSync(join(root, 'dist'), join(dir, 'dist'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>worker</title>');
  writeFileSync(join(dir, 'worker.js'), WORKER);
  const server = await serve(true, dir);
  const browser = await launch();
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
  const inWorker = (args) =>
    page.evaluate(
      (a) =>
        new Promise((resolve) => {
          const w = new Worker('./worker.js', { type: 'module' });
          w.onmessage = (e) => (w.terminate(), resolve(e.data));
          w.onerror = (e) => (w.terminate(), resolve({ error: e.message }));
          w.postMessage(a);
        }),
      args,
    );
  try {
    console.log(
      '\nThe engine alone in a Chromium worker against Node: Node / Chromium tokens per second by context length, ' +
        `the median of ${ROUNDS} rounds (above 1: Node is faster)`,
    );
    const rows = [];
    for (const { name, files } of models().filter((m) => m.name.includes(only))) {
      const modelDir = join(dir, 'model');
      rmSync(modelDir, { recursive: true, force: true });
      mkdirSync(modelDir);
      for (const [f, bytes] of Object.entries(files)) writeFileSync(join(modelDir, f), bytes);
      const names = Object.keys(files);
      for (const threads of threadCounts) {
        const ratios = { new: [], reuse: [] };
        const speeds = { new: [], reuse: [], node: [] };
        for (let round = 0; round < ROUNDS; round++) {
          const got = {};
          for (const reuse of [false, true]) {
            const r = await inWorker({ threads, names, prompt: PROMPT, tokens: 2048, reuse });
            if (r.error) throw new Error(`${name}, worker: ${r.error}`);
            got[reuse ? 'reuse' : 'new'] = r;
          }
          const node = perWindow(nodeGeneration(modelDir, got.new.ids, 2048 - got.new.ids.length, threads).arrivals);
          speeds.node.push(node);
          for (const kind of ['new', 'reuse']) {
            const w = perWindow(got[kind].arrivals);
            speeds[kind].push(w);
            ratios[kind].push(node.map((x, i) => x / w[i]));
          }
        }
        const at = (list, i) => median(list.map((x) => x[i]));
        for (const kind of ['new', 'reuse'])
          rows.push({
            model: name,
            threads,
            'worker rows': kind === 'new' ? 'new arrays' : 'one buffer',
            ...Object.fromEntries(
              WINDOWS.map(([lo, hi], i) => [
                `${lo}–${hi}`,
                `${at(ratios[kind], i).toFixed(2)}× (${at(speeds[kind], i).toFixed(0)} / ${at(speeds.node, i).toFixed(0)})`,
              ]),
            ),
          });
      }
    }
    console.log('Each cell: Node / Chromium (Chromium tokens/s / Node tokens/s, medians)');
    console.table(rows);
  } finally {
    await browser.close();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv[2], process.argv[3]);
