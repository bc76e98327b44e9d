// What the language-model browser checks (llm*.mjs) share: reading the page's state and its next-token bars,
// setting its inputs as a person would, waiting for it to settle, loading a model from the routed Hub, and
// acting at a generated token's arrival (Stop, typing, another load), so that a check never races a
// generation that a small model finishes in a blink.
import { assert } from './harness.mjs';

export const TEXT = 'the cat sat on the mat. the cat sat on the';

export const state = (page, pick) => page.evaluate(pick);

export function softmax(row, t = 1) {
  const max = Math.max(...row);
  const e = row.map((x) => Math.exp((x - max) / t));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

/** The bars as the page shows them: [{ id, p }] best first. */
export const bars = (page) =>
  page.$$eval('#candidates button[data-id]', (bs) =>
    bs.map((b) => ({ id: Number(b.dataset.id), p: Number(b.dataset.p) })),
  );

/** The best `k` of a distribution, best first, ties in id order (as the page and the engine rank them). */
export const top = (p, k) =>
  p
    .map((x, id) => ({ id, p: x }))
    .filter((x) => x.p > 0)
    .sort((a, b) => b.p - a.p || a.id - b.id)
    .slice(0, k);

export function same(shown, want, what) {
  assert(shown.length === want.length, `${what}: ${shown.length} bars, expected ${want.length}`);
  const worst = Math.max(...shown.map((b, k) => Math.abs(b.p - want[k].p)));
  assert(
    shown.every((b, k) => b.id === want[k].id),
    `${what}: ids ${shown.map((b) => b.id)} vs ${want.map((b) => b.id)}`,
  );
  assert(worst < 1e-6, `${what}: probabilities differ by ${worst}`);
}

/** Waits for the bars of `position` (default: the last) of the shown run, sampled as the page is set. */
export async function barsAt(page, position) {
  await page.waitForFunction(
    (at) => {
      const s = window.__attnscope.state();
      const list = document.getElementById('candidates');
      const want = at ?? s.result.tokens.length - 1;
      return s.result.run >= 0 && list.dataset.run === String(s.result.run) && list.dataset.position === String(want);
    },
    position,
    { timeout: 20_000 },
  );
  return bars(page);
}

/** Sets an input's value as a person would (range, number), and lets the page see it. */
export async function set(page, id, value) {
  await page.fill(`#${id}`, String(value));
  await page.dispatchEvent(`#${id}`, 'change');
}

/** The run the page shows when it is settled: a run of the text (or its ids), no generation going. */
export const settled = (page) =>
  page.waitForFunction(
    () => {
      const s = window.__attnscope.state();
      return !s.generation && s.result?.run >= 0 && s.result.origin === 'text';
    },
    null,
    { timeout: 30_000 },
  );

/** Goes back to the embedded default model, and waits for its run. */
export async function loadDefault(page) {
  await page.click('#load-default');
  await page.waitForFunction(
    () => document.getElementById('model-name').dataset.architecture === 'UniversalSentenceEncoderLite',
    null,
    { timeout: 30_000 },
  );
  await settled(page);
}

/** Loads a Hub model by id, as typed into the picker; waits for its architecture when given. */
export async function load(page, id, architecture) {
  await page.fill('#hub-id', id);
  await page.click('#load-hub');
  await page.waitForFunction(() => document.getElementById('load-status').dataset.state !== 'loading', null, {
    timeout: 30_000,
  });
  if (architecture)
    await page.waitForFunction((a) => document.getElementById('model-name').dataset.architecture === a, architecture);
}

/**
 * Records, at every change of the map's tokens, what the page shows: origin, count, ids and the text (the box's,
 * and what a generation has streamed under it) (window.__shown), and the last grown maps, as square
 * [layers, heads, n, n] maps made from the run's blocks and the rows grown since (window.__grown).
 */
export const record = (page) =>
  page.evaluate(() => {
    window.__shown = [];
    // One recorder at a time: each one copies every map at every change, which on a later long text (1,700 tokens)
    // takes seconds, and a recorder left from an earlier check would double what this one records.
    window.__recorder?.disconnect();
    window.__recorder = new MutationObserver(() => {
      const r = window.__attnscope.state().result;
      const streaming = !document.getElementById('continuation').hidden;
      const streamed = streaming ? document.getElementById('continuation-text').textContent : '';
      const text = document.getElementById('text').value + streamed;
      window.__shown.push({ origin: r.origin, n: r.tokens.length, ids: r.ids, text });
      if (r.origin !== 'generation') return;
      const [held, heads, n] = r.shape;
      const base = n - r.grown.length;
      const square = new Float32Array(held * heads * n * n);
      for (let m = 0; m < held * heads; m++)
        for (let i = 0; i < n; i++) {
          const row =
            i < base
              ? r.attentions.subarray((m * base + i) * base, (m * base + i + 1) * base)
              : r.grown[i - base].subarray(m * (i + 1), (m + 1) * (i + 1));
          square.set(row, (m * n + i) * n);
        }
      window.__grown = { ids: r.ids, shape: r.shape, attentions: Array.from(square) };
    });
    window.__recorder.observe(document.getElementById('map'), { attributeFilter: ['data-tokens'] });
  });

/**
 * Once the map shows `tokens` generated tokens, does what a person would at that moment: clicks Stop
 * ('stop'), starts typing at the end of the text ('type': a key goes down in the box, which keeps the generation
 * so far, then " and" is typed), or loads the Hub id already typed in ('load'). window.__acted holds the number of
 * maps recorded (record) before the action; window.__actedText the box's text once the key went down.
 */
export const at = (page, tokens, action) =>
  page.evaluate(
    ([tokens, action]) => {
      window.__acted = undefined;
      const observer = new MutationObserver(() => {
        const g = window.__attnscope.state().generation;
        if (!g || g.tokens < tokens) return;
        observer.disconnect();
        window.__acted = window.__shown?.length ?? 0;
        if (action === 'stop') document.getElementById('stop').click();
        if (action === 'load') document.getElementById('load-hub').click();
        if (action === 'type') {
          const box = document.getElementById('text');
          box.focus();
          box.dispatchEvent(new KeyboardEvent('keydown', { key: ' ', bubbles: true }));
          window.__actedText = box.value;
          box.value += ' and';
          box.dispatchEvent(new Event('input'));
        }
      });
      observer.observe(document.getElementById('map'), { attributeFilter: ['data-tokens'] });
    },
    [tokens, action],
  );
