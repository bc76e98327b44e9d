// The side panel's text and which attention, and what they say back: the model, the run's size and
// time, what it reused of the previous run and why it was cut short, and the engine's build. Every change the
// page makes to the text (a candidate added, a generation kept, shuffled words, a run's text) is one edit of
// the part that differs, which the browser's undo takes back; the person's own typing is theirs.
import type { Mode, RunResult, PairSet } from '../protocol.js';
import { modelName } from '../protocol.js';
import { pairs } from '../requests.js';
import { beamCount, MAX_BEAMS, type State } from '../state.js';
import { failure } from './curtain.js';
import { kindIn } from '../kinds/page.js';
import { $, focusKeeper, setProp, setText, type Page, type View } from './view.js';

/** Keys that edit the text (typed characters, deletions, Enter, paste, cut, undo and redo). */
function edits(e: KeyboardEvent): boolean {
  const command = e.ctrlKey || e.metaKey;
  if (command) return ['v', 'x', 'z', 'y'].includes(e.key.toLowerCase());
  return (e.key.length === 1 && !e.altKey) || ['Backspace', 'Delete', 'Enter'].includes(e.key);
}

/** A text as a text box holds it: a box has no carriage returns (\r\n and \r become \n). */
const boxed = (text: string) => text.replace(/\r\n?/g, '\n');

const CONTEXT_LABEL = "Second text: its tokens are the keys (the map's columns)";
const CONTEXT_NOTE =
  "Cross-attention, as in a translation model: each token of the text above asks (its queries) and the second text's " +
  "tokens answer (their keys and values), with this model's heads and each text's own hidden states. No causal mask " +
  'applies across texts, nor rotary positions.';
const TARGET_LABEL = 'Target';
const TARGET_NOTE =
  'An encoder-decoder model: the source runs through the encoder once, and the target through the decoder after its ' +
  'start token, teacher-forced, each of its tokens attending to the tokens before it and, through cross-attention, ' +
  'to the source. Edit the target to ask what the model makes of another; "Generate the target" writes its own: ' +
  'greedily a token at a time, or by beam search.';

/** What the Beams box's count does, under it. */
function beamsNote(beams: number | null): string {
  if (beams === null) return `Beams: a whole number from 1 to ${MAX_BEAMS}.`;
  if (beams === 1) return '1 beam: greedy, the likeliest next token at each step, shown as it comes.';
  return (
    `${beams} beams: beam search keeps the ${beams} likeliest partial targets at each step and returns the likeliest ` +
    'whole target among them, which need not begin with the likeliest token; it shows once the search ends.'
  );
}

/** Characters of a generation in progress shown under the box. */
const STREAMED = 1200;

