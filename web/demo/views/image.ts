// The image pane (vision models): the model's input with each patch's value laid over it (vision.ts says which
// values), an opacity slider, the norms' layer, which way hovering reads, and a second model beside the first on the
// same image. Hover a patch to see what it attends to or what attends to it; click it to make it the token in focus
// (the map's row, the head view's token); the arrow keys walk the patches. The canvas carries what it draws as data
// attributes (`data-figures`), for the browser tests to hold against the engine's maps.
import { drawFigures, format, heatTile, layoutFigures, patchAt, pictureCanvas, type Figure } from '../draw/overlay.js';
import type { Source } from '../protocol.js';
import { modelName } from '../protocol.js';
import type { Overlay, State } from '../state.js';
import { firstPatch, shownOf, type FigureRun } from '../vision.js';
import { $, changes, setProp, setText, type Page, type View } from './view.js';
import { kindIn } from '../kinds/page.js';

/** The runs the pane draws: the loaded model's, and the second model's when it ran on the same image. */
function runsOf(s: Readonly<State>): FigureRun[] {
  const r = s.result;
  if (!r?.vision || !s.model || kindIn(s) !== 'image') return [];
  const runs: FigureRun[] = [
    {
      title: s.model.name,
      tokens: r.tokens,
      attentions: r.attentions,
      shape: r.shape,
      mapLayers: r.mapLayers,
      vision: r.vision,
    },
  ];
  const b = s.beside;
  if (b && b.vision.image === r.vision.image)
    runs.push({
      title: b.model,
      tokens: b.tokens,
      attentions: b.attentions,
      shape: b.shape,
      mapLayers: b.shape[0] ? Array.from({ length: b.shape[0] }, (_, l) => l) : [],
      vision: b.vision,
    });
  return runs;
}

