// The next-token pane: after the token in focus (or the last), the tokens the model would pick next, as bars of
// the distribution the sampler draws from. The worker sends that position's every logit once; temperature, top-k
// and top-p re-rank here as they move (sampling.ts). Clicking a candidate adds it after that position; its "why?"
// takes its logit apart in the Why pane. Generate
// continues the text with the same sampling and the seed shown (the link keeps it); Stop ends it.
import { startGeneration } from '../generation.js';
import { best, distribution } from '../sampling.js';
import type { State } from '../state.js';
import { $, changes, focusKeeper, setProp, setText, type Page, type View } from './view.js';

const SHOWN = 10;

/** Whitespace made visible, as the chips show a token's own spelling. */
export const visible = (text: string) => text.replace(/ /g, '␣').replace(/\n/g, '⏎').replace(/\t/g, '⇥') || '∅';

interface Candidates {
  after: string;
  position: number;
  rows: Array<{ id: number; p: number; text: string }>;
  rest: number;
}

/** The bars for the state's position and sampling, when its logits have arrived. */
function candidates(s: Readonly<State>): Candidates | null {
  const r = s.result;
  const x = s.next;
  if (!r || !x || x.run !== r.run || x.position !== (s.token ?? r.tokens.length - 1)) return null;
  const p = distribution(x.logits, s.sampling);
  const rows = best(p, SHOWN).map(({ id, p }) => {
    const at = x.top.indexOf(id);
    return { id, p, text: at >= 0 ? x.text[at] : `#${id}` };
  });
  const rest = 1 - rows.reduce((sum, row) => sum + row.p, 0);
  return { after: r.tokens[x.position], position: x.position, rows, rest: Math.max(0, rest) };
}

/** The bars as a picture, for PNG and SVG. */
function drawBars(canvas: HTMLCanvasElement, c: Candidates, s: Readonly<State>, fg: string, accent: string): void {
  const row = 24,
    top = 30,
    label = 130;
  canvas.width = 560;
  canvas.height = top + row * c.rows.length + 24;
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = '13px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.fillStyle = fg;
  const { temperature, topK, topP } = s.sampling;
  ctx.fillText(
    `After “${c.after}” (position ${c.position + 1}) · T ${temperature.toFixed(2)} · top-k ${topK || 'off'} · top-p ${topP.toFixed(2)}`,
    4,
    12,
  );
  const width = canvas.width - label - 70;
  c.rows.forEach((r, k) => {
    const y = top + k * row;
    ctx.fillStyle = fg;
    ctx.textAlign = 'right';
    ctx.fillText(visible(r.text), label - 8, y + row / 2, label - 12);
    ctx.fillStyle = accent;
    ctx.fillRect(label, y + 4, Math.max(1, r.p * width), row - 8);
    ctx.fillStyle = fg;
    ctx.textAlign = 'left';
    ctx.fillText(`${(r.p * 100).toFixed(2)}%`, label + r.p * width + 6, y + row / 2);
  });
  ctx.fillText(`others: ${(c.rest * 100).toFixed(2)}%`, label, top + row * c.rows.length + 12);
}

