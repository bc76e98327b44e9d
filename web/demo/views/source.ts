// The side panel's text and which attention, and what they say back: the model, the run's size and
// time, what it reused of the previous run and why it was cut short, and the engine's build.
import type { Mode, RunResult } from '../protocol.js';
import type { State } from '../state.js';
import { $, type Page, type View } from './view.js';

export function sourceView(page: Page): View {
  const text = $<HTMLTextAreaElement>('text');
  text.addEventListener('input', () => page.store.select({ text: text.value, ids: null }));
  for (const radio of document.querySelectorAll<HTMLInputElement>('input[name=mode]'))
    radio.addEventListener('change', () => page.store.select({ mode: radio.value as Mode }));
  $('shuffle').addEventListener('click', () => {
    const words = text.value.split(/\s+/).filter(Boolean);
    for (let i = words.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [words[i], words[j]] = [words[j], words[i]];
    }
    page.store.select({ text: words.join(' ') });
  });

  return {
    id: 'source',
    render(s) {
      const shown = s.text + (s.generation?.text ?? '');
      if (text.value !== shown) text.value = shown;
      for (const radio of document.querySelectorAll<HTMLInputElement>('input[name=mode]'))
        radio.checked = radio.value === s.mode;
      const name = $('model-name');
      if (s.model) {
        const m = s.model;
        const title = m.name === m.architecture ? m.name : `${m.name} (${m.architecture})`;
        name.textContent = `${title}: ${m.layers} layers × ${m.heads} heads, up to ${m.maxTokens} tokens`;
        name.dataset.architecture = m.architecture;
      }
      const status = $('status');
      const r = s.result;
      status.dataset.state = s.runError ? 'error' : 'ok';
      status.textContent = s.runError ? `Error: ${s.runError}` : r ? latency(s, r) : '';
      const e = s.engine;
      if (!e) return;
      const info = $('engine-info');
      info.textContent =
        `attnscope ${e.version} · ${e.build} build · ${e.threads} thread${e.threads > 1 ? 's' : ''}` +
        (e.simd ? ' · SIMD128' : '') +
        (e.relaxedSimd ? ' with relaxed SIMD (fused multiply-add)' : '') +
        (e.isolated ? '' : ' · this page is not cross-origin isolated, so it runs single-threaded');
      info.dataset.build = e.build;
    },
  };
}

/** The run's line: its size and time, what it reused of the previous run, and why it was cut short. */
function latency(s: Readonly<State>, r: RunResult): string {
  const n = r.tokens.length;
  const parts = [`${n} tokens`];
  if (s.generation) parts.push(`generating: ${s.generation.tokens} new so far, each a row per head (KV cache)`);
  else if (r.origin === 'induction') parts.push(`the induction test's sequence, not your text`);
  else {
    parts.push(`${r.ms.toFixed(1)} ms`);
    const reused = r.reusedTokens;
    const kept = r.mapLayers.length < r.layers ? 'keys, values and queries' : 'keys, values and map rows';
    if (reused !== undefined)
      parts.push(
        reused === n
          ? `reused all ${n} tokens' ${kept} (nothing new to compute)`
          : reused
            ? `reused the first ${reused} tokens' ${kept}; computed ${n - reused}`
            : `computed all ${n} (nothing to reuse)`,
      );
    const g = s.generated;
    if (g && s.ids) parts.push(`${g.ids.length - g.promptTokens} generated (seed ${g.seed}, ${g.stopReason})`);
  }
  if (r.mapLayers.length < r.layers) {
    const gib = (4 * r.layers * r.shape[1] * n * n) / 2 ** 30;
    parts.push(
      `layer ${r.mapLayers.map((l) => l + 1).join(', ')}'s maps: every layer's maps of ${n} tokens would take ` +
        `${gib.toFixed(1)} GiB, so the page computes the layer you choose (from the kept queries and keys)`,
    );
  }
  if (r.truncated) {
    const why = r.limit?.why;
    const heads = r.shape[1];
    parts.push(
      why === 'memory'
        ? `truncated: the page holds a layer's maps for at most ${n} of ${r.totalTokens} tokens (${heads} heads)`
        : why === 'page'
          ? `truncated: the page runs at most ${n} of ${r.totalTokens} tokens`
          : `truncated: the model reads at most ${n} of ${r.totalTokens} tokens`,
    );
  }
  return parts.join(' · ');
}