export function sourceView(page: Page): View {
  const text = $<HTMLTextAreaElement>('text');
  const continuation = $('continuation');
  const generatedText = $('continuation-text');
  /** True while the page edits the box itself: its input event is not the person's. */
  let editing = false;
  /** The first render sets the box (a link's text): nothing to undo yet. */
  let first = true;
  /** The generated text shown under the box so far. */
  let streamed = '';
  let scrolling = 0;

  /**
   * Puts `next` in the box as one edit of the part that differs (execCommand's insertText, so that undo takes it
   * back); where the box cannot be edited so (not rendered), sets it. Focus goes back where it was.
   */
  function edit(text_: string): void {
    const next = boxed(text_);
    const old = text.value;
    if (old === next) return;
    let a = 0;
    while (a < old.length && a < next.length && old[a] === next[a]) a++;
    let b = 0;
    while (b < old.length - a && b < next.length - a && old[old.length - 1 - b] === next[next.length - 1 - b]) b++;
    // Never between the halves of a surrogate pair.
    if (a > 0 && /[\uD800-\uDBFF]/.test(old[a - 1])) a--;
    if (b > 0 && /[\uDC00-\uDFFF]/.test(old[old.length - b])) b--;
    const active = document.activeElement as HTMLElement | null;
    const [start, end] = [text.selectionStart, text.selectionEnd];
    editing = true;
    try {
      text.focus({ preventScroll: true });
      // (Where the box cannot take the focus, insertText would go to whatever has it: then the text is set.)
      const done =
        document.activeElement === text &&
        (text.setSelectionRange(a, old.length - b),
        document.execCommand('insertText', false, next.slice(a, next.length - b)));
      if (!done || text.value !== next) text.value = next;
    } finally {
      editing = false;
    }
    if (active === text) {
      // The person's caret stays on the same text: before the edit, where it was; after it, moved with the text
      // after it; at the very end, at the new end.
      const moved = (at: number) => (at >= old.length - b ? at + next.length - old.length : Math.min(at, a));
      if (end < old.length) text.setSelectionRange(moved(start), moved(end));
    } else {
      text.blur();
      active?.focus({ preventScroll: true });
    }
  }

  text.addEventListener('input', () => {
    if (!editing) page.store.select({ text: text.value, ids: null });
  });
  // Typing, pasting or dropping while a model generates keeps what it generated (as Stop does), then edits: at
  // the key that edits, or at paste, cut and drop, before the edit; any other input (a phone's keyboard, an IME, a
  // spelling fix) at beforeinput.
  const keep = () => page.store.get().generation && page.stopGeneration();
  text.addEventListener('keydown', (e) => edits(e) && !e.isComposing && keep());
  for (const type of ['paste', 'cut', 'drop']) text.addEventListener(type, keep);
  text.addEventListener('beforeinput', () => editing || keep());
  const context = $<HTMLTextAreaElement>('context');
  context.addEventListener('input', () => page.store.select({ context: context.value, contextIds: null }));
  const targetStream = $('target-stream');
  /** The target shown in the stream so far. */
  let streamedTarget = '';
  // Encoder, decoder and cross-attention as tabs (the WAI-ARIA pattern): arrow keys, Home and End move along them
  // and choose the one they reach.
  const tabs = [...document.querySelectorAll<HTMLButtonElement>('#stack-tabs [role=tab]')];
  // (Cross-attention has no rollout or flow: requests.ts shows its heads when it is chosen.)
  const choose = (pairSet: PairSet) => page.store.select({ pairSet });
  for (const tab of tabs) tab.addEventListener('click', () => choose(tab.dataset.stack as PairSet));
  $('stack-tabs').addEventListener('keydown', (e) => {
    const at = tabs.indexOf(document.activeElement as HTMLButtonElement);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (at < 0 || to === undefined) return;
    e.preventDefault();
    const next = tabs[(to + tabs.length) % tabs.length];
    next.focus();
    choose(next.dataset.stack as PairSet);
  });
  // The keyboard's focus follows the button that can act: Stop while a target generates, Generate after.
  const translateFocus = focusKeeper();
  const beams = $<HTMLInputElement>('beams');
  /** The state's beam count the box shows: the box is written only when that changes, so a bad count stays in view. */
  let shownBeams = 0;
  const typed = () => beamCount(beams.value);
  // Only a whole count from 1 to 8 reaches the state; another leaves Generate disabled and the note says why.
  beams.addEventListener('input', () => {
    const n = typed();
    if (n !== null) page.store.select({ beams: n });
    controls(page.store.get());
  });
  beams.addEventListener('keydown', (e) => e.key === 'Enter' && typed() !== null && page.translate());
  $('translate').addEventListener('click', () => typed() !== null && page.translate());
  $('translate-stop').addEventListener('click', () => page.stopTranslation());
  const radios = [...document.querySelectorAll<HTMLInputElement>('input[name=mode]')];
  for (const radio of radios) radio.addEventListener('change', () => page.store.select({ mode: radio.value as Mode }));
  $('shuffle').addEventListener('click', () => {
    const words = text.value.split(/\s+/).filter(Boolean);
    for (let i = words.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [words[i], words[j]] = [words[j], words[i]];
    }
    page.store.select({ text: words.join(' '), ids: null });
  });

  /** Generate, Stop and the Beams box with its note: from the state, and from what the box holds now. */
  function controls(s: Readonly<State>): void {
    const pair = pairs(s);
    const t = s.translation;
    if (s.beams !== shownBeams) {
      shownBeams = s.beams;
      if (typed() !== s.beams) beams.value = String(s.beams);
    }
    const n = typed();
    setProp(beams, 'disabled', !pair || !!t);
    if (beams.getAttribute('aria-invalid') !== String(n === null))
      beams.setAttribute('aria-invalid', String(n === null));
    const note = $('beams-note');
    setProp(note, 'hidden', !pair);
    setText(note, beamsNote(n));
    const state = n === null ? 'error' : 'ok';
    if (note.dataset.state !== state) note.dataset.state = state;
    const [go, halt] = [$<HTMLButtonElement>('translate'), $<HTMLButtonElement>('translate-stop')];
    const focused = document.activeElement;
    setProp(go, 'disabled', !pair || !!t || n === null);
    setProp(halt, 'disabled', !t || t.stopping);
    translateFocus.follow(focused, [go, halt]);
  }

  return {
    id: 'source',
    render(s) {
      if (first) text.value = s.text;
      else if (text.value !== boxed(s.text)) edit(s.text);
      first = false;
      // The generation streams here, under the box; the box gets it when it ends.
      const g = s.generation;
      setProp(continuation, 'hidden', !g);
      // Its last lines only: laying out thousands of characters again at every token would cost more than it shows.
      const all = g?.text ?? '';
      const now = all.length > STREAMED ? `…${all.slice(-STREAMED)}` : all;
      if (now !== streamed) {
        if (now.startsWith(streamed)) generatedText.append(now.slice(streamed.length));
        else generatedText.textContent = now;
        streamed = now;
        // At the next frame, once laid out: scrolling now would lay the page out for every token.
        scrolling ||= requestAnimationFrame(() => {
          scrolling = 0;
          continuation.scrollTop = continuation.scrollHeight;
        });
      }
      for (const radio of radios) setProp(radio, 'checked', radio.value === s.mode);
      // An encoder-decoder: the source and the target side by side, its maps chosen by the tabs.
      const pair = pairs(s);
      const texts = $('texts');
      if (texts.classList.contains('pair') !== pair) texts.classList.toggle('pair', pair);
      setText($('text-label'), pair ? 'Source' : 'Text');
      setProp($('context-row'), 'hidden', s.mode !== 'two-texts' && !pair);
      setProp($('context-note'), 'hidden', s.mode !== 'two-texts' && !pair);
      // A speech model's three sets are chosen by the same tabs.
      setProp($('stack-row'), 'hidden', !pair && kindIn(s) !== 'speech');
      const failed = pair ? s.errors.translate : undefined;
      setText($('context-note'), failed ? `Generate the target: ${failed}` : pair ? TARGET_NOTE : CONTEXT_NOTE);
      for (const tab of tabs) {
        const selected = tab.dataset.stack === s.pairSet;
        if (tab.getAttribute('aria-selected') !== String(selected)) tab.setAttribute('aria-selected', String(selected));
        setProp(tab, 'tabIndex', selected ? 0 : -1);
      }
      // While the target is generated, it grows in place of its box, a token at a time; the box gets it at the end.
      // A beam search has no token to show until it ends: the place says it is searching.
      const t = s.translation;
      const search = t && t.beams > 1 ? (t.stopping ? 'stopping' : 'running') : '';
      const doing = search ? `searching ${t!.beams} beams…` : 'generating…';
      setText($('context-label'), !pair ? CONTEXT_LABEL : t ? `${TARGET_LABEL}: ${doing}` : TARGET_LABEL);
      setProp(context, 'hidden', !!t);
      setProp(targetStream, 'hidden', !t);
      if ((targetStream.dataset.searching ?? '') !== search) {
        if (search) targetStream.dataset.searching = search;
        else delete targetStream.dataset.searching;
      }
      const target =
        search === 'running'
          ? `Searching ${t!.beams} beams…`
          : search === 'stopping'
            ? `Stopping the search: its leading beam becomes the target…`
            : (t?.text ?? '');
      if (target !== streamedTarget) {
        if (target.startsWith(streamedTarget)) targetStream.append(target.slice(streamedTarget.length));
        else targetStream.textContent = target;
        streamedTarget = target;
      }
      controls(s);
      if (context.value !== s.context && document.activeElement !== context) context.value = s.context;
      const name = $('model-name');
      if (s.loading.state === 'waiting') {
        setText(name, "The link's model was loaded from files: choose them to see its maps");
        name.dataset.architecture = '';
      } else if (s.model) {
        const m = s.model;
        const title = modelName(m);
        const cap = s.limit ? Math.min(s.limit.tokens, m.maxTokens) : m.maxTokens;
        // Each stack's layers where there are two (an encoder-decoder's need not match).
        const shape =
          m.stacks.length > 1
            ? `${m.stacks.map((k) => `${k.name} ${k.layers} layers`).join(', ')}, ${m.heads} heads each`
            : `${m.layers} layers × ${m.heads} heads`;
        setText(name, `${title}: ${shape}, up to ${cap} tokens`);
        setProp(
          name,
          'title',
          cap < m.maxTokens
            ? `The model reads up to ${m.maxTokens} tokens; this page runs up to ${cap} (${s.limit?.why === 'memory' ? "what one layer's maps of every head fit" : 'its limit'}).`
            : '',
        );
        if (name.dataset.architecture !== m.architecture) name.dataset.architecture = m.architecture;
      }
      const status = $('status');
      const r = s.result;
      const state = s.runError ? 'error' : 'ok';
      if (status.dataset.state !== state) status.dataset.state = state;
      // A failure in the page's words here too: on a phone this line is under the boxes where the person typed.
      setText(status, s.runError ? failure(s) : r ? latency(s, r) : '');
      const e = s.engine;
      if (!e) return;
      const info = $('engine-info');
      setText(
        info,
        `attnscope ${e.version} · ${e.build} build · ${e.threads} thread${e.threads > 1 ? 's' : ''}` +
          (e.simd ? ' · SIMD128' : '') +
          (e.relaxedSimd ? ' with relaxed SIMD (fused multiply-add)' : '') +
          (e.isolated ? '' : ' · this page is not cross-origin isolated, so it runs single-threaded'),
      );
      if (info.dataset.build !== e.build) info.dataset.build = e.build;
    },
  };
}

/** The run's line: its size and time, what it reused of the previous run, and why it was cut short. */
function latency(s: Readonly<State>, r: RunResult): string {
  const n = r.tokens.length;
  const parts = [`${n} tokens`];
  if (s.generation) parts.push(`generating: ${s.generation.tokens} new so far, each a row per head (KV cache)`);
  else if (s.translation && s.translation.beams > 1)
    parts.push(`searching ${s.translation.beams} beams for the target: it and its maps come when the search ends`);
  else if (s.translation)
    parts.push(
      `generating the target: ${Math.max(0, s.translation.ids.length - 1)} tokens so far; its maps come at the end`,
    );
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
