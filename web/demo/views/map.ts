// The large map: the selected head's weights (or rollout/flow through all layers), with the exact
// weight under the pointer. It zooms (wheel, + −, buttons) and pans (drag, shift + arrows) about a
// viewport; the arrow keys move a cell cursor through it, which is also the token in focus. A click on a cell (or
// Enter at the cursor) takes its score apart in the Why pane. Every change
// asks for a frame, and at most one frame is drawn per animation frame, from the cells in view (draw/map-canvas.ts).
import { alignment, describe, type Alignment } from '../alignment.js';
import { drawMap, labelRoom, labelStep, MapCanvas, type MapFrame } from '../draw/map-canvas.js';
import type { MapRows } from '../draw/pooled.js';
import { Viewport } from '../draw/viewport.js';
import { headRows, matrixRows, ownRows } from '../map-rows.js';
import type { Aggregate, State, View as Shows } from '../state.js';
import { currentAcross } from './across.js';
import { kindIn } from '../kinds/page.js';
import { $, changes, setProp, setText, type Page, type View } from './view.js';

/** An encoder-decoder's cross-attention, where the map may take the layer's heads together (alignment.ts). */
const aligns = (s: Readonly<State>) => s.view === 'head' && s.mode === 'model' && s.result?.set === 'cross';

/** The matrix the map shows now, or why it shows none; `align`: the alignment it shows, if any. */
function shown(s: Readonly<State>, align: Alignment | null): { map: MapRows } | { empty: string } | null {
  const r = s.result;
  if (!r) return null;
  if (align) return { map: align.map };
  if (s.view === 'head') {
    const map = headRows(r, s.layer, s.head);
    if (map) return { map };
    return {
      empty: s.generation
        ? `Layer ${s.layer + 1}'s maps come when the generation ends: this text is too long for every layer's maps.`
        : `Computing layer ${s.layer + 1}'s maps…`,
    };
  }
  const a = currentAcross(s);
  if (!a) return { empty: s.errors.across ?? `Computing ${s.view} through all ${r.shape[0]} layers…` };
  return a.matrix ? { map: matrixRows(a.matrix, r.tokens.length) } : { empty: a.note };
}

