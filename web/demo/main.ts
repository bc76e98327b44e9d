// The page: one state, one channel to the worker, the views drawn from the state, the workspace's
// tabs and splits, the link that keeps the state, and the downloads. Nothing here computes.
import { attentionsJson, download, downloadPng, downloadSvg } from './export.js';
import { createAbout, createHints, createScrollCues, createSplits, createTabs } from './layout.js';
import { connect } from './requests.js';
import { readShared, writeShared } from './share.js';
import { Store } from './state.js';
import { createViews, exportTable, renderAll } from './views/index.js';
import { $ } from './views/view.js';
import { kindIn } from './kinds/page.js';

const store = new Store();
const restore = location.hash.length > 1 ? readShared(location.hash) : null;

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
const readColours = () => ({ fg: css('--fg'), muted: css('--muted'), accent: css('--accent'), bg: css('--bg') });
/** The theme's colours, read once and again when the colour scheme changes (reading them forces a style pass). */
let theme = readColours();
const colours = () => theme;

store.select({
  text: restore?.text ?? $<HTMLTextAreaElement>('text').value,
  view: restore?.view ?? 'head',
  main: restore?.main ?? 'lines',
  // A link to rollout or flow opens the pane with its bars.
  tools: restore?.tools ?? (restore?.view && restore.view !== 'head' ? 'across' : 'heads'),
  // A seed of its own for every visit, unless a link brings one: it shows, and the link keeps it.
  seed: restore?.seed ?? Math.floor(Math.random() * 2 ** 31),
  ...(restore?.sampling && { sampling: restore.sampling }),
  ...(restore?.overlay && { overlay: restore.overlay }),
  ...(restore?.opacity !== undefined && { opacity: restore.opacity }),
  ...(restore?.normLayer !== undefined && { normLayer: restore.normLayer }),
  ...(restore?.hoverShows && { hoverShows: restore.hoverShows }),
});
if (restore?.image) store.put({ pendingSample: restore.image });
const { page, restoring, answered } = connect(store, colours, restore);
const views = createViews(page);
const exports = exportTable(views);
const tabs = createTabs(store);

/** The link to what the page shows: in the URL as it changes (a moment after typing stops), and in the share box. */
let shareTimer = 0;
function share(): void {
  clearTimeout(shareTimer);
  shareTimer = window.setTimeout(writeLink, 250);
}
function writeLink(): void {
  const s = store.get();
  if (!s.result || restoring()) return; // a link being restored is not overwritten
  const hash = writeShared(s, s.modelId);
  if (location.hash !== hash) history.replaceState(null, '', hash);
  $<HTMLInputElement>('share-link').value = location.href;
  // A model from files cannot travel in a link: the link says so, and asks for the files where it is opened.
  const note = $('share-note');
  const kind = kindIn(s);
  const fileImage = kind === 'image' && !!s.image && !s.image.sample;
  const sound = kind === 'speech' && !!s.audio;
  note.hidden = s.modelId !== 'files' && !fileImage && !sound;
  const what = kind === 'image' || kind === 'speech' ? 'the view' : 'the text and view';
  note.textContent =
    s.modelId === 'files' && sound
      ? 'The model came from files and the sound from your computer: the link carries the view; choose both again.'
      : s.modelId === 'files'
        ? `The model came from files: the link carries ${what}, and asks for the same files.` +
          (fileImage ? ' The image came from your computer: choose it again where the link is opened.' : '')
        : fileImage
          ? 'The image came from your computer, which a link cannot carry: it opens with a sample; choose the image again.'
          : 'A link cannot carry the sound: choose or record it again where the link is opened.';
}

/**
 * Export buttons wait until their pane has something to export, and while it is being worked out
 * (`aria-busy`, as the math steps are after a change of head): a picture then would be of what is not shown.
 */
function exportable(): void {
  for (const pane of document.querySelectorAll<HTMLElement>('.pane')) {
    const empty = pane.querySelector<HTMLElement>('.empty');
    const busy = !!pane.querySelector('[aria-busy="true"]');
    const none = !store.get().result || (!!empty && !empty.hidden) || busy;
    for (const b of pane.querySelectorAll<HTMLButtonElement>('button[data-export]')) b.disabled = none;
  }
  // The tensor downloads wait for a generation's final run: its growing maps are not one [L, H, n, n] block yet.
  const growing = !!store.get().result?.grown?.length;
  for (const id of ['download-json', 'download-npy'])
    $<HTMLButtonElement>(id).disabled = !store.get().result || growing;
}

