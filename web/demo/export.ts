// Downloads: PNG and SVG of a view, and the attention tensor as JSON or NumPy .npy.
import { toSvg } from './draw/svg.js';
import { nested, type Maps } from './map-rows.js';

/** Saves bytes under a file name through a temporary link (nothing leaves the computer). */
export function download(name: string, blob: Blob): void {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/**
 * A PNG of the canvas as it is on the page. Encoded synchronously (toDataURL, not
 * toBlob), so that the download starts inside the click that asked for it: browsers
 * hold back downloads that start later, outside a user gesture.
 */
export function downloadPng(name: string, canvas: HTMLCanvasElement): void {
  const base64 = canvas.toDataURL('image/png').split(',')[1];
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  download(`${name}.png`, new Blob([bytes], { type: 'image/png' }));
}

/** An SVG made by running the view's drawing code against an SVG recorder. */
export function downloadSvg(
  name: string,
  size: { width: number; height: number },
  background: string,
  draw: (canvas: HTMLCanvasElement) => void,
): void {
  download(`${name}.svg`, new Blob([toSvg(size.width, size.height, background, draw)], { type: 'image/svg+xml' }));
}

/**
 * The attention tensor with its shape, nested [layer][head][query][key]; the tokens as the vocabulary spells them,
 * their labels as the page shows them, and their ids; across two texts, the keys' labels too.
 */
export function attentionsJson(
  meta: { model: string; text: string; generation?: object },
  run: Maps & { tokens: string[]; pieces: string[]; ids: number[]; keyTokens?: string[] },
): string {
  const { pieces: tokens, tokens: labels, ids, shape, mapLayers, keyTokens } = run;
  const attentions = nested(run);
  const dims = ['layer', 'head', 'query', 'key'];
  // Cross-attention: the keys are the second text's tokens (labels as the page shows them).
  return JSON.stringify({ ...meta, tokens, labels, keyLabels: keyTokens, ids, shape, mapLayers, dims, attentions });
}
