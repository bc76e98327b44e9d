// Images for a vision model, decoded off the page's thread (createImageBitmap in a worker of their own,
// image-worker.ts), with the EXIF orientation applied as the browser shows the image ('from-image') and no colour-profile conversion
// (Pillow, which Hugging Face's image processors call, converts none either). The size is read from the file's
// header first, so that an image too large is scaled down while it decodes (resizeWidth/Height), or refused, before
// its pixels are ever held whole: the engine takes up to 50 megapixels, and the page sends it at most MAX_PIXELS.
// The samples are drawn here, procedurally: made for the project, nothing downloaded.
import type { DecodeReply, DecodeRequest } from './image-worker.js';
import type { PageImage } from './state.js';

let worker: Worker | null = null;
let asked = 0;
type Decoded = { bitmap: ImageBitmap; copy: ImageBitmap };
const waiting = new Map<number, { resolve: (b: Decoded) => void; reject: (e: Error) => void }>();

/** createImageBitmap in the image worker: a Blob, or an ImageBitmap (moved there, so the page's copy is gone). */
function inWorker(source: Blob | ImageBitmap, options: ImageBitmapOptions): Promise<Decoded> {
  if (!worker) {
    // Written out here: bundlers find the worker's entry by this very expression.
    worker = new Worker(new URL('./image-worker.ts', import.meta.url), { type: 'module' });
    worker.onmessage = ({ data }: MessageEvent<DecodeReply>) => {
      const w = waiting.get(data.id);
      waiting.delete(data.id);
      if ('bitmap' in data) w?.resolve(data);
      else w?.reject(new Error(data.error));
    };
  }
  const id = ++asked;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    const transfer = source instanceof ImageBitmap ? [source] : [];
    worker!.postMessage({ id, source, options } satisfies DecodeRequest, transfer);
  });
}

/** Above this many pixels the page scales an image down (keeping its shape) before the model's own resize. */
export const MAX_PIXELS = 16_000_000;
/** The engine's longest side: a longer image is scaled down whatever its pixels. */
export const MAX_SIDE = 16_384;
/** Above this many the page refuses to decode an image at all: its pixels alone would take over a gigabyte. */
export const REFUSE_PIXELS = 250_000_000;

let counter = 0;

const mp = (pixels: number) => (pixels / 1e6).toFixed(pixels < 1e7 ? 1 : 0);

/** Width, height and EXIF orientation (1–8) from a PNG, JPEG, GIF, WebP or BMP header; null when unknown. */
export function headerSize(bytes: Uint8Array): { width: number; height: number; orientation: number } | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = (i: number, ...sig: number[]) => sig.every((b, k) => bytes[i + k] === b);
  if (bytes.length >= 24 && at(0, 0x89, 0x50, 0x4e, 0x47))
    return { width: view.getUint32(16), height: view.getUint32(20), orientation: 1 };
  if (bytes.length >= 10 && at(0, 0x47, 0x49, 0x46))
    return { width: view.getUint16(6, true), height: view.getUint16(8, true), orientation: 1 };
  if (bytes.length >= 26 && at(0, 0x42, 0x4d))
    return { width: Math.abs(view.getInt32(18, true)), height: Math.abs(view.getInt32(22, true)), orientation: 1 };
  if (bytes.length >= 30 && at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) {
    const chunk = String.fromCharCode(...bytes.subarray(12, 16));
    if (chunk === 'VP8X')
      return {
        width: 1 + (bytes[24] | (bytes[25] << 8) | (bytes[26] << 16)),
        height: 1 + (bytes[27] | (bytes[28] << 8) | (bytes[29] << 16)),
        orientation: 1,
      };
    if (chunk === 'VP8L') {
      const b = view.getUint32(21, true);
      return { width: 1 + (b & 0x3fff), height: 1 + ((b >> 14) & 0x3fff), orientation: 1 };
    }
    if (chunk === 'VP8 ')
      return { width: view.getUint16(26, true) & 0x3fff, height: view.getUint16(28, true) & 0x3fff, orientation: 1 };
    return null;
  }
  if (bytes.length >= 4 && at(0, 0xff, 0xd8)) return jpegSize(bytes, view);
  return null;
}

