// The tokens exactly as the model's tokenizer split the text, as chips. Click one, or focus the
// list and use the arrow keys (Home, End; Escape lets go), to put it in focus: its row is marked
// on the map and the head view draws only its lines. Token text is always text, never HTML.
import type { RunResult } from '../protocol.js';
import { $, type Page, type View } from './view.js';

/**
 * Chips made in one frame at most. A long text's first run, or a generation's end, brings up to 2,048 at once, and
 * their layout in one task took 50 ms of a slower page's thread (the bench's ATTNSCOPE_THROTTLE=2): the rest follow,
 * a frame's worth at a time, below the list's view.
 */
const CHIPS_PER_FRAME = 256;

/** What makes a chip: its label, id and whether it is special. */
const key = (token: string, id: number | undefined, special: boolean) => `${id ?? ''}:${special ? 1 : 0}:${token}`;

export function tokensView(page: Page): View {
  const list = $<HTMLOListElement>('tokens');
  /** The tokens the chips are of (a generation may be ahead of them). */
  let made: string[] | null = null;
  let marked: HTMLElement | null = null;
  /** Each chip's label, id and whether it is special, as made (not read back from the page). */
  const keys: string[] = [];
  /**
   * Whether the last chip is in the list's view. A generation's tokens become chips only while it is, or once the
   * generation ends: chips below the list's view cost the page their layout, a few hundred a message, and show
   * nothing (the text streams under the box meanwhile).
   */
  let tailInView = true;
  /** The animation frame that makes the next chips, while a run's are not all made. */
  let more = 0;
  /** Whether `r`'s tokens have chips still to make: another run's tokens, or the rest of this one's. */
  const owed = (r: RunResult | null) => !!r && (made !== r.tokens || keys.length < r.tokens.length);
  const tail = new IntersectionObserver(
    (entries) => {
      const seen = entries.at(-1)!.isIntersecting;
      if (seen === tailInView) return;
      tailInView = seen;
      // Scrolled down to the chips' end while a generation goes on: its tokens so far become chips.
      if (seen && owed(page.store.get().result)) view.render(page.store.get());
    },
    { root: list },
  );

  const pick = (token: number | null) => page.store.select({ token });
  list.addEventListener('click', (e) => {
    const li = (e.target as Element).closest('li');
    if (!li) return;
    const i = [...list.children].indexOf(li);
    pick(page.store.get().token === i ? null : i);
  });
  list.addEventListener('keydown', (e) => {
    const n = page.store.get().result?.tokens.length ?? 0; // chips may still be on their way
    const now = page.store.get().token;
    const next: Record<string, number | null> = {
      ArrowRight: Math.min((now ?? -1) + 1, n - 1),
      ArrowDown: Math.min((now ?? -1) + 1, n - 1),
      ArrowLeft: Math.max((now ?? n) - 1, 0),
      ArrowUp: Math.max((now ?? n) - 1, 0),
      Home: 0,
      End: n - 1,
      Escape: null,
    };
    if (!(e.key in next) || !n) return;
    e.preventDefault();
    pick(next[e.key]);
  });

  const view: View = {
    id: 'tokens',
    render(s) {
      const r = s.result;
      if (!r) return;
      const behind = !!s.generation && !tailInView && (s.token === null || s.token < keys.length);
      const ids = r.ids.length ? r.ids : null;
      if (owed(r) && !behind) {
        if (made !== r.tokens) {
          made = r.tokens;
          // Only the chips from the first token that differs are made again: typing at the end, or a generated
          // token, costs the new chips, not all 2,048.
          let same = 0;
          while (
            same < Math.min(keys.length, r.tokens.length) &&
            keys[same] === key(r.tokens[same], ids?.[same], r.special[same])
          )
            same++;
          while (keys.length > same) {
            list.lastElementChild!.remove();
            keys.pop();
          }
        }
        const from = keys.length;
        const to = Math.min(r.tokens.length, from + CHIPS_PER_FRAME);
        if (to < r.tokens.length)
          more ||= requestAnimationFrame(() => {
            more = 0;
            view.render(page.store.get());
          });
        list.append(
          ...r.tokens.slice(from, to).map((t, k) => {
            const i = from + k;
            const li = document.createElement('li');
            li.textContent = t;
            li.title = ids ? `${r.pieces[i]} · id ${ids[i]}` : t;
            li.id = `token-${i}`;
            keys.push(key(t, ids?.[i], r.special[i]));
            if (r.special[i]) li.className = 'special';
            return li;
          }),
        );
        if (marked && !marked.isConnected) marked = null;
        tail.disconnect();
        if (list.lastElementChild) tail.observe(list.lastElementChild);
      }
      const li = s.token === null ? null : (list.children[s.token] as HTMLElement | undefined);
      if (li === marked) return;
      marked?.removeAttribute('aria-current');
      marked = li ?? null;
      if (marked) {
        marked.setAttribute('aria-current', 'true');
        marked.scrollIntoView({ block: 'nearest' });
        list.setAttribute('aria-activedescendant', marked.id);
      } else list.removeAttribute('aria-activedescendant');
    },
  };
  return view;
}