export function imageView(page: Page): View {
  const canvas = $<HTMLCanvasElement>('overlay');
  const empty = $('image-empty');
  const readout = $('overlay-readout');
  const note = $('overlay-note');
  const hint = readout.textContent ?? '';
  const opacity = $<HTMLInputElement>('opacity');
  const opacityValue = $('opacity-value');
  const normLayer = $<HTMLSelectElement>('norm-layer');
  const hoverShows = $<HTMLSelectElement>('hover-shows');
  const legend = $('overlay-heads');
  const radios = [...document.querySelectorAll<HTMLInputElement>('input[name=overlay]')];
  const dirty = changes();
  let runs: FigureRun[] = [];
  let figures: Figure[] = [];
  let layout: (ReturnType<typeof layoutFigures> & { width: number }) | null = null;
  let pictures: OffscreenCanvas[] = [];
  let hover: { figure: number; patch: number } | null = null;
  let pending = 0;
  const dpr = () => window.devicePixelRatio || 1;

  for (const radio of radios)
    radio.addEventListener('change', () => page.store.select({ overlay: radio.value as Overlay }));
  opacity.addEventListener('input', () => page.store.select({ opacity: Number(opacity.value) }));
  normLayer.addEventListener('change', () =>
    page.store.select({ normLayer: normLayer.value === 'last' ? null : Number(normLayer.value) }),
  );
  hoverShows.addEventListener('change', () => page.store.select({ hoverShows: hoverShows.value as 'from' | 'to' }));
  legend.addEventListener('click', (e) => {
    const button = (e.target as Element).closest<HTMLButtonElement>('button[data-head]');
    if (!button) return;
    const active = [...page.store.get().activeHeads];
    active[Number(button.dataset.head)] = !active[Number(button.dataset.head)];
    page.store.select({ activeHeads: active });
  });

  /** The figures for the state and the hovered patch; the tiles and the layout follow. */
  function compose(s: Readonly<State>): void {
    const choice = {
      overlay: s.overlay,
      layer: s.layer,
      head: s.head,
      normLayer: s.normLayer,
      activeHeads: s.activeHeads,
    };
    figures = runs.map((run, i) => ({
      run,
      shown: shownOf(run, choice, hover && hover.figure === i ? { patch: hover.patch, shows: s.hoverShows } : null),
    }));
    // Hovering one figure shows the same patch's row in the other, where its grid is the same.
    if (hover && figures.length > 1)
      figures = figures.map((f, i) => {
        if (i === hover!.figure) return f;
        const same = f.run.vision.grid.join() === runs[hover!.figure].vision.grid.join();
        return same ? { run: f.run, shown: shownOf(f.run, choice, { patch: hover!.patch, shows: s.hoverShows }) } : f;
      });
    const width = Math.max(240, canvas.parentElement!.clientWidth - 2);
    layout = { ...layoutFigures(width, figures, pictureRoom()), width };
    describe();
    redraw();
  }

  /** The height the figures may fill: what the pane shows under its controls, or on a phone (panes stack) 600 px. */
  function pictureRoom(): number {
    const body = canvas.closest<HTMLElement>('.pane-body');
    if (!body || matchMedia('(max-width: 760px)').matches) return 600;
    return Math.max(200, body.clientHeight - 70);
  }

  function draw(): void {
    pending = 0;
    if (!layout || !figures.length) return;
    const { width, height } = layout;
    canvas.style.height = `${height}px`;
    canvas.style.width = `${width}px`;
    const [w, h] = [Math.round(width * dpr()), Math.round(height * dpr())];
    if (canvas.width !== w || canvas.height !== h) Object.assign(canvas, { width: w, height: h });
    const ctx = canvas.getContext('2d')!;
    ctx.setTransform(dpr(), 0, 0, dpr(), 0, 0);
    paint(ctx, width, height);
    canvas.dataset.boxes = JSON.stringify(layout.figures.map((f) => [f.box.x, f.box.y, f.box.w, f.box.h]));
  }
  const redraw = () => (pending ||= requestAnimationFrame(draw));

  function paint(ctx: CanvasRenderingContext2D, width: number, height: number): void {
    const s = page.store.get();
    const tiles = figures.map((f) => heatTile(f.shown, ...f.run.vision.grid));
    drawFigures(ctx, width, height, figures, layout!.figures, {
      opacity: s.opacity,
      colours: page.colours(),
      hover,
      pictures,
      tiles,
    });
  }

  /** The data attributes the tests read, and the note under the picture. */
  function describe(): void {
    const data = figures.map((f) => ({
      title: f.run.title,
      what: f.shown.what,
      layer: f.shown.layer,
      head: f.shown.head,
      grid: f.run.vision.grid,
      values: Array.from(f.shown.values),
      extras: f.shown.extras.map((e) => [e.label, e.value]),
      masks: f.shown.masks,
      outliers: f.shown.outliers,
      threshold: f.shown.threshold,
    }));
    canvas.dataset.figures = JSON.stringify(data);
    canvas.dataset.hover = hover ? `${hover.figure}:${hover.patch}` : '';
    const s = page.store.get();
    const parts: string[] = [];
    const f = figures[0];
    if (f?.shown.what === 'norms') {
      const t = f.shown.threshold;
      parts.push(
        `Each token's hidden-state norm. Outlined in red: patches above median + 5 × MAD of the patches' norms` +
          (t !== undefined ? ` (${format(t)})` : '') +
          ' — the high-norm artifacts that soak up attention in ViTs without registers (Darcet et al., 2024). ' +
          (f.run.vision.registers > 0
            ? `This model's ${f.run.vision.registers} registers and [CLS] stand apart, under the picture.`
            : '[CLS] stands apart, under the picture.'),
      );
    } else if (f?.shown.what === 'heads')
      parts.push(
        "Each head's colour covers the patches that hold 60% of its [CLS] attention, as in DINO's figures; where " +
          'heads overlap their colours mix. Click a head below to hide or show it.',
      );
    else if (f?.shown.what === 'rollout')
      parts.push("Rollout: [CLS]'s attention followed down through every layer, heads averaged, with the residual.");
    if (f)
      parts.push(
        `The picture is the model's input after its resize and crop (${f.run.vision.picture.width} × ${f.run.vision.picture.height}, ${f.run.vision.grid[0]} × ${f.run.vision.grid[1]} patches of ${f.run.vision.patchSize} px).`,
      );
    if (s.beside && figures.length < 2 && s.result?.vision) parts.push(`${s.beside.model} is running on this image…`);
    setText(note, parts.join(' '));
  }

  /** The readout for a hovered patch: its value in the overlay, and where its row (or column) peaks. */
  function read(): void {
    if (!hover || !figures[hover.figure]) {
      setText(readout, hint);
      return;
    }
    const f = figures[hover.figure];
    const v = f.run.vision;
    const [, cols] = v.grid;
    const s = page.store.get();
    // The grid's row and column, counted from 1 as the page counts layers and heads (the tokens' "patch r,c" from 0).
    const at = (patch: number) => `the patch at row ${Math.floor(patch / cols) + 1}, column ${(patch % cols) + 1}`;
    const label = at(hover.patch);
    const base = shownOf(
      f.run,
      { overlay: s.overlay, layer: s.layer, head: s.head, normLayer: s.normLayer, activeHeads: s.activeHeads },
      null,
    );
    const value = base.values[hover.patch];
    let best = 0;
    f.shown.values.forEach((x, k) => x > f.shown.values[best] && (best = k));
    const peak = at(best);
    const own =
      s.overlay === 'norms'
        ? `norm ${format(value)}${base.outliers.includes(hover.patch) ? ' (a high-norm outlier)' : ''}`
        : s.overlay === 'rollout'
          ? `[CLS] draws ${format(value)} on it through all layers`
          : `[CLS] gives it ${format(value)} in layer ${base.layer + 1}, head ${base.head + 1}`;
    const way = s.hoverShows === 'to' ? `attended to most by ${peak}` : `attends most to ${peak}`;
    setText(
      readout,
      `${f.run.title}, ${label}: ${own}${s.overlay === 'norms' ? '' : `; ${way} (${format(f.shown.values[best])})`}.`,
    );
    readout.dataset.patch = String(hover.patch);
    readout.dataset.value = String(value);
  }

  function setHover(next: { figure: number; patch: number } | null): void {
    if (next?.figure === hover?.figure && next?.patch === hover?.patch) return;
    hover = next;
    compose(page.store.get());
    read();
  }
  const point = (e: MouseEvent) => {
    const rect = canvas.getBoundingClientRect();
    return patchAt(e.clientX - rect.left, e.clientY - rect.top, figures, layout?.figures ?? []);
  };
  canvas.addEventListener('pointermove', (e) => setHover(point(e)));
  canvas.addEventListener('pointerleave', () => setHover(null));
  canvas.addEventListener('click', (e) => {
    const at = point(e);
    if (at) page.store.select({ token: firstPatch(figures[at.figure].run.vision) + at.patch });
  });
  canvas.addEventListener('keydown', (e) => {
    const move = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[e.key];
    if (!move || !figures.length) return;
    e.preventDefault();
    const [rows, cols] = figures[0].run.vision.grid;
    const at = hover?.patch ?? 0;
    const [r, c] = [Math.floor(at / cols) + move[0], (at % cols) + move[1]];
    setHover({
      figure: hover?.figure ?? 0,
      patch: Math.max(0, Math.min(rows - 1, r)) * cols + Math.max(0, Math.min(cols - 1, c)),
    });
  });
  new ResizeObserver(() => {
    if (!figures.length) return;
    layout = null;
    compose(page.store.get());
  }).observe(canvas.parentElement!);

  // The second model: a Hub id or files, run on the same image.
  const besideHub = $<HTMLInputElement>('beside-hub');
  const loadBeside = (source: Source, transfer: Transferable[] = []) => page.loadBeside(source, transfer);
  $('beside-load').addEventListener(
    'click',
    () => besideHub.value.trim() && loadBeside({ kind: 'hub', id: besideHub.value.trim() }),
  );
  besideHub.addEventListener('keydown', (e) => e.key === 'Enter' && $('beside-load').click());
  $<HTMLInputElement>('beside-files').addEventListener('change', async (e) => {
    const input = e.target as HTMLInputElement;
    if (!input.files?.length) return;
    const files: Record<string, ArrayBuffer> = {};
    for (const f of input.files) files[f.name] = await f.arrayBuffer();
    input.value = '';
    loadBeside({ kind: 'files', files }, Object.values(files));
  });
  $('beside-clear').addEventListener('click', () => page.store.put({ beside: null, besideLoading: null }));

  return {
    id: 'image',
    pane: 'image',
    render(s) {
      const vision = kindIn(s) === 'image';
      const next = runsOf(s);
      const hasRun = next.length > 0;
      setProp(empty, 'hidden', hasRun);
      setProp(canvas, 'hidden', !hasRun);
      setText(
        empty,
        !vision
          ? 'The image pane is for vision transformers: load one (facebook/dinov2-small, google/vit-base-patch16-224, facebook/deit-tiny-patch16-224, openai/clip-vit-base-patch32, or its files) and drop, paste or choose an image.'
          : s.imageNotice?.state === 'error'
            ? s.imageNotice.message
            : s.runError
              ? `Error: ${s.runError}`
              : 'Reading the image…',
      );
      for (const radio of radios) setProp(radio, 'checked', radio.value === s.overlay);
      setProp(opacity, 'value', String(s.opacity));
      setText(opacityValue, `${Math.round(s.opacity * 100)}%`);
      setProp(hoverShows, 'value', s.hoverShows);
      setProp($('norm-layer-row'), 'hidden', s.overlay !== 'norms');
      const layers = s.result?.vision ? s.result.layers : 0;
      if (normLayer.options.length !== layers + 1) {
        normLayer.replaceChildren(
          ...Array.from({ length: layers }, (_, l) => new Option(l === 0 ? 'the input' : `layer ${l}`, String(l))),
          new Option(`layer ${layers} (the last)`, 'last'),
        );
      }
      setProp(normLayer, 'value', s.normLayer === null || s.normLayer >= layers ? 'last' : String(s.normLayer));
      // The heads' buttons under the picture, for the all-heads overlay.
      setProp(legend, 'hidden', s.overlay !== 'heads' || !hasRun);
      const heads = s.result?.shape[1] ?? 0;
      if (legend.children.length !== heads)
        legend.replaceChildren(
          ...Array.from({ length: heads }, (_, h) => {
            const b = document.createElement('button');
            b.type = 'button';
            b.dataset.head = String(h);
            b.textContent = `H${h + 1}`;
            b.style.setProperty('--head', `var(--head-${h % 12})`);
            return b;
          }),
        );
      [...legend.children].forEach((b, h) => b.setAttribute('aria-pressed', String(s.activeHeads[h] !== false)));
      const b = s.besideLoading;
      const status = $('beside-status');
      setText(
        status,
        b?.state === 'loading' || b?.state === 'error'
          ? b.message
          : s.beside
            ? `${modelName({ name: s.beside.model, architecture: s.beside.architecture })} beside ${s.model?.name ?? 'the model'}, on the same image.`
            : 'A second vision model beside this one, on the same image: DINOv2 with and without registers, say.',
      );
      if (status.dataset.state !== (b?.state ?? 'ok')) status.dataset.state = b?.state ?? 'ok';
      setProp($<HTMLButtonElement>('beside-clear'), 'disabled', !s.beside);
      if (
        !dirty(
          next.length,
          ...next.map((r) => r.vision),
          s.overlay,
          s.opacity,
          s.layer,
          s.head,
          s.normLayer,
          s.activeHeads,
          s.hoverShows,
          page.colours().fg,
        )
      )
        return;
      const fresh = next.length !== runs.length || next.some((r, i) => r.vision !== runs[i]?.vision);
      runs = next;
      if (fresh) {
        pictures = runs.map((r) => pictureCanvas(r.vision.picture));
        if (hover && !runs[hover.figure]) hover = null;
      }
      if (!hasRun) {
        figures = [];
        return;
      }
      compose(s);
      read();
    },
    export: {
      canvas: () => canvas,
      size: () => ({ width: canvas.width / dpr(), height: canvas.height / dpr() }),
      draw: (c) => paint(c.getContext('2d')!, c.width, c.height),
    },
  };
}
