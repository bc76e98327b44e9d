// 9. The page under load, in Chromium (`npm run bench -- page`): Chromium's Long Tasks API while a person types at
// the end of a 2,048-token text, generates, and zooms and pans the map, on a SmolLM2-135M-shaped decoder
// (30 layers × 9 heads, random BF16 weights and a byte-level BPE tokenizer of its 49,152 tokens) and a small one
// (4 layers × 4 heads), each loaded through Files… as a person would; and generation's tokens per second in the
// page beside the same model generating in Node on the same thread count, at the same context lengths (Node
// before and after the page, their mean against the page's: a machine's speed drifts over minutes, and the two
// runs bracket the page's). Then a 2B model from a GGUF file, Gemma-2-2B's shape in llama.cpp's Q4_K_M (26 layers ×
// 8 heads, a 256,000-token vocabulary; random blocks, a byte-level BPE in the file's tokenizer keys), dropped the
// same way: typing at the end of a text just under 256 tokens, panning, and generating 32 tokens (a 2B prefill of
// 2,000 tokens takes minutes). The targets: no task over 100 ms in any scenario, and the page within 1.3× of Node's
// tokens per second at every context length (the small models).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { launch, serve } from '../tests/e2e/harness.mjs';
import { decoderCheckpoint, realShapeCheckpoint } from '../tests/llm/checkpoints.mjs';
import { T } from '../tests/llm/gguf.mjs';
import { q4KM, realShapeGguf } from '../tests/llm/real-gguf.mjs';
import { target } from './harness.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
/** Context windows (tokens in the sequence) in which tokens per second are compared. */
export const WINDOWS = [
  [0, 256],
  [256, 512],
  [512, 1024],
  [1024, 1536],
  [1536, 2048],
];
const LONG_TASK = 100;
/**
 * How often the bench asks the page whether it is done (ms). Not at every animation frame, Playwright's default:
 * that would make the page render about 60 frames a second, which a person's page does not, and which takes a
 * core's time from the engine (about 7 ms a frame on the SmolLM2-shaped model at 2,000 tokens).
 */
const POLL_MS = 100;
const PAGE_OVER_NODE = 1.3;
/**
 * ATTNSCOPE_THROTTLE=N runs the page's thread N times slower (Chromium's CPU throttling), to see which of its tasks
 * a slower machine would make long. The targets are this machine's: a throttled run is for finding them.
 */
const THROTTLE = Number(process.env.ATTNSCOPE_THROTTLE ?? 1);
const WORDS = 'the cat sat on the mat and it was warm so she went to the door for the dog'.split(' ');

/** The files with no end-of-text token in config.json: a random model's greedy text then runs to the limit. */
export function withoutEos(files) {
  const config = JSON.parse(new TextDecoder().decode(files['config.json']));
  delete config.eos_token_id;
  return { ...files, 'config.json': new TextEncoder().encode(JSON.stringify(config)) };
}

/** The two models' files. */
export function models() {
  const small = decoderCheckpoint({
    arch: 'llama',
    layers: 4,
    heads: 4,
    kvHeads: 2,
    d: 64,
    ffn: 128,
    maxPositions: 4096,
    tokenizer: true,
    seed: 7,
  });
  const smol = realShapeCheckpoint('SmolLM2-135M', { tokenizer: true });
  return [
    { name: 'SmolLM2-135M shape (30 × 9)', files: withoutEos(smol.files) },
    { name: 'small (4 × 4)', files: withoutEos(small.files) },
  ];
}

const BIG = 'Gemma-2-2B shape, Q4_K_M GGUF (26 × 8)';
/**
 * The 2B model: one GGUF file, typed just under 256 tokens and generating 32 (`tokens`, `generate`), with no
 * comparison with Node (its windows run to 2,048 tokens).
 */
function bigModel() {
  const file = realShapeGguf('Gemma-2-2B', q4KM(26), [['general.file_type', T.UINT32, 15]], { tokenizer: true });
  return {
    name: BIG,
    files: { 'gemma-2-2b-Q4_K_M.gguf': file.bytes },
    tokens: 256,
    generate: 32,
  };
}

/** A text of words, long enough for `tokens` tokens under any of the bench's tokenizers. */
const text = (words) => Array.from({ length: words }, (_, i) => WORDS[(i * 7) % WORDS.length]).join(' ');

