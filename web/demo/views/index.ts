// The view registry: every view of the page, the export table built from them, and the one
// render pass. A new pane (the next-token pane, the logit lens) is a file here, a line in VIEWS, and
// its section in index.html's dock; its exports and its place in the render pass follow.
import type { State } from '../state.js';
import { acrossView } from './across.js';
import { audioInputView } from './audio-input.js';
import { compareView, interveneView } from './compare.js';
import { curtainView } from './curtain.js';
import { gridView } from './grid.js';
import { headsView } from './heads.js';
import { imageInputView } from './image-input.js';
import { imageView } from './image.js';
import { inductionView } from './induction.js';
import { lensView } from './lens.js';
import { linesView } from './lines.js';
import { mapView } from './map.js';
import { mathView } from './math.js';
import { ablateView, costView } from './measure.js';
import { nextView } from './next.js';
import { pickerView } from './picker.js';
import { sourceView } from './source.js';
import { speechView } from './speech.js';
import { tokensView } from './tokens.js';
import type { Export, Page, View } from './view.js';
import { whyView } from './why.js';

const VIEWS: Array<(page: Page) => View> = [
  pickerView,
  sourceView,
  curtainView,
  imageInputView,
  audioInputView,
  tokensView,
  gridView,
  mapView,
  imageView,
  speechView,
  linesView,
  mathView,
  whyView,
  nextView,
  lensView,
  headsView,
  inductionView,
  acrossView,
  compareView,
  interveneView,
  ablateView,
  costView,
];

export function createViews(page: Page): View[] {
  return VIEWS.map((make) => make(page));
}

/**
 * Every view's export, by the name its buttons give (`data-export`); the buttons themselves go
 * into the view's pane, where it leaves a place for them (`data-exports="<id>"`).
 */
export function exportTable(views: View[]): Record<string, Export> {
  const table = Object.fromEntries(views.flatMap((v) => (v.export ? [[v.id, v.export]] : [])));
  for (const id of Object.keys(table)) {
    const slot = document.querySelector<HTMLElement>(`[data-exports="${id}"]`);
    if (!slot) continue;
    slot.setAttribute('role', 'group');
    slot.setAttribute('aria-label', 'Export this view');
    for (const format of ['png', 'svg']) {
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = format.toUpperCase();
      button.title = `This view as ${format === 'png' ? 'a PNG picture' : 'an SVG drawing'}`;
      Object.assign(button.dataset, { export: id, format });
      slot.append(button);
    }
  }
  return table;
}

/** A pane is on screen when its dock shows it; views outside the docks always are. */
export const onScreen = (s: Readonly<State>, pane: string | undefined) =>
  pane === undefined || pane === s.main || pane === s.tools;

/** Draws every view whose pane is on screen (each redraws only what changed for it). */
export function renderAll(views: View[], s: Readonly<State>): void {
  for (const view of views)
    if (onScreen(s, view.pane))
      try {
        view.render(s);
      } catch (err) {
        // One view's bug leaves the others drawn (and is reported: the tests fail on console errors).
        console.error(`the ${view.id} view failed:`, err);
      }
}