export function mapView(page: Page): View {
  const canvas = $<HTMLCanvasElement>('map');
  const zoom = canvas.parentElement!.querySelector<HTMLElement>('.zoom')!;
  const empty = $('map-empty');
  const readout = $('cell');
  const windowNote = $('map-window');
  const hint = readout.textContent ?? '';
  const layerSelect = $<HTMLSelectElement>('layer');
  const headSelect = $<HTMLSelectElement>('head');
  const aggregateSelect = $<HTMLSelectElement>('aggregate');
  const aggregateNote = $('map-aggregate');
  /** The alignment shown, computed again only when its maps, layer, head or choice change. */
  let aligned: { key: unknown[]; value: Alignment | null } | null = null;
  const alignmentOf = (s: Readonly<State>): Alignment | null => {
    if (!aligns(s)) return null;
    const key = [s.result, s.layer, s.head, s.aggregate];
    if (!aligned || key.some((k, i) => k !== aligned!.key[i]))
      aligned = { key, value: alignment(s.result!, s.layer, s.head, s.aggregate) };
    return aligned.value;
  };
  const vp = new Viewport();
  const pictures = new MapCanvas();
  const dirty = changes();
  /** Draw times of the last frames, in ms: the test reports them. */
  const frames: number[] = [];
  let frame: MapFrame | null = null;
  let hover: { i: number; j: number } | null = null;
  /** Colours from 0 to what the cells in view reach instead of to 1: long inputs spread thin. */
  let stretch = false;
  const stretchButton = $<HTMLButtonElement>('stretch');
  let cursor: { i: number; j: number } | null = null;
  let pending = 0;
  /** A layout the next frame does first: a new map, or the same one grown by rows. */
  let relayout: { n: number; m: number; growing: boolean } | null = null;
  /** The tokens the canvas's data-tokens names. */
  let labelled: string[] | null = null;
  const viewRadios = [...document.querySelectorAll<HTMLInputElement>('input[name=view]')];

  const dpr = () => window.devicePixelRatio || 1;
  const point = (e: MouseEvent) => {
    const rect = canvas.getBoundingClientRect();
    return { x: e.clientX - rect.left, y: e.clientY - rect.top };
  };

  /** The plot box in the canvas, from the canvas's and the zoom buttons' boxes on the page: read when they resize. */
  let plot: { x: number; y: number; w: number; h: number } | null = null;
  function measure(): void {
    const { clientWidth: w, clientHeight: h } = canvas;
    if (!w || !h) return;
    if (canvas.width !== Math.round(w * dpr()) || canvas.height !== Math.round(h * dpr())) {
      canvas.width = Math.round(w * dpr());
      canvas.height = Math.round(h * dpr());
    }
    const room = labelRoom(Math.min(w, h));
    // A note at the foot of the map (a local window, the heads taken together) keeps its band clear of the map.
    const notes = [windowNote, aggregateNote].reduce(
      (most, n) => (n.hidden ? most : Math.max(most, n.offsetHeight + 8)),
      0,
    );
    const square = (top: number) => Math.max(40, Math.min(w - room - 8, h - top - room - 8 - notes));
    // Square cells; the map sits in the middle of the room it leaves across. The zoom buttons sit in the top right
    // corner, over the band where the keys' labels stand: the map keeps its labels clear of them, centred in the
    // width left of the buttons if it fits there, else lowered below them.
    const buttons = zoom.getBoundingClientRect(),
      box = canvas.getBoundingClientRect();
    const left = buttons.width ? buttons.left - box.left - 4 : w;
    // Where the band of the keys' labels starts: the canvas's top, or just below the buttons.
    const top = room + square(0) <= left ? 0 : Math.max(0, Math.ceil(buttons.bottom - box.top) + 4);
    const side = square(top);
    const x = room + Math.max(0, Math.floor(((top ? w - 8 : left) - room - side) / 2));
    canvas.dataset.labelTop = String(top); // the tests check the band against the buttons
    plot = { x, y: top + room, w: side, h: side };
  }

  /**
   * Lays the viewport out for n query and m key tokens in the plot box; a grown map keeps the zoom and the last rows
   * in view.
   */
  function layout(n: number, m: number, growing = false): void {
    if (!plot) measure();
    if (plot) vp.reset(n, plot, growing, m);
  }

  function draw(): void {
    pending = 0;
    if (!frame) return;
    if (relayout) layout(relayout.n, relayout.m, relayout.growing);
    relayout = null;
    const start = performance.now();
    const ctx = canvas.getContext('2d')!;
    ctx.setTransform(dpr(), 0, 0, dpr(), 0, 0);
    const f = { ...frame, hover, cursor };
    const cells = drawMap(ctx, canvas.width / dpr(), canvas.height / dpr(), f, vp, pictures, dpr());
    frames.push(performance.now() - start);
    if (frames.length > 600) frames.splice(0, frames.length - 600);
    canvas.classList.toggle('zoomed', vp.zoomed);
    Object.assign(canvas.dataset, {
      x0: String(vp.x(0)),
      y0: String(vp.y(0)),
      cell: String(vp.cell),
      rows: String(frame.tokens.length),
      labelEvery: String(labelStep(vp.cell)),
      drawnCells: String(cells),
      top: String(pictures.top),
    });
  }
  const redraw = () => (pending ||= requestAnimationFrame(draw));

  /** Names cell (i, j) in full, with its exact weight. */
  function read(i: number, j: number): void {
    if (!frame) return;
    const w = frame.map.row(i)[j] ?? 0;
    readout.textContent = `“${frame.tokens[i]}” → “${(frame.keyTokens ?? frame.tokens)[j]}”: ${w.toFixed(6)}`;
    Object.assign(readout.dataset, { row: String(i), col: String(j), weight: String(w) });
  }

  canvas.addEventListener('pointermove', (e) => {
    if (!frame) return;
    const p = point(e);
    if (drag && e.buttons) {
      vp.pan(p.x - drag.x, p.y - drag.y);
      drag.moved ||= Math.abs(p.x - drag.x0) + Math.abs(p.y - drag.y0) > 3;
      Object.assign(drag, p);
      canvas.classList.toggle('dragging', drag.moved);
      return redraw();
    }
    const at = vp.cellAt(p.x, p.y);
    if (at) read(at.i, at.j);
    if (at?.i !== hover?.i || at?.j !== hover?.j) {
      hover = at;
      redraw();
    }
  });
  canvas.addEventListener('pointerleave', () => {
    hover = null;
    redraw();
  });
  let drag: { x: number; y: number; x0: number; y0: number; moved: boolean } | null = null;
  // The cell the pointer went down on: pressing the map focuses it, and the page may scroll the map into view before
  // the click, which would then land on another cell (a click's whole-pixel coordinates can also fall off the first
  // row of a 257-token map).
  let pressed: { i: number; j: number } | null = null;
  canvas.addEventListener('pointerdown', (e) => {
    const p = point(e);
    pressed = vp.cellAt(p.x, p.y);
    canvas.dataset.pressed = pressed ? `${pressed.i},${pressed.j}` : '';
    // A tap has no hover before it: the cell pressed is read out (and marked) as a hovered one is.
    if (pressed && frame) {
      read(pressed.i, pressed.j);
      hover = pressed;
      redraw();
    }
    if (e.button !== 0 || (e.pointerType === 'touch' && !vp.zoomed)) return;
    drag = { ...p, x0: p.x, y0: p.y, moved: false };
    canvas.setPointerCapture(e.pointerId);
  });
  /** Whether the pointer that just went up dragged the map (then its click explains nothing). */
  let dragged = false;
  const endDrag = () => {
    dragged = !!drag?.moved;
    drag = null;
    canvas.classList.remove('dragging');
  };
  /**
   * A cell of a head's own map (not rollout, flow or the heads taken together) opens the Why pane on it: its score
   * taken apart by its sources.
   */
  function explain(i: number, j: number): void {
    const s = page.store.get();
    const whole = aligns(s) && s.aggregate !== 'head';
    if (s.view !== 'head' || s.result?.mode !== 'model' || whole) return;
    page.store.select({ explain: { what: 'score', query: i, key: j }, main: 'why' });
  }
  canvas.addEventListener('click', () => {
    const at = pressed;
    pressed = null;
    if (frame && !dragged && at) explain(at.i, at.j);
  });
  canvas.addEventListener('pointerup', endDrag);
  canvas.addEventListener('pointercancel', endDrag);
  canvas.addEventListener(
    'wheel',
    (e) => {
      if (!frame) return;
      e.preventDefault();
      const p = point(e);
      vp.zoom(Math.exp(-e.deltaY * (e.deltaMode ? 0.05 : 0.0015)), p.x - vp.box.x, p.y - vp.box.y);
      redraw();
    },
    { passive: false },
  );

  function zoomBy(factor: number | 'fit'): void {
    if (factor === 'fit') vp.fitAll();
    else if (cursor) vp.zoom(factor, vp.x(cursor.j + 0.5) - vp.box.x, vp.y(cursor.i + 0.5) - vp.box.y);
    else vp.zoom(factor);
    redraw();
  }
  stretchButton.addEventListener('click', () => {
    stretch = !stretch;
    stretchButton.setAttribute('aria-pressed', String(stretch));
    view.render(page.store.get());
  });
  for (const b of document.querySelectorAll<HTMLButtonElement>('button[data-zoom]'))
    b.addEventListener('click', () => zoomBy({ in: 2, out: 0.5, fit: 'fit' as const }[b.dataset.zoom as 'in']));

  const MOVES: Record<string, [number, number]> = {
    ArrowLeft: [0, -1],
    ArrowRight: [0, 1],
    ArrowUp: [-1, 0],
    ArrowDown: [1, 0],
  };
  canvas.addEventListener('keydown', (e) => {
    if (!frame) return;
    if (e.key === 'Enter' && cursor) return explain(cursor.i, cursor.j);
    const zoom = { '+': 2, '=': 2, '-': 0.5, _: 0.5, '0': 'fit' as const }[e.key];
    if (zoom) {
      e.preventDefault();
      return zoomBy(zoom);
    }
    const move = MOVES[e.key];
    if (!move) return;
    e.preventDefault();
    if (e.shiftKey) {
      vp.pan((-move[1] * vp.box.w) / 4, (-move[0] * vp.box.h) / 4);
      return redraw();
    }
    const n = frame.tokens.length,
      m = frame.keyTokens?.length ?? n;
    const from = cursor ?? { i: Number(readout.dataset.row ?? 0), j: Number(readout.dataset.col ?? 0) };
    cursor = { i: clamp(from.i + move[0], n), j: clamp(from.j + move[1], m) };
    vp.reveal(cursor.i, cursor.j);
    read(cursor.i, cursor.j);
    page.store.select({ token: cursor.i });
    redraw();
  });

  layerSelect.addEventListener('change', () => page.store.select({ layer: Number(layerSelect.value) }));
  headSelect.addEventListener('change', () => page.store.select({ head: Number(headSelect.value) }));
  // The best head by entropy is the head in view: the head select, the grid's outline and the math pane follow it.
  page.store.subscribe((s) => {
    const best = s.aggregate === 'entropy' ? alignmentOf(s)?.head : undefined;
    if (best !== undefined && best !== s.head) page.store.select({ head: best });
  });
  aggregateSelect.addEventListener('change', () =>
    page.store.select({ aggregate: aggregateSelect.value as Aggregate }),
  );
  for (const radio of document.querySelectorAll<HTMLInputElement>('input[name=view]'))
    radio.addEventListener('change', () => {
      const view = radio.value as Shows;
      page.store.select(view === 'head' ? { view } : { view, tools: 'across' });
    });

  /** Measures the room again and lays the map out in it: on a resize, or when a note at its foot comes or goes. */
  function refit(): void {
    measure();
    if (!frame) return;
    layout(frame.tokens.length, frame.keyTokens?.length ?? frame.tokens.length);
    redraw();
  }
  new ResizeObserver(refit).observe(canvas);
  const notesChanged = changes();

  const view: View & { frames: number[] } = {
    id: 'map',
    render(s) {
      const r = s.result;
      if (!r) return;
      const heads = r.shape[1];
      setOptions(layerSelect, r.layers, s.layer);
      setOptions(headSelect, heads, s.head);
      setText($('layer-label'), String(s.layer + 1));
      setText($('head-label'), String(s.head + 1));
      // Rollout and flow follow one sequence attending to itself: not offered over cross-attention, nor over a speech
      // model's maps (its run decodes; it computes neither).
      const speech = kindIn(s) === 'speech';
      const offAcross = r.set === 'cross' || speech;
      for (const radio of viewRadios) {
        setProp(radio, 'checked', radio.value === s.view);
        setProp(radio, 'disabled', offAcross && radio.value !== 'head');
        setProp(
          radio.parentElement!,
          'title',
          offAcross && radio.value !== 'head'
            ? speech && r.set !== 'cross'
              ? "Rollout and flow are not computed for a speech model's maps"
              : "Rollout and flow follow one sequence's attention to itself down the layers; cross-attention reads another sequence"
            : '',
        );
      }
      const align = alignmentOf(s);
      setProp($('aggregate-row'), 'hidden', !aligns(s));
      setProp(aggregateSelect, 'value', s.aggregate);
      // The head select stands for the map only while it shows one chosen head.
      setProp(headSelect, 'disabled', !!align && s.aggregate !== 'head');
      const note = align ? describe(align, s.layer) : '';
      setProp(aggregateNote, 'hidden', !note);
      setText(aggregateNote, note);
      const shownHead = align ? (align.head ?? -1) : s.head;
      if (canvas.dataset.aggregate !== (align?.aggregate ?? '')) canvas.dataset.aggregate = align?.aggregate ?? '';
      if (canvas.dataset.shownHead !== String(shownHead)) canvas.dataset.shownHead = String(shownHead);
      const what = shown(s, align);
      const map = what && 'map' in what ? what.map : null;
      if (labelled !== r.tokens) canvas.dataset.tokens = JSON.stringify((labelled = r.tokens));
      if (canvas.dataset.keys !== JSON.stringify(r.keyTokens ?? null))
        canvas.dataset.keys = JSON.stringify(r.keyTokens ?? null);
      const data = { layer: String(s.layer), head: String(s.head), view: s.view };
      for (const [k, v] of Object.entries(data)) if (canvas.dataset[k] !== v) canvas.dataset[k] = v;
      setProp(empty, 'hidden', !!map);
      setText(empty, what && 'empty' in what ? what.empty : '');
      // A local layer's window edge, on a model's own map of that layer.
      const window = s.view === 'head' && r.mode === 'model' ? (s.model?.window?.[s.layer] ?? 0) : 0;
      if (canvas.dataset.window !== String(window)) canvas.dataset.window = String(window);
      setProp(windowNote, 'hidden', !window);
      setText(
        windowNote,
        window
          ? `Layer ${s.layer + 1} is local: each token sees itself and the ${window - 1} before it (sliding window of ${window}); the dashed line marks the edge.`
          : '',
      );
      if (notesChanged(note, window)) refit();
      const source = s.view === 'head' ? r.attentions : currentAcross(s)?.matrix;
      const key = `${s.layer}:${shownHead}:${s.view}:${align?.aggregate ?? ''}`;
      if (
        !dirty(
          map && source,
          key,
          r.tokens,
          r.keyTokens,
          s.layer,
          s.head,
          s.view,
          s.token,
          page.colours().fg,
          stretch,
          window,
        )
      )
        return;
      if (!map) {
        frame = null;
        canvas.getContext('2d')!.clearRect(0, 0, canvas.width, canvas.height);
        return;
      }
      const n = r.tokens.length;
      // The same map with rows added (generation): the same run's blocks, the same head, more tokens.
      const growing = !!frame && frame.source === source && frame.key === key && n > frame.tokens.length;
      if (frame?.tokens !== r.tokens && !growing) {
        cursor = hover = null;
        readout.textContent = hint;
        delete readout.dataset.row;
        delete readout.dataset.col;
      }
      frame = {
        map,
        source,
        key,
        stretch,
        causal: r.causal && s.view === 'head',
        tokens: r.tokens,
        keyTokens: r.keyTokens,
        token: s.token,
        hover,
        cursor,
        colours: page.colours(),
        window,
        lineage: s.view === 'head' && ownRows(r) ? { of: s.model, ids: r.ids } : undefined,
      };
      // The cell read out under the pointer, of the same tokens, is read again from what the map now shows (another
      // head, layer or aggregate).
      if (readout.dataset.row !== undefined) read(Number(readout.dataset.row), Number(readout.dataset.col));
      // Laid out at the frame: reading the canvas's box now would make the browser lay the page out at every change.
      relayout = { n, m: r.keyTokens?.length ?? n, growing: growing || !!relayout?.growing };
      redraw();
    },
    export: {
      canvas: () => canvas,
      size: () => ({ width: canvas.width / dpr(), height: canvas.height / dpr() }),
      draw: (c) =>
        frame && drawMap(c.getContext('2d')!, c.width, c.height, { ...frame, hover: null, cursor: null }, vp, pictures),
    },
    frames,
  };
  return view;
}

const clamp = (x: number, n: number) => Math.max(0, Math.min(x, n - 1));

function setOptions(select: HTMLSelectElement, count: number, value: number): void {
  if (select.options.length !== count)
    select.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i + 1), String(i))));
  setProp(select, 'value', String(value));
}
