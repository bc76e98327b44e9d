// The workspace's frame: a tab list for each dock, made from its panes' titles and kept in the
// state (so a link opens the same panes), and split.js between the panes on a desktop screen, its
// gutters keyboard-resizable and their sizes remembered. Under 760 px there are no splits: the
// panes stack (layout.css) and the page scrolls.
import Split from 'split.js';

import type { State, Store } from './state.js';
import { kindIn } from './kinds/page.js';

const NARROW = '(max-width: 760px)';
const SAVED = 'attnscope:splits';

/** The splits: [container's direction, its two parts, default sizes in %, minimum sizes in px]. */
const SPLITS: Array<['horizontal' | 'vertical', [string, string], number[], number[]]> = [
  ['horizontal', ['#side', '#work'], [23, 77], [250, 480]],
  ['vertical', ['#source', '#navigator'], [60, 40], [150, 110]],
  ['vertical', ['#top', '#tools-dock'], [63, 37], [260, 150]],
  ['horizontal', ['#map-pane', '#main-dock'], [57, 43], [300, 260]],
];

export function createTabs(store: Store): (s: Readonly<State>) => void {
  const docks = [...document.querySelectorAll<HTMLElement>('.dock[data-dock]')];
  for (const dock of docks) {
    const key = dock.dataset.dock as 'main' | 'tools';
    const list = document.createElement('div');
    list.className = 'tabs';
    list.setAttribute('role', 'tablist');
    list.setAttribute('aria-label', key === 'main' ? 'Views of the selected head' : 'Analysis tools');
    for (const pane of dock.querySelectorAll<HTMLElement>(':scope > .pane[data-pane]')) {
      const tab = document.createElement('button');
      tab.type = 'button';
      tab.id = `tab-${pane.dataset.pane}`;
      tab.textContent = pane.dataset.title ?? '';
      tab.dataset.pane = pane.dataset.pane;
      tab.setAttribute('role', 'tab');
      tab.setAttribute('aria-controls', pane.id);
      pane.setAttribute('role', 'tabpanel');
      pane.setAttribute('aria-labelledby', tab.id);
      tab.addEventListener('click', () => store.select({ [key]: pane.dataset.pane }));
      list.append(tab);
    }
    // Arrow keys move along the tabs and open the one they reach (the WAI-ARIA tabs pattern).
    list.addEventListener('keydown', (e) => {
      const tabs = [...list.children] as HTMLElement[];
      const at = tabs.indexOf(document.activeElement as HTMLElement);
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (at < 0 || !step) return;
      const next = tabs[(at + step + tabs.length) % tabs.length];
      next.focus();
      next.click();
    });
    dock.prepend(list);
  }
  return (s) => {
    const kind = kindIn(s);
    for (const dock of docks) {
      const open = s[dock.dataset.dock as 'main' | 'tools'];
      for (const tab of dock.querySelectorAll<HTMLElement>('[role=tab]')) {
        // A pane that names the kinds of model it works on (data-kinds) is offered only for those.
        const kinds = document.getElementById(tab.getAttribute('aria-controls')!)?.dataset.kinds;
        const offered = !kinds || !kind || kinds.split(' ').includes(kind);
        if (tab.hidden === offered) tab.hidden = !offered;
        const selected = tab.dataset.pane === open;
        tab.setAttribute('aria-selected', String(selected));
        tab.tabIndex = selected ? 0 : -1;
      }
      for (const pane of dock.querySelectorAll<HTMLElement>(':scope > .pane')) pane.hidden = pane.dataset.pane !== open;
    }
  };
}

function saved(): number[][] | null {
  try {
    const sizes = JSON.parse(localStorage.getItem(SAVED) ?? 'null');
    return Array.isArray(sizes) && sizes.length === SPLITS.length ? sizes : null;
  } catch {
    return null;
  }
}

/** The map and the main dock in image mode: the image pane, in the main dock, takes the larger part. */
const IMAGE_SIZES = [42, 58];
const MAP_MAIN = 3;

/**
 * split.js on wide screens, nothing on narrow ones; follows the window across the boundary. Returns a switch for
 * image mode, which widens the main dock (where the image pane is) and gives the sizes back when it ends.
 */