/**
 * Tokens per second in each context window, from the times the sequence reached positions: Node hears of every
 * token, the page of a batch at a time (hundreds of tokens on a fast model). Each window is timed between the
 * arrivals that bracket it (the last at or before its start, the first at or after its end; inside ones where the
 * sequence starts or stops within it), so a batch that jumps over a window still times it, over a span a little
 * wider than the window.
 */
export function perWindow(arrivals) {
  return WINDOWS.map(([lo, hi]) => {
    const inside = arrivals.filter((a) => a.position >= lo && a.position < hi);
    const from = arrivals.filter((a) => a.position <= lo).at(-1) ?? inside[0];
    const to = arrivals.find((a) => a.position >= hi) ?? inside.at(-1);
    if (!from || !to || to.position - from.position < 16) return NaN;
    return ((to.position - from.position) * 1000) / (to.time - from.time);
  });
}

/**
 * Generation in Node: the same files, prompt and sampling, rows of every map to each token as the page has them;
 * on the engine's default threads (two here), or `threads`.
 */
export function nodeGeneration(dir, prompt, tokens, threads = 0) {
  const options = threads
    ? { threads, build: threads > 1 ? 'relaxed-simd-threads' : 'relaxed-simd' }
    : { build: 'relaxed-simd-threads' };
  const script = `
    import { readFileSync, readdirSync } from 'node:fs';
    import { createEngine } from '${join(root, 'dist/node.js')}';
    const files = {};
    for (const f of readdirSync(${JSON.stringify(dir)})) files[f] = readFileSync(${JSON.stringify(dir)} + '/' + f);
    const engine = await createEngine(${JSON.stringify(options)});
    const model = await engine.loadModel({ files });
    const arrivals = [];
    await model.generate(${JSON.stringify(prompt)}, { maxNewTokens: ${tokens}, temperature: 0, stopAtEos: false,
      attentions: 'rows', onToken: (t) => arrivals.push({ position: t.position, time: performance.now() }) });
    console.log(JSON.stringify({ arrivals, threads: engine.info().threads }));
  `;
  const out = execFileSync(
    process.execPath,
    ['--experimental-wasm-relaxed-simd', '--input-type=module', '-e', script],
    {
      maxBuffer: 1 << 26,
    },
  );
  return JSON.parse(out.toString());
}

/** Records every long task (50 ms and more) from now on: window.__long. */
const watchLongTasks = (page) =>
  page.evaluate(() => {
    window.__long = [];
    if (window.__observer) return;
    window.__observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__long.push({ start: e.startTime, duration: e.duration });
    });
    window.__observer.observe({ type: 'longtask' });
  });

/** The long tasks since watchLongTasks: the longest, total blocking time (the part of each over 50 ms), count. */
async function longTasks(page) {
  await page.evaluate(() => new Promise((r) => setTimeout(r, 200))); // the observer reports a little late
  const tasks = await page.evaluate(() => window.__long);
  return {
    longest: Math.max(0, ...tasks.map((t) => t.duration)),
    blocking: tasks.reduce((sum, t) => sum + t.duration - 50, 0),
    over: tasks.filter((t) => t.duration > LONG_TASK).length,
  };
}

/** The run the page shows now (its request id). */
const shownRun = (page) => page.evaluate(() => window.__attnscope.state().result?.run ?? -1);

/** Waits until the page shows a run of its text newer than run `after`, the last asked for, with no generation going. */
const settled = (page, after, timeout = 600_000) =>
  page.waitForFunction(
    (after) => {
      const s = window.__attnscope.state();
      return window.__attnscope.answered() && !s.generation && s.result?.run > after && s.result.origin === 'text';
    },
    after,
    { timeout, polling: POLL_MS },
  );

async function loadFiles(page, dir, files) {
  await page.setInputFiles(
    '#files',
    Object.keys(files).map((name) => join(dir, name)),
  );
  await page.waitForFunction(() => document.getElementById('load-status').textContent === 'Loaded.', null, {
    timeout: 300_000,
  });
}

/**
 * With ATTNSCOPE_PROFILE set, the main thread's CPU profile of a scenario (Chrome DevTools Protocol): the functions
 * with the most time of their own, printed when the returned function is called. For finding what a long task is.
 */
