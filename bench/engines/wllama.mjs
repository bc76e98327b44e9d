// wllama (npm @wllama/wllama: llama.cpp compiled to wasm64 with SIMD128, the GGUF runner people use in a tab), in
// Debian's headless Chromium, as a benchmark engine on a GGUF file the work names (section 14):
//   node bench/engines/wllama.mjs <threads> <dir>
// The page is served cross-origin isolated (threads), the file given to wllama as the disk-backed File of an
// <input type=file> (loadModel: no copy into the origin's storage, as loadModelFromUrl would make), WebGPU off, one
// sequence. wllama 3 exposes llama-server's completions only, so the times are its own (`timings`, measured inside
// the wasm): prefill is `prompt_ms` of a completion of one token (the prompt, then the first token's logits); decode
// is `predicted_per_token_ms` of a completion after the context (its prompt kept in the cache from call to call). Its
// defaults stand otherwise (flash attention on, keys and values in f16), as a page using it would run it.
// The bench's files use llama.cpp's `test` vocabulary: every 5 characters are one token, with no BOS, so a prompt of
// 5·n characters is n tokens (checked against the `prompt_n` it reports).
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { launch, serve } from '../../tests/e2e/harness.mjs';
import { serveEngine } from '../workloads.mjs';

const threads = Number(process.argv[2]);
const require = createRequire(import.meta.url);
const packageDir = dirname(require.resolve('@wllama/wllama/package.json'));

const PAGE = `<!doctype html><title>wllama</title><input type="file" id="file">
<script type="module">
import { Wllama } from './wllama/esm/index.js';
const quiet = { debug() {}, log() {}, warn: console.warn, error: console.error };
let wllama = null;
window.load = async (params) => {
  await wllama?.exit();
  wllama = new Wllama({ default: './wllama/esm/wasm/wllama.wasm' }, { logger: quiet, suppressNativeLog: true });
  await wllama.loadModel([document.getElementById('file').files[0]], params);
  return { threads: wllama.getNumThreads(), multithread: wllama.isMultithread(), isolated: crossOriginIsolated };
};
window.complete = async (options) => (await wllama.createCompletion({ temperature: 0, ...options })).timings;
</script>`;

const dir = mkdtempSync(join(tmpdir(), 'attnscope-wllama-'));
symlinkSync(packageDir, join(dir, 'wllama'));
writeFileSync(join(dir, 'index.html'), PAGE);
const server = await serve(true, dir);
const browser = await launch();
const page = await browser.newPage();
page.on('pageerror', (e) => process.stderr.write(`wllama page: ${e}\n`));
await page.goto(`http://127.0.0.1:${server.address().port}/`);
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

/** The file loaded last: one at a time, in a context long enough for the longest prefill and the decode. */
let loaded = null;
async function load(file) {
  if (loaded === file) return;
  loaded = null;
  await page.setInputFiles('#file', file);
  const got = await page.evaluate((p) => window.load(p), {
    n_ctx: 1024,
    n_batch: 512,
    n_ubatch: 512,
    n_threads: threads,
    n_gpu_layers: 0,
    n_parallel: 1,
    warmup: false,
  });
  if (got.threads !== threads || got.multithread !== threads > 1)
    throw new Error(`wllama runs ${got.threads} thread(s) (isolated: ${got.isolated}), asked for ${threads}`);
  loaded = file;
}

/** n tokens of the `test` vocabulary: 5 characters each, from `first` on (a prompt that shares no token with another). */
const promptOf = (n, first = 10000) => Array.from({ length: n }, (_, i) => String(first + i)).join('');

async function complete(options, promptTokens) {
  const t = await page.evaluate((o) => window.complete(o), options);
  if (promptTokens !== undefined && t.prompt_n !== promptTokens)
    throw new Error(`wllama read ${t.prompt_n} prompt tokens, not ${promptTokens}`);
  return t;
}

// Chromium goes with this process (Playwright closes the browsers it launched when its process exits).
serveEngine(async ({ work, n, context, tokens, file }) => {
  await load(file);
  if (work === 'gguf-prefill') {
    const options = { prompt: promptOf(n), max_tokens: 1, cache_prompt: false };
    return async () => ({ ms: (await complete(options, n)).prompt_ms, sample: null });
  } else if (work === 'gguf-decode') {
    // The context is read once (in full: no prefill's prompt begins it); each call after keeps it and decodes
    // `tokens` steps after it.
    const options = { prompt: promptOf(context, 50000), max_tokens: tokens + 1, ignore_eos: true, cache_prompt: true };
    await complete(options, context);
    return async () => {
      const t = await complete(options);
      if (t.predicted_n !== tokens + 1) throw new Error(`wllama decoded ${t.predicted_n} tokens, not ${tokens + 1}`);
      return { ms: t.predicted_per_token_ms, sample: null };
    };
  } else throw new Error(`wllama has no ${work} workload here`);
});