export function nextView(page: Page): View {
  const list = $<HTMLOListElement>('candidates');
  const note = $('next-note');
  const body = $('next-body');
  const empty = $('next-empty');
  const [temperature, topK, topP] = ['temperature', 'top-k', 'top-p'].map((id) => $<HTMLInputElement>(id));
  const [seed, maxNew, generate, stop] = ['seed', 'max-new', 'generate', 'stop'].map((id) => $<HTMLInputElement>(id));
  const said = $('generate-note');
  const dirty = changes();
  let shown: Candidates | null = null;

  const sampling = () => {
    const k = Math.max(0, Math.floor(Number(topK.value) || 0));
    const p = Math.min(1, Math.max(0.01, Number(topP.value) || 1));
    page.store.select({ sampling: { temperature: Number(temperature.value), topK: k, topP: p } });
  };
  for (const input of [temperature, topK, topP]) input.addEventListener('input', sampling);
  seed.addEventListener('change', () => {
    const v = Math.floor(Number(seed.value));
    if (Number.isSafeInteger(v) && v >= 0) page.store.select({ seed: v });
  });
  maxNew.addEventListener('change', () => {
    const v = Math.floor(Number(maxNew.value));
    if (v >= 1 && v <= 2048) page.store.select({ maxNewTokens: v });
  });
  $('reseed').addEventListener('click', () => page.store.select({ seed: Math.floor(Math.random() * 2 ** 31) }));
  // The keyboard's focus follows the button that can act: Stop while a generation runs, Generate after.
  const refocus = focusKeeper();
  generate.addEventListener('click', () => startGeneration(page));
  stop.addEventListener('click', () => page.stopGeneration());
  $('next-choose').addEventListener('click', () => $('model-pick').focus());
  // A candidate is added after the position it follows (what came after that position goes); its "why?" opens the
  // Why pane on its logit instead.
  list.addEventListener('click', (e) => {
    const why = (e.target as Element).closest<HTMLButtonElement>('button[data-why]');
    if (why && shown) {
      page.store.select({
        explain: { what: 'logit', position: shown.position, token: Number(why.dataset.why) },
        main: 'why',
      });
      return;
    }
    const button = (e.target as Element).closest<HTMLButtonElement>('button[data-id]');
    const s = page.store.get();
    if (!button || !shown || !s.result || s.generation) return;
    // Past the page's limit the text goes on beyond the tokens shown: a token added at the cut would land in the
    // middle of it, and everything after the cut would go. Refused, with the reason.
    if (s.result.truncated) {
      const { length } = s.result.tokens;
      const message = `Add: the text is cut at ${length} of its ${s.result.totalTokens} tokens (this page's limit), so a token cannot be added after the cut without losing the rest. Shorten the text first.`;
      page.store.put({ errors: { ...s.errors, generate: message } });
      return;
    }
    const ids = [...s.result.ids.slice(0, shown.position + 1), Number(button.dataset.id)];
    page.store.select({ ids, token: null });
  });

  const view: View = {
    id: 'next',
    pane: 'next',
    render(s) {
      const lm = !!s.model?.languageModel && s.mode === 'model';
      setProp(empty, 'hidden', lm);
      // Why the model in view predicts no token, from its info.
      const m = s.model;
      setText(
        $('next-why-not'),
        !m || lm
          ? ''
          : m.languageModel
            ? `${m.name} predicts tokens of its own text: choose “The model's learned heads” above.`
            : `${m.name} is ${m.input === 'image' ? 'a vision model' : 'an encoder'}: it does not predict tokens.`,
      );
      setProp(body, 'hidden', !lm);
      setProp(temperature, 'value', String(s.sampling.temperature));
      setText($('temperature-value'), s.sampling.temperature.toFixed(2));
      if (document.activeElement !== topK) setProp(topK, 'value', String(s.sampling.topK));
      setProp(topP, 'value', String(s.sampling.topP));
      setText($('top-p-value'), s.sampling.topP.toFixed(2));
      if (document.activeElement !== seed) setProp(seed, 'value', String(s.seed));
      if (document.activeElement !== maxNew) setProp(maxNew, 'value', String(s.maxNewTokens));
      const r = s.result;
      const focused = document.activeElement;
      setProp(generate, 'disabled', !lm || !r || r.run < 0 || !!s.generation || r.origin === 'induction');
      setProp(stop, 'disabled', !s.generation);
      refocus.follow(focused, [generate, stop]);
      const state = s.errors.generate ? 'error' : 'ok';
      if (said.dataset.state !== state) said.dataset.state = state;
      setText(
        said,
        s.errors.generate ??
          (s.generation
            ? `Generating with seed ${s.seed}: ${s.generation.tokens} token${s.generation.tokens === 1 ? '' : 's'} so far…`
            : s.generated
              ? `Generated ${s.generated.ids.length - s.generated.promptTokens} tokens with seed ${s.generated.seed} (${s.generated.stopReason}).`
              : r?.origin === 'induction'
                ? 'The map shows the induction test: type, or go back to your text, to generate.'
                : ''),
      );
      if (!lm || !r) return;
      const c = candidates(s);
      const noteState = s.errors.next ? 'error' : 'ok';
      if (note.dataset.state !== noteState) note.dataset.state = noteState;
      if (s.errors.next) setText(note, s.errors.next);
      else if (r.run < 0) setText(note, 'The bars come back when the generation ends.');
      else if (!c) setText(note, 'Reading the logits…');
      if (!c || !dirty(c.rows.map((x) => `${x.id}:${x.p}`).join(), c.position, r)) return;
      shown = c;
      const last = c.position === r.tokens.length - 1;
      note.textContent =
        `After “${c.after}” (token ${c.position + 1} of ${r.tokens.length}): the distribution the sampler draws from. ` +
        `Click one to add it${last ? '' : ', in place of what follows'}; “why?” shows what pushes it.`;
      list.dataset.position = String(c.position);
      list.dataset.run = String(r.run);
      list.replaceChildren(
        ...c.rows.map(({ id, p, text }) => {
          const li = document.createElement('li');
          const b = document.createElement('button');
          b.type = 'button';
          Object.assign(b.dataset, { id: String(id), p: String(p) });
          b.title = `Token ${id}: ${(p * 100).toFixed(4)}%`;
          const label = document.createElement('span');
          label.className = 'token';
          label.textContent = visible(text);
          const bar = document.createElement('span');
          bar.className = 'bar';
          bar.style.setProperty('--p', `${(p * 100).toFixed(3)}%`);
          const value = document.createElement('span');
          value.className = 'value';
          value.textContent = `${(p * 100).toFixed(2)}%`;
          b.append(label, bar, value);
          const why = document.createElement('button');
          why.type = 'button';
          why.className = 'why';
          why.dataset.why = String(id);
          why.textContent = 'why?';
          why.title = `What pushes “${visible(text)}”: each head's and MLP's direct contribution to its logit`;
          li.append(b, why);
          return li;
        }),
      );
    },
    export: {
      canvas: () => {
        const canvas = document.createElement('canvas');
        view.export!.draw(canvas);
        return canvas;
      },
      draw: (canvas) => {
        const c = page.colours();
        if (shown) drawBars(canvas, shown, page.store.get(), c.fg, c.accent);
      },
    },
  };
  return view;
}