export function createSplits(): (image: boolean) => void {
  let splits: Split.Instance[] = [];
  /** Image mode's state, and the sizes the map and the main dock had before it. */
  let image = false;
  let before: number[] | null = null;
  const remember = () => {
    try {
      localStorage.setItem(SAVED, JSON.stringify(splits.map((s) => s.getSizes())));
    } catch {
      // Storage may be off (private windows): the sizes are then not remembered.
    }
  };
  const create = () => {
    const sizes = saved();
    splits = SPLITS.map(([direction, parts, defaults, minSize], k) =>
      Split(parts, {
        direction,
        sizes: sizes?.[k] ?? defaults,
        minSize,
        gutterSize: 5,
        snapOffset: 0,
        elementStyle: (_, size, gutter) => ({ flexBasis: `calc(${size}% - ${gutter}px)` }),
        gutterStyle: (_, gutter) => ({ flexBasis: `${gutter}px` }),
        onDragEnd: remember,
      }),
    );
    // Gutters take the keyboard too: focus one, and the arrow keys move it by 2%.
    SPLITS.forEach(([direction, [, second]], k) => {
      const gutter = document.querySelector(second)!.previousElementSibling as HTMLElement; // split.js puts it there
      gutter.tabIndex = 0;
      gutter.setAttribute('role', 'separator');
      gutter.setAttribute('aria-orientation', direction === 'horizontal' ? 'vertical' : 'horizontal');
      gutter.setAttribute('aria-label', 'Resize the panes (arrow keys)');
      gutter.addEventListener('keydown', (e) => {
        const step = { ArrowLeft: -2, ArrowUp: -2, ArrowRight: 2, ArrowDown: 2 }[e.key];
        if (!step) return;
        e.preventDefault();
        const [a, b] = splits[k].getSizes();
        const moved = Math.max(5, Math.min(95, a + step));
        splits[k].setSizes([moved, b + a - moved]);
        remember();
      });
    });
  };
  const narrow = matchMedia(NARROW);
  const apply = () => {
    splits.forEach((s) => s.destroy());
    splits = [];
    if (!narrow.matches) create();
    if (image && splits.length) splits[MAP_MAIN].setSizes(IMAGE_SIZES);
  };
  narrow.addEventListener('change', apply);
  apply();
  return (on) => {
    if (on === image) return;
    image = on;
    const split = splits[MAP_MAIN];
    if (!split) return;
    if (on) {
      before = split.getSizes();
      // Wider than that already (dragged so): left as it is.
      if (before[1] < IMAGE_SIZES[1]) split.setSizes(IMAGE_SIZES);
    } else if (before) split.setSizes(before);
  };
}

/**
 * A cue on everything that scrolls sideways (the tab strips, the heads table): its edge fades where more lies
 * beyond it (`data-more`: left, right or both), so a phone's narrow screen shows that the strip or the table
 * goes on.
 */
export function createScrollCues(): void {
  const mark = (el: HTMLElement) => {
    const left = el.scrollLeft > 1;
    const right = el.scrollLeft + el.clientWidth < el.scrollWidth - 1;
    el.dataset.more = left && right ? 'both' : left ? 'left' : right ? 'right' : '';
  };
  const resized = new ResizeObserver((entries) => entries.forEach((e) => mark(e.target as HTMLElement)));
  for (const el of document.querySelectorAll<HTMLElement>('.tabs, .scroll')) {
    el.addEventListener('scroll', () => mark(el), { passive: true });
    resized.observe(el);
    // Content that changes width (the table's rows) without resizing the box.
    if (el.firstElementChild) resized.observe(el.firstElementChild);
    mark(el);
  }
}

/** The first-run strip with three things to try, until it is dismissed (remembered). */
export function createHints(): void {
  const strip = document.getElementById('hints')!;
  const KEY = 'attnscope:hints-dismissed';
  let dismissed = false;
  try {
    dismissed = localStorage.getItem(KEY) === '1';
  } catch {
    // No storage: show the strip; dismissing it lasts for this visit.
  }
  strip.hidden = dismissed;
  document.getElementById('hints-close')!.addEventListener('click', () => {
    strip.hidden = true;
    try {
      localStorage.setItem(KEY, '1');
    } catch {
      // As above.
    }
  });
}

/**
 * The About panel: a modal `<dialog>` (Escape closes it, focus stays inside it while it is open), opened from the
 * header, closed by its button or a click on the backdrop around it.
 */
export function createAbout(): void {
  const dialog = document.getElementById('about') as HTMLDialogElement;
  document.getElementById('about-open')!.addEventListener('click', () => dialog.showModal());
  document.getElementById('about-close')!.addEventListener('click', () => dialog.close());
  // A click on the backdrop lands on the dialog itself, outside its box.
  dialog.addEventListener('click', (e) => {
    const r = dialog.getBoundingClientRect();
    const outside = e.clientX < r.left || e.clientX > r.right || e.clientY < r.top || e.clientY > r.bottom;
    if (e.target === dialog && outside) dialog.close();
  });
}