async function profiler(page) {
  if (!process.env.ATTNSCOPE_PROFILE) return null;
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  return async (what) => {
    const { profile } = await cdp.send('Profiler.stop');
    const self = new Map();
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const dt = profile.timeDeltas;
    profile.samples.forEach((id, k) => {
      const n = byId.get(id).callFrame;
      const key = `${n.functionName || '(anonymous)'} ${n.url.split('/').pop()}:${n.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + (dt[k] ?? 0) / 1000);
    });
    console.log(`  profile of ${what}, ms of own time:`);
    for (const [key, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25))
      console.log(`    ${ms.toFixed(1).padStart(8)}  ${key}`);
  };
}

/**
 * With ATTNSCOPE_TRACE set, a Chromium trace of a scenario: each main-thread task over 50 ms, with the events
 * inside it (script, style, layout, paint, GC) by their total time, printed when the returned function is called.
 */
async function tracer(browser, page) {
  if (!process.env.ATTNSCOPE_TRACE) return null;
  await browser.startTracing(page, {
    categories: [
      'devtools.timeline',
      'disabled-by-default-devtools.timeline',
      'disabled-by-default-devtools.timeline.stack',
      'v8',
      'blink',
    ],
  });
  return async (what) => {
    const raw = (await browser.stopTracing()).toString();
    // ATTNSCOPE_TRACE=<directory> keeps each trace there, for Chromium's Performance panel.
    const keep = process.env.ATTNSCOPE_TRACE;
    if (keep !== '1') {
      mkdirSync(keep, { recursive: true });
      writeFileSync(join(keep, `${what}.json`), raw);
    }
    const trace = JSON.parse(raw);
    const events = trace.traceEvents ?? trace;
    const main = events.find((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain');
    const mine = events.filter((e) => e.tid === main?.tid && e.ph === 'X');
    const totals = new Map();
    for (const e of mine) totals.set(e.name, (totals.get(e.name) ?? 0) + e.dur / 1000);
    const top = [...totals].sort((a, b) => b[1] - a[1]).slice(0, 16);
    console.log(
      `  trace of ${what}, main thread ms by event: ${top.map(([k, ms]) => `${k} ${ms.toFixed(0)}`).join(', ')}`,
    );
    // Style and layout that script forced (it read the layout after changing the page), by the function that read.
    const forced = new Map();
    for (const e of mine) {
      const stack = e.args?.beginData?.stackTrace;
      if (!['Layout', 'UpdateLayoutTree'].includes(e.name) || !stack?.length) continue;
      const at = stack.slice(0, 2).map((f) => `${f.functionName || '(anonymous)'}:${f.lineNumber + 1}`);
      const key = `${e.name} from ${at.join(' < ')}`;
      forced.set(key, (forced.get(key) ?? 0) + e.dur / 1000);
    }
    const reads = [...forced].sort((a, b) => b[1] - a[1]).slice(0, 10);
    console.log(
      `  trace of ${what}, forced style and layout: ${reads.map(([k, ms]) => `${k} ${ms.toFixed(0)}`).join(', ')}`,
    );
    const tasks = mine.filter((e) => e.name === 'RunTask' && e.dur > 50_000);
    console.log(`  trace of ${what}: ${tasks.length} tasks over 50 ms`);
    for (const task of tasks.slice(0, 8)) {
      const inside = new Map();
      for (const e of mine)
        if (e !== task && e.ts >= task.ts && e.ts + e.dur <= task.ts + task.dur) {
          const key = e.name + (e.args?.data?.functionName ? ` ${e.args.data.functionName}` : '');
          inside.set(key, (inside.get(key) ?? 0) + e.dur / 1000);
        }
      const top = [...inside].sort((a, b) => b[1] - a[1]).slice(0, 12);
      console.log(
        `    ${(task.dur / 1000).toFixed(0)} ms: ${top.map(([k, ms]) => `${k} ${ms.toFixed(1)}`).join(', ')}`,
      );
    }
  };
}

/** One model through the three scenarios; returns the rows of the report. */
async function scenarios(browser, page, model, dir) {
  const say = (what) => console.log(`  ${model.name}: ${what}`);
  await loadFiles(page, dir, model.files);
  const info = await page.evaluate(() => window.__attnscope.state().model);
  say(`loaded ${info.architecture} (${info.layers} layers × ${info.heads} heads, ${info.weights ?? ''})`);
  const rows = {};

  // Typing at the end of a 2,048-token text (or the model's `tokens`): a prompt just under the page's limit, then
  // five keystrokes 300 ms apart.
  await page.click('#tab-heads');
  const limit = await page.evaluate(() => window.__attnscope.state().limit.tokens);
  const goal = Math.min(limit, model.tokens ?? limit);
  let words = Math.round(goal / 1.7);
  for (let attempt = 0; ; attempt++) {
    if (attempt > 12) throw new Error('bench page: could not make a prompt just under the limit');
    const before = await shownRun(page);
    await page.fill('#text', text(words));
    await settled(page, before);
    const n = await page.evaluate(() => window.__attnscope.state().result.tokens.length);
    say(`${words} words: ${n} tokens`);
    if (n >= goal - 12) {
      words -= Math.ceil((n - goal + 12) / 1.5) + 2;
      continue;
    }
    if (n < goal - 24) {
      words += Math.ceil((goal - 16 - n) / 1.6);
      continue;
    }
    break;
  }
  await page.focus('#text');
  await page.keyboard.press('End');
  await watchLongTasks(page);
  let last = await shownRun(page);
  const profile = await profiler(page);
  const trace = await tracer(browser, page);
  for (const key of [' ', 'c', 'a', 't', 's']) {
    await page.keyboard.type(key);
    await page.waitForTimeout(300);
  }
  await settled(page, last);
  await profile?.('typing');
  await trace?.('typing');
  const tokens = await page.evaluate(() => window.__attnscope.state().result.tokens.length);
  rows.typing = { ...(await longTasks(page)), note: `${tokens} tokens` };
  // What the page showed after typing, to look at: build/bench/page-<model>.png
  const shot = join(root, 'build/bench', `page-${model.name.split(' ')[0]}.png`);
  mkdirSync(join(root, 'build/bench'), { recursive: true });
  await page.screenshot({ path: shot });
  say(`typed (${shot})`);

  // Zooming and panning that map: wheel in about the pointer, then drag.
  await page.click('#text'); // away from the map
  const box = await page.locator('#map').boundingBox();
  const centre = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  await watchLongTasks(page);
  const before = (await page.evaluate(() => window.__attnscope.frames())).length;
  await page.mouse.move(centre.x, centre.y);
  for (let k = 0; k < 16; k++) await page.mouse.wheel(0, -200);
  await page.mouse.down();
  for (let k = 0; k < 40; k++) await page.mouse.move(centre.x - 5 * k, centre.y - 3 * k);
  await page.mouse.up();
  for (let k = 0; k < 16; k++) await page.mouse.wheel(0, 200);
  const frames = (await page.evaluate(() => window.__attnscope.frames())).slice(before);
  rows.panning = {
    ...(await longTasks(page)),
    note: `${frames.length} frames, slowest ${Math.max(...frames).toFixed(1)} ms`,
  };
  await page.click('[data-zoom=fit]');
  say('zoomed and panned');

  // Generating from a short prompt up to the page's limit (or the model's `generate` tokens), every map growing a row
  // per token.
  const prompt = 'the cat';
  const count = model.generate ?? limit;
  last = await shownRun(page);
  await page.fill('#text', prompt);
  await settled(page, last);
  await page.click('#tab-next');
  await page.fill('#max-new', String(count));
  await page.dispatchEvent('#max-new', 'change');
  await page.$eval('#temperature', (input) => {
    input.value = '0';
    input.dispatchEvent(new Event('input'));
  });
  const promptIds = await page.evaluate(() => window.__attnscope.state().result.ids);
  const withNode = !model.generate;
  let started = Date.now();
  const node = withNode ? [nodeGeneration(dir, promptIds, limit - promptIds.length)] : [];
  if (withNode) say(`generated in Node (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  await watchLongTasks(page);
  await page.evaluate(() => {
    window.__arrivals = [];
    new MutationObserver(() => {
      const s = window.__attnscope.state();
      if (s.generation && s.result)
        window.__arrivals.push({ position: s.result.tokens.length - 1, time: performance.now() });
    }).observe(document.getElementById('continuation-text'), { childList: true, characterData: true, subtree: true });
  });
  const generationProfile = await profiler(page);
  const generationTrace = await tracer(browser, page);
  await page.$eval('#generate', (b) => b.click());
  const progress = setInterval(async () => {
    const g = await page
      .evaluate(() => {
        const s = window.__attnscope.state();
        return s.generation
          ? `${s.generation.tokens} tokens`
          : JSON.stringify({
              errors: s.errors,
              run: s.runError,
              generated: s.generated?.stopReason,
              n: s.result?.tokens.length,
              origin: s.result?.origin,
              ids: s.ids?.length,
              text: s.text.length,
            });
      })
      .catch((e) => String(e));
    say(`generating in the page: ${g}`);
  }, 20_000);
  await page
    .waitForFunction(() => window.__attnscope.state().generated, null, { timeout: 900_000, polling: POLL_MS })
    .finally(() => clearInterval(progress));
  await generationProfile?.('generating');
  await generationTrace?.('generating');
  const generating = await longTasks(page);
  say('generated in the page');
  const arrivals = await page.evaluate(() => window.__arrivals);

  await settled(page, -1);
  const made = await page.evaluate(() => {
    const g = window.__attnscope.state().generated;
    return g.ids.length - g.promptTokens;
  });
  rows.generating = { ...generating, note: `${made} tokens (${arrivals.length} updates)` };
  if (!withNode) return rows;
  node.push(nodeGeneration(dir, promptIds, limit - promptIds.length));
  const inPage = perWindow(arrivals);
  const runs = node.map((x) => perWindow(x.arrivals));
  const mean = inPage.map((_, w) => (runs[0][w] + runs[1][w]) / 2);
  Object.assign(rows.generating, { inPage, inNode: mean, nodeRuns: runs, threads: node[0].threads });
  return rows;
}

/** `only`: run the models whose name contains it (`node bench/page.mjs small`). */
export async function pageBench(only = '') {
  console.log('\n9. The page: long tasks while typing, panning and generating; generation in the page against Node');
  const names = process.env.ATTNSCOPE_PROFILE ? ['--minify', 'false'] : []; // a profile names the functions
  execFileSync('npx', ['vite', 'build', '--config', 'web/demo/vite.config.ts', '--logLevel', 'warn', ...names], {
    cwd: root,
    stdio: 'inherit',
  });
  const server = await serve(true, join(root, 'web/demo/dist'));
  const browser = await launch();
  const results = [];
  try {
    const big = BIG.includes(only) ? [bigModel()] : [];
    for (const model of [...models().filter((m) => m.name.includes(only)), ...big]) {
      const dir = mkdtempSync(join(tmpdir(), 'attnscope-page-'));
      for (const [name, bytes] of Object.entries(model.files)) writeFileSync(join(dir, name), bytes);
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      if (THROTTLE > 1) {
        // The page's thread slowed down, as on a slower machine (the engine's worker keeps this machine's speed).
        const cdp = await page.context().newCDPSession(page);
        await cdp.send('Emulation.setCPUThrottlingRate', { rate: THROTTLE });
      }
      page.on('pageerror', (e) => console.log(`  page error: ${e}`));
      page.on('console', (m) => m.type() === 'error' && console.log(`  console error: ${m.text()}`));
      await page.goto(`http://127.0.0.1:${server.address().port}/`);
      await page.waitForFunction(() => window.__attnscope?.state().result, null, { timeout: 120_000 });
      try {
        results.push({ model: model.name, rows: await scenarios(browser, page, model, dir) });
      } finally {
        await page.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await browser.close();
    server.close();
  }
  console.table(
    results.flatMap(({ model, rows }) =>
      Object.entries(rows).map(([what, r]) => ({
        model,
        what,
        'longest task (ms)': r.longest.toFixed(0),
        'total blocking (ms)': r.blocking.toFixed(0),
        [`tasks > ${LONG_TASK} ms`]: r.over,
        note: r.note,
      })),
    ),
  );
  const compared = results.filter(({ rows }) => rows.generating.inPage);
  if (compared.length) {
    console.log(
      'Generation, tokens per second by context length: page / Node (the mean of its runs before and after the ' +
        "page's), and Node's two runs",
    );
    console.table(
      compared.map(({ model, rows }) => ({
        model,
        ...Object.fromEntries(
          WINDOWS.map(([lo, hi], w) => [
            `${lo}–${hi}`,
            `${rows.generating.inPage[w].toFixed(1)} / ${rows.generating.inNode[w].toFixed(1)} ` +
              `(${rows.generating.nodeRuns.map((x) => x[w].toFixed(1)).join(', ')})`,
          ]),
        ),
        threads: rows.generating.threads,
      })),
    );
  }
  console.log('\nPage targets:');
  for (const { model, rows } of results) {
    for (const [what, r] of Object.entries(rows))
      target(
        `${model}, ${what}: no task over ${LONG_TASK} ms (longest ${r.longest.toFixed(0)} ms)`,
        r.longest <= LONG_TASK,
      );
    const g = rows.generating;
    if (!g.inPage) continue;
    WINDOWS.forEach(([lo, hi], w) => {
      const ratio = g.inNode[w] / g.inPage[w];
      target(
        `${model}, generating at ${lo}–${hi} tokens: Node / page ${ratio.toFixed(2)} ≤ ${PAGE_OVER_NODE}`,
        ratio <= PAGE_OVER_NODE,
      );
    });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await pageBench(process.argv[2]);
