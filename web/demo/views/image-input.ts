// The side panel in image mode (a vision model is loaded): the text's controls give way to an image's: choose a
// file, drop or paste one anywhere on the page, or take a sample drawn by the page. It says what became of the
// image (its size, scaled down, refused, unreadable) and, for classifiers, the model's five likeliest labels. An
// image that cannot be read leaves the last one in place, and the page as it was.
import { decodeImage, sampleImage, SAMPLES } from '../images.js';
import type { PageImage } from '../state.js';
import { $, setProp, setText, takeFiles, type Page, type View } from './view.js';
import { kindIn } from '../kinds/page.js';

const IMAGE_FILE = /\.(png|jpe?g|gif|webp|bmp|avif|ico|svg)$/i;
export const isImage = (f: File) => f.type.startsWith('image/') || IMAGE_FILE.test(f.name);

export function imageInputView(page: Page): View {
  const samples = $('image-samples');
  for (const [key, sample] of Object.entries(SAMPLES)) {
    const b = document.createElement('button');
    b.type = 'button';
    b.dataset.sample = key;
    b.textContent = key[0].toUpperCase() + key.slice(1);
    b.title = sample.title;
    samples.append(b);
  }
  /** The image being decoded: a later choice wins over one still decoding. */
  let decoding = 0;

  async function use(make: () => Promise<PageImage>, what: string): Promise<void> {
    const ticket = ++decoding;
    page.store.put({ imageNotice: { state: 'busy', message: `Reading ${what}…` } });
    try {
      const image = await make();
      if (ticket !== decoding) return [image.bitmap, image.forWorker].forEach((b) => b?.close());
      // The worker's copy, made where it was decoded, moves there (no copy of its pixels on the page's thread).
      page.sendImage(image.id, image.forWorker!);
      image.forWorker = null;
      const old = page.store.get().image;
      page.store.select({ image }, { imageNotice: image.notice ? { state: 'ok', message: image.notice } : null });
      old?.bitmap.close();
    } catch (err) {
      if (ticket !== decoding) return;
      const message = err instanceof Error ? err.message : String(err);
      const kept = page.store.get().image ? ' The last image stays.' : '';
      page.store.put({
        imageNotice: { state: 'error', message: `${message}${/[.!?)]$/.test(message) ? '' : '.'}${kept}` },
      });
    }
  }
  const useFile = (file: File) => use(() => decodeImage(file, file.name), file.name);
  const useSample = (key: string) => use(() => sampleImage(key), 'the sample');

  samples.addEventListener('click', (e) => {
    const b = (e.target as Element).closest<HTMLButtonElement>('button[data-sample]');
    if (b) void useSample(b.dataset.sample!);
  });
  // With a vision model loaded, an image chosen or dropped is the image.
  const vision = () => kindIn(page.store.get()) === 'image';
  takeFiles($<HTMLInputElement>('image-file'), vision, isImage, (f) => void useFile(f));
  document.addEventListener('paste', (e) => {
    if (kindIn(page.store.get()) !== 'image') return;
    const file = [...(e.clipboardData?.files ?? [])].find(isImage);
    if (!file) return;
    e.preventDefault();
    void useFile(file);
  });

  return {
    id: 'image-input',
    render(s) {
      const on = vision();
      if (document.body.classList.contains('vision') !== on) document.body.classList.toggle('vision', on);
      setProp($('image-input'), 'hidden', !on);
      setProp($('tab-image'), 'hidden', !on);
      // The first image for a vision model: the sample a link names, or the first.
      if (on && !s.image && !s.imageNotice) void useSample(s.pendingSample ?? 'shapes');
      const status = $('image-status');
      const i = s.image;
      const n = s.imageNotice;
      const size = i ? `${i.name}: ${i.bitmap.width} × ${i.bitmap.height}` : '';
      setText(status, n ? n.message : size);
      const state = n?.state ?? 'ok';
      if (status.dataset.state !== state) status.dataset.state = state;
      const labels = s.result?.vision?.labels ?? [];
      setProp($('image-labels'), 'hidden', !labels.length);
      setText(
        $('image-labels'),
        labels.length
          ? `The model's classifier: ${labels.map((l) => `${l.label} ${(l.probability * 100).toFixed(1)}%`).join(' · ')}`
          : '',
      );
    },
  };
}
