// The side panel's inputs: which model (the embedded default, a Hub id, files chosen or dropped),
// the text, and which attention; and what they say back: the model, the load's progress or error,
// the run's size and time, and the engine's build.
import type { Mode, Source } from '../protocol.js';
import { $, type Page, type View } from './view.js';

/** Starts loading a model; the reply (or an error) lands in the state. */
export function load(page: Page, source: Source, transfer: Transferable[] = []): void {
  page.ask({ kind: 'load', source }, transfer);
  const message = source.kind === 'hub' ? `Downloading ${source.id}…` : 'Loading…';
  page.store.put({ loading: { state: 'loading', message, progress: source.kind === 'hub' ? 0 : undefined } });
  page.store.select({ modelId: source.kind === 'hub' ? source.id : source.kind });
}

export function sourceView(page: Page): View {
  const text = $<HTMLTextAreaElement>('text');
  const hub = $<HTMLInputElement>('hub-id');
  text.addEventListener('input', () => page.store.select({ text: text.value }));
  for (const radio of document.querySelectorAll<HTMLInputElement>('input[name=mode]'))
    radio.addEventListener('change', () => page.store.select({ mode: radio.value as Mode }));
  $('shuffle').addEventListener('click', () => {
    const words = text.value.split(/\s+/).filter(Boolean);
    for (let i = words.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [words[i], words[j]] = [words[j], words[i]];
    }
    page.store.select({ text: words.join(' ') });
  });
  $('load-default').addEventListener('click', () => load(page, { kind: 'default' }));
  $('load-hub').addEventListener('click', () => load(page, { kind: 'hub', id: hub.value.trim() }));
  hub.addEventListener('keydown', (e) => e.key === 'Enter' && $('load-hub').click());

  async function loadFiles(list: FileList | File[]): Promise<void> {
    const files: Record<string, ArrayBuffer> = {};
    for (const f of list) files[f.name] = await f.arrayBuffer();
    load(page, { kind: 'files', files }, Object.values(files));
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

  return {
    id: 'source',
    render(s) {
      if (text.value !== s.text) text.value = s.text;
      if (s.modelId !== 'default' && s.modelId !== 'files' && !hub.value) hub.value = s.modelId;
      for (const radio of document.querySelectorAll<HTMLInputElement>('input[name=mode]'))
        radio.checked = radio.value === s.mode;
      const name = $('model-name');
      if (s.model) {
        const m = s.model;
        const title = m.name === m.architecture ? m.name : `${m.name} (${m.architecture})`;
        name.textContent = `${title}: ${m.layers} layers × ${m.heads} heads, up to ${m.maxTokens} tokens`;
        name.dataset.architecture = m.architecture;
      }
      const loading = $('load-status');
      loading.textContent = s.loading.message;
      loading.dataset.state = s.loading.state;
      const progress = $<HTMLProgressElement>('progress');
      progress.hidden = s.loading.state !== 'loading' || s.loading.progress === undefined;
      progress.value = s.loading.progress ?? 0;
      const status = $('status');
      const r = s.result;
      status.dataset.state = s.runError ? 'error' : 'ok';
      status.textContent = s.runError
        ? `Error: ${s.runError}`
        : r
          ? `${r.tokens.length} tokens · ${r.ms.toFixed(1)} ms` +
            (r.truncated ? ` · truncated: the model reads at most ${r.tokens.length} of ${r.totalTokens} tokens` : '')
          : '';
      const e = s.engine;
      if (!e) return;
      const info = $('engine-info');
      info.textContent =
        `attnscope ${e.version} · ${e.build} build · ${e.threads} thread${e.threads > 1 ? 's' : ''}` +
        (e.simd ? ' · SIMD128' : '') +
        (e.relaxedSimd ? ' with relaxed SIMD (fused multiply-add)' : '') +
        (e.isolated ? '' : ' · this page is not cross-origin isolated, so it runs single-threaded');
      info.dataset.build = e.build;
    },
  };
}
