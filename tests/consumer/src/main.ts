// src/main.ts: the page starts the worker and draws each map it sends, a pixel per weight (white 0 to blue 1)
import type { AttentionMap } from './worker.ts';

const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
worker.onerror = (event) => document.body.append(`The worker failed: ${event.message}`);
worker.onmessage = ({ data }: MessageEvent<AttentionMap>) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = data.n;
  canvas.style.cssText = 'width: 240px; image-rendering: pixelated';
  const context = canvas.getContext('2d')!;
  const image = context.createImageData(data.n, data.n);
  data.weights.forEach((w, i) => image.data.set([255 * (1 - w), 255 * (1 - w), 255, 255], i * 4));
  context.putImageData(image, 0, 0);
  const caption = document.createElement('figcaption');
  caption.textContent = `${data.title}. ${data.info.build}, ${data.info.threads} thread(s): ${data.info.reason}`;
  const figure = document.createElement('figure');
  figure.append(canvas, caption);
  document.body.append(figure);
};