// Each change draws the views (each does only what changed for it); the frame's chrome (the export buttons'
// state) waits for the animation frame, so that a generation's many changes cost it once a frame.
let chrome = 0;
/** Image and speech modes widen the main dock, where their pane is (and give the sizes back after). */
const imageMode = createSplits();
store.subscribe((s, changed) => {
  // The tabs offered follow the model's kind as well as the panes open.
  if (changed.has('main') || changed.has('tools') || changed.has('model')) tabs(s);
  if (changed.has('model')) imageMode(kindIn(s) === 'image' || kindIn(s) === 'speech');
  renderAll(views, s);
  chrome ||= requestAnimationFrame(() => {
    chrome = 0;
    exportable();
  });
  share();
});
// Dragging a split or resizing the window re-fits the charts (each redraws only if its size changed).
const refit = new ResizeObserver(() => renderAll(views, store.get()));
for (const dock of document.querySelectorAll('.dock')) refit.observe(dock);
tabs(store.get());
renderAll(views, store.get());
createHints();
createAbout();
createScrollCues();
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  theme = readColours();
  renderAll(views, store.get());
});

$('copy-link').addEventListener('click', () => {
  writeLink();
  const link = $<HTMLInputElement>('share-link');
  link.select();
  navigator.clipboard?.writeText(link.value).catch(() => undefined);
});

// The attention tensor: JSON here, .npy by the engine in the worker (the reply downloads it).
$('download-json').addEventListener('click', () => {
  const s = store.get();
  if (!s.result) return;
  const g = s.generated && s.ids ? s.generated : null;
  // Generated text carries how it was drawn: the prompt's length in tokens, the sampling and the seed.
  const generation = g && { promptTokens: g.promptTokens, seed: g.seed, ...g.sampling, stopReason: g.stopReason };
  const meta = { model: $('model-name').textContent ?? '', text: s.text, ...(generation && { generation }) };
  const json = attentionsJson(meta, s.result);
  download('attentions.json', new Blob([json], { type: 'application/json' }));
});
$('download-npy').addEventListener('click', () => {
  const r = store.get().result;
  if (!r) return;
  const attentions = r.attentions.slice();
  page.ask({ kind: 'npy', attentions, shape: r.shape }, [attentions.buffer]);
});

// Every view exports as PNG (the canvas as shown) and SVG (its drawing code, recorded as SVG).
document.addEventListener('click', (event) => {
  const button = (event.target as Element).closest<HTMLButtonElement>('button[data-export]');
  const target = button && exports[button.dataset.export!];
  if (!target) return;
  const s = store.get();
  const name = `attnscope-${button.dataset.export}-L${s.layer + 1}-H${s.head + 1}`;
  const canvas = target.canvas();
  if (button.dataset.format === 'png') downloadPng(name, canvas);
  else downloadSvg(name, target.size?.() ?? canvas, colours().bg, target.draw);
});

// For the browser tests: the state and the map's frame times, to read (never to drive anything).
const mapFrames = (views.find((v) => v.id === 'map') as { frames?: number[] }).frames ?? [];
const grid = views.find((v) => v.id === 'grid') as { thumbnails?: () => unknown };
Object.defineProperty(window, '__attnscope', {
  value: Object.freeze({
    state: () => store.get(),
    frames: () => [...mapFrames],
    /** The navigator's thumbnails: every (layer, head)'s max-pooled blocks. */
    thumbnails: () => grid.thumbnails?.(),
    answered,
    /** The image's RGBA as the page decoded it (what its vision model runs on), for small test images. */
    imagePixels: () => {
      const b = store.get().image?.bitmap;
      if (!b) return null;
      const ctx = new OffscreenCanvas(b.width, b.height).getContext('2d')!;
      ctx.drawImage(b, 0, 0);
      return { width: b.width, height: b.height, data: Array.from(ctx.getImageData(0, 0, b.width, b.height).data) };
    },
  }),
});
