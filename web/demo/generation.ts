// Generation as the page sees it: the Generate button asks the worker to continue the shown run; each token
// arrives with its row of every map, and the maps grow by that row (the KV cache: nothing is run again). When it
// ends (its length, an end-of-text token, or Stop, which keeps what the page shows at the click) the page runs the final token ids once more, reusing the
// prompt's keys and values, for everything a run gives (the heads' measures, the logit lens). Typing or loading
// a model cancels it: its later tokens no longer count (channel.ts), so none of them is ever shown.
import type { RunResult, TokenMessage } from './protocol.js';
import type { Page } from './views/view.js';

/** The run's maps with one more token: every map's rows as they were, and the token's new row at the bottom. */
export function grow(r: RunResult, t: TokenMessage): RunResult {
  const [layers, heads, n] = r.shape;
  const m = n + 1;
  const attentions = new Float32Array(layers * heads * m * m);
  for (let map = 0; map < layers * heads; map++) {
    for (let i = 0; i < n; i++)
      attentions.set(r.attentions.subarray((map * n + i) * n, (map * n + i + 1) * n), (map * m + i) * m);
    attentions.set(t.rows.subarray(map * m, (map + 1) * m), (map * m + n) * m);
  }
  return {
    ...r,
    run: -1, // the worker keeps no run of these maps: analyses wait for the run that follows
    tokens: [...r.tokens, t.token],
    pieces: [...r.pieces, t.piece],
    special: [...r.special, t.special],
    ids: [...r.ids, t.tokenId],
    attentions,
    shape: [layers, heads, m, m],
    totalTokens: m,
    truncated: false,
    limit: undefined,
    reusedTokens: undefined,
    logitLens: undefined,
    origin: 'generation',
  };
}

/** Starts generating after the shown run, with the page's sampling, seed and length. */
export function startGeneration(page: Page): void {
  const s = page.store.get();
  const r = s.result;
  if (!r || r.run < 0 || s.generation || r.origin === 'induction') return;
  const request = page.ask({ kind: 'generate', run: r.run, maxNewTokens: s.maxNewTokens, seed: s.seed, ...s.sampling });
  const errors = { ...s.errors };
  delete errors.generate;
  page.store.put({ generation: { request, prompt: s.text, text: '', tokens: 0 }, generated: null, errors });
}

/** What the channel's handlers do with generation's messages. */
export function generationHandlers(page: Page) {
  const { store } = page;
  return {
    token(t: TokenMessage) {
      const s = store.get();
      const g = s.generation;
      if (!g || t.id !== g.request || !s.result || t.position !== s.result.shape[2]) return;
      store.put({ result: grow(s.result, t), generation: { ...g, text: t.text, tokens: g.tokens + 1 } });
    },
    finish(reply: { id: number; ids: number[]; promptTokens: number; stopReason: string; seed: number }) {
      const s = store.get();
      if (s.generation?.request !== reply.id) return;
      const { ids, promptTokens, stopReason, seed } = reply;
      // The final ids run once more (the prompt's part reused); its reply brings their text.
      store.put({ generated: { ids, promptTokens, seed, sampling: s.sampling, stopReason }, generation: null });
      store.select({ text: s.text + s.generation.text, ids });
    },
    /** Stop: the page keeps what it shows (its grown maps' ids and the text so far), and runs those ids. */
    stopped() {
      const s = store.get();
      const g = s.generation;
      if (!g || !s.result) return;
      const ids = s.result.ids;
      const generated = {
        ids,
        promptTokens: ids.length - g.tokens,
        seed: s.seed,
        sampling: s.sampling,
        stopReason: 'stop',
      };
      store.put({ generated, generation: null });
      store.select({ text: g.prompt + g.text, ids });
    },
    failed(message: string) {
      store.put({ generation: null, errors: { ...store.get().errors, generate: message } });
    },
  };
}
