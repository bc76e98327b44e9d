// The model picker: every family's models by name, each with what it downloads and the heap it needs (written here
// for the language models; asked of the Hub's file list for the others when one is chosen); one that will not fit
// says so, and is refused before anything downloads. Any Hub id; the embedded default (the offline first load); or
// files chosen or dropped (a checkpoint's, or a decoder's GGUF), which will not be read if the weights cannot fit. It
// says how the load goes: progress, done, or why not.
import { FAMILIES, gib, heapNeeds, MODELS, size, sizesOf, type Entry } from '../catalogue.js';
import type { Source } from '../protocol.js';
import { isAudio } from '../audio.js';
import { isImage } from './image-input.js';
import { $, changes, setProp, setText, type Page, type View } from './view.js';

/** Starts loading a model; the reply (or an error) lands in the state. A generation in progress stops first. */
export function load(page: Page, source: Source, transfer: Transferable[] = []): void {
  const g = page.store.get().generation;
  if (g) {
    page.ask({ kind: 'stop' });
    page.store.select({ text: g.prompt + g.text, ids: null }, { generation: null });
  }
  page.ask({ kind: 'load', source }, transfer);
  const message = source.kind === 'hub' ? `Downloading ${source.id}…` : 'Loading…';
  // Downloads show a bar from the start; files chosen here are read at once.
  const progress = source.kind === 'files' ? undefined : 0;
  // The link names the model once it has loaded: a load that fails leaves the link and the header as they were.
  page.store.put({
    loading: { state: 'loading', message, progress },
    loadingModel: source.kind === 'hub' ? source.id : source.kind,
  });
}

/** A load that failed, in the page's words; `kept`: a model loaded before it still is. */
export function loadFailed(message: string, kept: boolean): string {
  const stop = /[.!?]$/.test(message) ? '' : '.';
  return `Could not load the model: ${message}${stop}${kept ? ' The previous model is still loaded.' : ''}`;
}

/** A model's weight files, which go to the worker as the Files they are. */
const isWeights = (f: File) => /\.(safetensors|gguf)$/.test(f.name);

/** What a model reads, as a person names it. */
const READS = { text: 'text', image: 'images', audio: 'sound' } as const;
/** The inputs whose files a person may drop meaning them, not a model: how to tell them, and who reads them. */
const INPUTS = [
  { input: 'image', is: isImage, models: 'a vision model (ViT, DeiT, DINOv2, CLIP) to look at an image' },
  { input: 'audio', is: isAudio, models: 'a speech model (Whisper) to transcribe a sound' },
] as const;