/** A JPEG's frame size (its SOF segment) and the orientation its EXIF block gives. */
function jpegSize(bytes: Uint8Array, view: DataView): { width: number; height: number; orientation: number } | null {
  let orientation = 1;
  for (let i = 2; i + 9 < bytes.length;) {
    if (bytes[i] !== 0xff) return null;
    const marker = bytes[i + 1];
    if (marker === 0xff) {
      i++;
      continue;
    }
    const length = view.getUint16(i + 2);
    if (marker === 0xe1 && at4(bytes, i + 4, 'Exif')) orientation = exifOrientation(bytes, view, i + 10) ?? orientation;
    // SOF0–SOF15 but DHT (C4), JPG (C8) and DAC (CC): height, then width.
    if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker))
      return { height: view.getUint16(i + 5), width: view.getUint16(i + 7), orientation };
    i += 2 + length;
  }
  return null;
}

const at4 = (bytes: Uint8Array, i: number, text: string) => [...text].every((c, k) => bytes[i + k] === c.charCodeAt(0));

/** The Orientation tag (0x0112) of the TIFF block at `start`, if it has one. */
function exifOrientation(bytes: Uint8Array, view: DataView, start: number): number | null {
  if (start + 8 > bytes.length) return null;
  const little = bytes[start] === 0x49;
  const ifd = start + view.getUint32(start + 4, little);
  if (ifd + 2 > bytes.length) return null;
  const entries = view.getUint16(ifd, little);
  for (let e = 0; e < entries; e++) {
    const p = ifd + 2 + e * 12;
    if (p + 12 > bytes.length) return null;
    if (view.getUint16(p, little) === 0x0112) {
      const v = view.getUint16(p + 8, little);
      return v >= 1 && v <= 8 ? v : null;
    }
  }
  return null;
}

const OPTIONS: ImageBitmapOptions = { imageOrientation: 'from-image', colorSpaceConversion: 'none' };

/**
 * Decodes an image file for the model: its EXIF orientation applied, scaled down with a notice when larger than
 * MAX_PIXELS, refused (an Error saying why) when larger than REFUSE_PIXELS or unreadable.
 */
export async function decodeImage(blob: Blob, name: string): Promise<PageImage> {
  const head = headerSize(new Uint8Array(await blob.slice(0, 1 << 16).arrayBuffer()));
  if (head) {
    // Orientations 5 to 8 turn the image a quarter: its width is the file's height.
    const turned = head.orientation >= 5;
    const [width, height] = turned ? [head.height, head.width] : [head.width, head.height];
    const pixels = width * height;
    if (pixels > REFUSE_PIXELS)
      throw new Error(
        `${name} is ${width} × ${height} pixels (${mp(pixels)} megapixels): more than the ${mp(REFUSE_PIXELS)} the ` +
          'page decodes. Scale it down first (a vision model reads a few hundred pixels a side anyway).',
      );
    if (pixels > MAX_PIXELS || Math.max(width, height) > MAX_SIDE) {
      const [w, h] = fitWithin(width, height);
      const decoded = await inWorker(blob, { ...OPTIONS, resizeWidth: w, resizeHeight: h, resizeQuality: 'high' });
      return made(decoded, name, null, { width, height });
    }
  }
  let decoded: Decoded;
  try {
    decoded = await inWorker(blob, OPTIONS);
  } catch (err) {
    throw new Error(`${name} could not be read as an image (${err instanceof Error ? err.message : String(err)})`);
  }
  const original = { width: decoded.bitmap.width, height: decoded.bitmap.height };
  // A format whose header the page does not read (AVIF, say), decoded whole: scaled down now if it is too large.
  if (original.width * original.height > MAX_PIXELS || Math.max(original.width, original.height) > MAX_SIDE) {
    const [w, h] = fitWithin(original.width, original.height);
    decoded.copy.close();
    decoded = await inWorker(decoded.bitmap, { resizeWidth: w, resizeHeight: h, resizeQuality: 'high' });
  }
  return made(decoded, name, null, original);
}

