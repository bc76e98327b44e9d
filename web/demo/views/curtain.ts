// Nothing of another run: when the run failed, or a newly loaded model's first run has not come yet, the maps, the
// grid, the tokens and every pane that shows a run are hidden (styles/panes.css, body[data-run]), and where the map
// was the page says what went wrong and what to do, in its own words. The header names the model in view, so
// nothing on screen can be taken for that model's when it is the model before's.
import type { State } from '../state.js';
import { $, setProp, setText, type View } from './view.js';

/**
 * An engine's message in the page's words: what went wrong and what to do here, never an API call ("run: …", "run
 * it on token ids instead", which the page gives no way to do).
 */
export function inPageWords(message: string, what: 'text' | 'pair' | 'image'): string {
  const m = message.replace(/^[a-zA-Z]+: /, '');
  const long = /^the (\w+) has (\d+) tokens, more than the (\w+)'s (\d+) positions/.exec(m);
  if (long)
    return `The ${long[1]} has ${long[2]} tokens, and this model's ${long[3]} reads at most ${long[4]}: shorten the ${long[1]}.`;
  if (/no tokenizer AttnScope reads/.test(m))
    return (
      "This model's files hold no tokenizer the page can read, so it cannot split text into tokens: load the model " +
      'again with its tokenizer among the files (tokenizer.json, or its SentencePiece model).'
    );
  const said = m.charAt(0).toUpperCase() + m.slice(1) + (/[.!?]$/.test(m) ? '' : '.');
  const change = { text: 'Change the text', pair: 'Change the source or the target', image: 'Choose another image' }[
    what
  ];
  return `${said} ${change}, or load another model.`;
}

/** The run's failure as the page says it: which model could not run what, what went wrong and what to do. */
export function failure(s: Readonly<State>): string {
  const what = s.model?.input === 'image' ? 'image' : s.model && s.model.stacks.length > 1 ? 'pair' : 'text';
  const who = s.model ? `${s.model.name} could not run this ${what === 'pair' ? 'source and target' : what}. ` : '';
  return who + inPageWords(s.runError ?? '', what);
}

/** Whether the run in view is not the loaded model's, and why: 'failed' (it failed) or 'pending' (not in yet). */
export function curtain(s: Readonly<State>): 'failed' | 'pending' | null {
  if (!s.model || s.loading.state === 'waiting') return null;
  if (s.runError) return 'failed';
  return s.result && s.resultOf !== s.model ? 'pending' : null;
}

export function curtainView(): View {
  const note = $('run-failed');
  return {
    id: 'curtain',
    render(s) {
      const state = curtain(s);
      if ((document.body.dataset.run ?? null) !== state) {
        if (state) document.body.dataset.run = state;
        else delete document.body.dataset.run;
      }
      setProp(note, 'hidden', state !== 'failed');
      setText(note, state === 'failed' ? failure(s) : '');
    },
  };
}