export function pickerView(page: Page): View {
  const hub = $<HTMLInputElement>('hub-id');
  const pick = $<HTMLSelectElement>('model-pick');
  const fitNote = $('pick-fit');
  for (const family of FAMILIES) {
    const group = document.createElement('optgroup');
    group.label = family;
    group.append(...MODELS.filter((m) => m.family === family).map((m) => new Option(m.name, m.id)));
    pick.append(group);
  }
  const chosen = () => MODELS.find((m) => m.id === pick.value);
  /** A model whose sizes only the Hub knows is asked about when chosen (again after a failed answer). */
  const ask = (m: Entry | undefined) => {
    const plan = m && page.store.get().plans[m.id];
    if (m && m.weights === undefined && (!plan || 'error' in plan)) page.askPlan(m.id);
  };
  pick.addEventListener('change', () => {
    ask(chosen());
    view.render(page.store.get());
  });
  $('load-pick').addEventListener('click', () => {
    const m = chosen();
    const s = page.store.get();
    const e = s.engine;
    if (!m || !e) return;
    const sizes = sizesOf(m, s.plans[m.id]);
    // Refused here, before anything downloads (the engine would refuse it after the Hub's file list anyway).
    if (sizes && refused(m.name, sizes.weights, 'nothing was downloaded')) return;
    hub.value = m.id;
    load(page, { kind: 'hub', id: m.id });
  });
  $('load-default').addEventListener('click', () => load(page, { kind: 'default' }));
  $('load-hub').addEventListener('click', () => load(page, { kind: 'hub', id: hub.value.trim() }));
  hub.addEventListener('keydown', (e) => e.key === 'Enter' && $('load-hub').click());

  /** Says, where the load's messages go, that weights of this size will not fit; false when they fit. */
  function refused(name: string, weights: number, so: string): boolean {
    const e = page.store.get().engine;
    const fit = e && heapNeeds(weights, e);
    if (!e || !fit || fit.fits) return false;
    const message =
      `${name} needs ${gib(fit.needs)} of heap (${gib(weights)} of weights and ${gib(e.runningRoomBytes)} ` +
      `to run), and ${gib(fit.free)} of the engine's ${gib(e.maxHeapBytes)} is free: it will not fit, so ${so}.`;
    page.store.put({ loading: { state: 'error', message } });
    return true;
  }

  async function loadFiles(list: FileList | File[]): Promise<void> {
    // Images or sounds alone are not a model's files: said in the page's words, and nothing loads (with a model
    // that reads them loaded, its input view takes them before this).
    const m = page.store.get().model;
    const other = m && INPUTS.find((k) => k.input !== m.input && [...list].every(k.is));
    if (m && other) {
      const message =
        `${m.name} reads ${READS[m.input]}, not ${READS[other.input]}: choose ${other.models}, ` +
        "or drop a model's files (its config.json, weights and tokenizer, or a .gguf) to load another model.";
      page.store.put({ loading: { state: 'error', message } });
      return;
    }
    // The weights' size is known before they are read: a model that will not fit is refused first.
    const weights = new Set([...list].filter(isWeights));
    const bytes = [...weights].reduce((sum, f) => sum + f.size, 0);
    if (weights.size && refused([...weights][0]!.name, bytes, 'nothing was read')) return;
    // The weights go to the worker as the Files they are, never read whole (Chromium will not read a File over 2 GB
    // whole, and a smaller one would sit in memory beside the heap): its engine reads a tensor at a time, and a GGUF's
    // header first, refusing one whose weights would not fit.
    const files: Record<string, ArrayBuffer | File> = {};
    for (const f of list) {
      try {
        files[f.name] = weights.has(f) ? f : await f.arrayBuffer();
      } catch {
        const message = `${f.name} could not be read (it was changed or removed after it was chosen)`;
        page.store.put({ loading: { state: 'error', message: loadFailed(message, !!page.store.get().model) } });
        return;
      }
    }
    const read = Object.values(files).filter((v): v is ArrayBuffer => v instanceof ArrayBuffer);
    load(page, { kind: 'files', files }, read);
  }
  $<HTMLInputElement>('files').addEventListener('change', (e) => {
    const input = e.target as HTMLInputElement;
    if (input.files?.length) void loadFiles(input.files);
  });
  document.addEventListener('dragover', (e) => e.preventDefault());
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    if (e.dataTransfer?.files.length) void loadFiles(e.dataTransfer.files);
  });

  const fitting = changes();
  const view: View = {
    id: 'picker',
    render(s) {
      if (s.modelId !== 'default' && s.modelId !== 'files' && !hub.value) hub.value = s.modelId;
      const e = s.engine;
      if (e && fitting(e, pick.value, s.plans)) {
        for (const option of pick.querySelectorAll('option')) {
          const m = MODELS.find((x) => x.id === option.value);
          if (!m) continue;
          const sizes = sizesOf(m, s.plans[m.id]);
          if (!sizes) {
            setText(option, m.name);
            continue;
          }
          const fit = heapNeeds(sizes.weights, e);
          setText(
            option,
            `${m.name}: ${size(sizes.download)}, needs ${gib(fit.needs)}${fit.fits ? '' : ' (too large)'}`,
          );
          option.dataset.fits = String(fit.fits);
        }
        const m = chosen();
        const plan = m && s.plans[m.id];
        const sizes = m && sizesOf(m, plan);
        const fit = sizes && heapNeeds(sizes.weights, e);
        fitNote.hidden = !m;
        fitNote.dataset.fits = String(fit ? fit.fits : true);
        if (m && sizes && fit)
          fitNote.textContent =
            `${m.id} (${m.about}): ${size(sizes.download)} to download once, then kept; ${gib(fit.needs)} of heap ` +
            `(${gib(sizes.weights)} of weights, ${gib(e.runningRoomBytes)} to run), ${gib(fit.free)} free` +
            (fit.fits ? '.' : ': too large for this page, so it will not be downloaded.') +
            (m.weights === undefined ? " (Sizes from the Hub's file list.)" : '');
        else if (m)
          fitNote.textContent =
            plan && 'error' in plan
              ? `${m.id} (${m.about}): the Hub could not say its size (${plan.error}); loading checks that it fits ` +
                'before its weights download.'
              : `${m.id} (${m.about}): asking the Hub for its size…`;
      }
      const loading = $('load-status');
      setText(loading, s.loading.message);
      if (loading.dataset.state !== s.loading.state) loading.dataset.state = s.loading.state;
      const progress = $<HTMLProgressElement>('progress');
      setProp(progress, 'hidden', s.loading.state !== 'loading' || s.loading.progress === undefined);
      setProp(progress, 'value', s.loading.progress ?? 0);
    },
  };
  return view;
}