/** The largest size of the same shape within MAX_PIXELS and MAX_SIDE, each side at least 1. */
function fitWithin(width: number, height: number): [number, number] {
  const scale = Math.min(Math.sqrt(MAX_PIXELS / (width * height)), MAX_SIDE / Math.max(width, height));
  return [Math.max(1, Math.floor(width * scale)), Math.max(1, Math.floor(height * scale))];
}

function made(
  { bitmap, copy }: Decoded,
  name: string,
  sample: string | null,
  original: PageImage['original'],
): PageImage {
  const scaled = bitmap.width !== original.width || bitmap.height !== original.height;
  const notice = scaled
    ? `${name} is ${original.width} × ${original.height} (${mp(original.width * original.height)} megapixels): ` +
      `the page scaled it to ${bitmap.width} × ${bitmap.height} (its most: ${mp(MAX_PIXELS)} megapixels, ` +
      `${MAX_SIDE.toLocaleString('en')} pixels a side) before the model's own resize.`
    : '';
  return { id: ++counter, bitmap, forWorker: copy, name, sample, original, notice };
}

/** The samples: scenes drawn here for the project, a few objects on a background each. */
export const SAMPLES: Record<string, { title: string; draw: (ctx: OffscreenCanvasRenderingContext2D) => void }> = {
  shapes: { title: 'A ball, a box and a tree on grass', draw: drawShapes },
  street: { title: 'Two houses and a car on a street', draw: drawStreet },
  fruit: { title: 'Fruit in a bowl on a table', draw: drawFruit },
};

const W = 480,
  H = 360;

/** A sample, drawn: the same pixels every time. */
export async function sampleImage(key: string): Promise<PageImage> {
  const sample = SAMPLES[key] ?? SAMPLES.shapes;
  const canvas = new OffscreenCanvas(W, H);
  const ctx = canvas.getContext('2d')!;
  sample.draw(ctx);
  const [bitmap, copy] = [await createImageBitmap(canvas), await createImageBitmap(canvas)];
  return made({ bitmap, copy }, sample.title, SAMPLES[key] ? key : 'shapes', { width: W, height: H });
}

function sky(ctx: OffscreenCanvasRenderingContext2D, horizon: number, top: string, bottom: string): void {
  const g = ctx.createLinearGradient(0, 0, 0, horizon);
  g.addColorStop(0, top);
  g.addColorStop(1, bottom);
  ctx.fillStyle = g;
  ctx.fillRect(0, 0, W, horizon);
}

function disc(ctx: OffscreenCanvasRenderingContext2D, x: number, y: number, r: number, fill: string | CanvasGradient) {
  ctx.beginPath();
  ctx.arc(x, y, r, 0, 2 * Math.PI);
  ctx.fillStyle = fill;
  ctx.fill();
}

function drawShapes(ctx: OffscreenCanvasRenderingContext2D): void {
  sky(ctx, 220, '#7fb6e8', '#d6ecfa');
  ctx.fillStyle = '#5c9e3f';
  ctx.fillRect(0, 220, W, H - 220);
  // Blades of grass, from a fixed sequence.
  ctx.strokeStyle = '#4a8a31';
  for (let i = 0, s = 7; i < 160; i++) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const x = s % W,
      y = 225 + ((s >> 9) % 130);
    ctx.beginPath();
    ctx.moveTo(x, y);
    ctx.lineTo(x + 2, y - 7);
    ctx.stroke();
  }
  disc(ctx, 400, 60, 30, '#ffd54a');
  // The tree: a trunk and a crown.
  ctx.fillStyle = '#6b4423';
  ctx.fillRect(330, 150, 22, 110);
  disc(ctx, 341, 130, 52, '#2f7d32');
  disc(ctx, 312, 160, 34, '#2f7d32');
  disc(ctx, 372, 162, 34, '#388e3c');
  // The box, shaded on one side.
  ctx.fillStyle = '#1e63b5';
  ctx.fillRect(170, 200, 100, 90);
  ctx.fillStyle = '#164a88';
  ctx.beginPath();
  ctx.moveTo(270, 200);
  ctx.lineTo(298, 182);
  ctx.lineTo(298, 272);
  ctx.lineTo(270, 290);
  ctx.fill();
  ctx.fillStyle = '#3d82d6';
  ctx.beginPath();
  ctx.moveTo(170, 200);
  ctx.lineTo(198, 182);
  ctx.lineTo(298, 182);
  ctx.lineTo(270, 200);
  ctx.fill();
  // The ball, lit from the top left.
  const ball = ctx.createRadialGradient(82, 248, 6, 95, 262, 48);
  ball.addColorStop(0, '#ff8a80');
  ball.addColorStop(1, '#c62828');
  disc(ctx, 95, 262, 46, ball);
}

function drawStreet(ctx: OffscreenCanvasRenderingContext2D): void {
  sky(ctx, 250, '#f3b27a', '#fde3c4');
  const house = (x: number, w: number, wall: string, roof: string) => {
    ctx.fillStyle = wall;
    ctx.fillRect(x, 120, w, 130);
    ctx.fillStyle = roof;
    ctx.beginPath();
    ctx.moveTo(x - 10, 122);
    ctx.lineTo(x + w / 2, 60);
    ctx.lineTo(x + w + 10, 122);
    ctx.fill();
    ctx.fillStyle = '#fff3b0';
    ctx.fillRect(x + 18, 150, 28, 28);
    ctx.fillRect(x + w - 46, 150, 28, 28);
    ctx.fillStyle = '#5d4037';
    ctx.fillRect(x + w / 2 - 14, 200, 28, 50);
  };
  house(40, 150, '#e0c9a6', '#8d3b2f');
  house(260, 170, '#b0c4de', '#37474f');
  ctx.fillStyle = '#616161';
  ctx.fillRect(0, 250, W, H - 250);
  ctx.fillStyle = '#eeeeee';
  for (let x = 10; x < W; x += 70) ctx.fillRect(x, 318, 40, 6);
  // The car.
  ctx.fillStyle = '#d32f2f';
  ctx.fillRect(150, 262, 170, 40);
  ctx.beginPath();
  ctx.moveTo(185, 262);
  ctx.lineTo(205, 232);
  ctx.lineTo(270, 232);
  ctx.lineTo(292, 262);
  ctx.fill();
  ctx.fillStyle = '#b3e5fc';
  ctx.fillRect(210, 238, 25, 22);
  ctx.fillRect(241, 238, 25, 22);
  disc(ctx, 190, 304, 16, '#212121');
  disc(ctx, 282, 304, 16, '#212121');
}

function drawFruit(ctx: OffscreenCanvasRenderingContext2D): void {
  ctx.fillStyle = '#efe6d8';
  ctx.fillRect(0, 0, W, 210);
  ctx.fillStyle = '#8d6e63';
  ctx.fillRect(0, 210, W, H - 210);
  ctx.fillStyle = '#795548';
  for (let y = 230; y < H; y += 34) ctx.fillRect(0, y, W, 3);
  // Fruit, then the bowl in front of them.
  disc(ctx, 200, 190, 42, '#e53935');
  disc(ctx, 282, 186, 44, '#fb8c00');
  disc(ctx, 240, 160, 38, '#7cb342');
  ctx.fillStyle = '#4e342e';
  ctx.fillRect(238, 112, 5, 16);
  ctx.fillStyle = '#fdd835';
  ctx.beginPath();
  ctx.ellipse(330, 205, 52, 18, -0.5, 0, 2 * Math.PI);
  ctx.fill();
  ctx.fillStyle = '#1565c0';
  ctx.beginPath();
  ctx.moveTo(140, 200);
  ctx.lineTo(360, 200);
  ctx.quadraticCurveTo(350, 280, 250, 282);
  ctx.quadraticCurveTo(150, 280, 140, 200);
  ctx.fill();
  ctx.fillStyle = '#0d47a1';
  ctx.fillRect(215, 282, 70, 10);
  // A cup to the left.
  ctx.fillStyle = '#fafafa';
  ctx.fillRect(50, 220, 54, 62);
  ctx.strokeStyle = '#fafafa';
  ctx.lineWidth = 7;
  ctx.beginPath();
  ctx.arc(106, 250, 14, -Math.PI / 2, Math.PI / 2);
  ctx.stroke();
}
