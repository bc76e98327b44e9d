// SVG export of any view: the view's own drawing code runs against a recorder
// that implements the part of CanvasRenderingContext2D the views use and writes
// SVG elements instead of pixels. What is exported is exactly what is drawn.
// Token strings are untrusted (they come from downloaded vocabularies), so every
// text and attribute is escaped.

const escape = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const num = (x: number) => String(Math.round(x * 100) / 100);

type Matrix = [number, number, number, number, number, number]; // a b c d e f, as in DOMMatrix

function multiply(m: Matrix, n: Matrix): Matrix {
  return [
    m[0] * n[0] + m[2] * n[1],
    m[1] * n[0] + m[3] * n[1],
    m[0] * n[2] + m[2] * n[3],
    m[1] * n[2] + m[3] * n[3],
    m[0] * n[4] + m[2] * n[5] + m[4],
    m[1] * n[4] + m[3] * n[5] + m[5],
  ];
}

// Beyond this many cells an image is embedded as a PNG instead of one <rect> per cell.
const MAX_RECT_CELLS = 128 * 128;

class SvgRecorder {
  fillStyle = '#000';
  strokeStyle = '#000';
  lineWidth = 1;
  globalAlpha = 1;
  font = '10px sans-serif';
  textAlign: CanvasTextAlign = 'start';
  textBaseline: CanvasTextBaseline = 'alphabetic';
  imageSmoothingEnabled = false;
  readonly parts: string[] = [];
  private transform: Matrix = [1, 0, 0, 1, 0, 0];
  private readonly stack: Array<{ transform: Matrix; fillStyle: string; strokeStyle: string; globalAlpha: number }> =
    [];
  private path: string[] = [];

  private attrs(): string {
    const t = this.transform;
    const identity = t[0] === 1 && t[1] === 0 && t[2] === 0 && t[3] === 1 && t[4] === 0 && t[5] === 0;
    return (
      (identity ? '' : ` transform="matrix(${t.map(num).join(' ')})"`) +
      (this.globalAlpha < 1 ? ` opacity="${num(this.globalAlpha)}"` : '')
    );
  }

  save(): void {
    const { transform, fillStyle, strokeStyle, globalAlpha } = this;
    this.stack.push({ transform, fillStyle, strokeStyle, globalAlpha });
  }
  restore(): void {
    Object.assign(this, this.stack.pop());
  }
  translate(x: number, y: number): void {
    this.transform = multiply(this.transform, [1, 0, 0, 1, x, y]);
  }
  rotate(angle: number): void {
    const c = Math.cos(angle),
      s = Math.sin(angle);
    this.transform = multiply(this.transform, [c, s, -s, c, 0, 0]);
  }
  clearRect(): void {}
  // Exports draw only what is wholly in view, so clipping has nothing to do.
  rect(): void {}
  clip(): void {}
  /** Widths for shortening labels: the font size times an average glyph's width. */
  measureText(text: string): { width: number } {
    return { width: text.length * Number(/(\d+(?:\.\d+)?)px/.exec(this.font)?.[1] ?? 10) * 0.55 };
  }
  fillRect(x: number, y: number, w: number, h: number): void {
    this.parts.push(
      `<rect x="${num(x)}" y="${num(y)}" width="${num(w)}" height="${num(h)}" fill="${escape(this.fillStyle)}"${this.attrs()}/>`,
    );
  }
  strokeRect(x: number, y: number, w: number, h: number): void {
    this.parts.push(
      `<rect x="${num(x)}" y="${num(y)}" width="${num(w)}" height="${num(h)}" fill="none" stroke="${escape(this.strokeStyle)}" stroke-width="${num(this.lineWidth)}"${this.attrs()}/>`,
    );
  }
  beginPath(): void {
    this.path = [];
  }
  moveTo(x: number, y: number): void {
    this.path.push(`M${num(x)} ${num(y)}`);
  }
  lineTo(x: number, y: number): void {
    this.path.push(`L${num(x)} ${num(y)}`);
  }
  stroke(): void {
    if (this.path.length)
      this.parts.push(
        `<path d="${this.path.join('')}" fill="none" stroke="${escape(this.strokeStyle)}" stroke-width="${num(this.lineWidth)}"${this.attrs()}/>`,
      );
  }
  fillText(text: string, x: number, y: number): void {
    const anchor = { right: 'end', end: 'end', center: 'middle' }[this.textAlign as string] ?? 'start';
    const baseline = { middle: 'middle', top: 'hanging', hanging: 'hanging' }[this.textBaseline as string] ?? 'auto';
    const size = /(\d+(?:\.\d+)?)px/.exec(this.font)?.[1] ?? '10';
    this.parts.push(
      `<text x="${num(x)}" y="${num(y)}" font-size="${size}" font-family="system-ui, sans-serif" text-anchor="${anchor}" dominant-baseline="${baseline}" fill="${escape(this.fillStyle)}"${this.attrs()}>${escape(text)}</text>`,
    );
  }
  /**
   * A pixel tile (heatmaps draw one pixel per cell, then scale): one rect per cell, or a PNG when huge. As the
   * canvas's: the whole source at (x, y, w, h), or its part (sx, sy, sw, sh) there.
   */
  drawImage(source: OffscreenCanvas | HTMLCanvasElement, ...args: number[]): void {
    const [sx, sy, width, height, x, y, w, h] =
      args.length === 8 ? args : [0, 0, source.width, source.height, ...args.slice(0, 4)];
    const ctx = source.getContext('2d') as OffscreenCanvasRenderingContext2D | CanvasRenderingContext2D;
    if (width * height > MAX_RECT_CELLS) {
      const copy = document.createElement('canvas');
      Object.assign(copy, { width, height });
      copy.getContext('2d')!.drawImage(source, sx, sy, width, height, 0, 0, width, height);
      this.parts.push(
        `<image x="${num(x)}" y="${num(y)}" width="${num(w)}" height="${num(h)}" preserveAspectRatio="none" style="image-rendering:pixelated" href="${copy.toDataURL('image/png')}"${this.attrs()}/>`,
      );
      return;
    }
    const pixels = ctx.getImageData(sx, sy, width, height).data;
    const cw = w / width,
      ch = h / height;
    for (let i = 0; i < height; i++)
      for (let j = 0; j < width; j++) {
        const p = (i * width + j) * 4;
        this.parts.push(
          `<rect x="${num(x + j * cw)}" y="${num(y + i * ch)}" width="${num(cw + 0.05)}" height="${num(ch + 0.05)}" fill="rgb(${pixels[p]},${pixels[p + 1]},${pixels[p + 2]})"/>`,
        );
      }
  }
}

/**
 * Runs `draw` on a stand-in canvas of the given size whose 2D context records SVG,
 * and returns the SVG document. `background` fills the page first (views draw on
 * the page's colour).
 */
export function toSvg(
  width: number,
  height: number,
  background: string,
  draw: (canvas: HTMLCanvasElement) => void,
): string {
  const recorder = new SvgRecorder();
  const canvas = {
    width,
    height,
    getContext: () => recorder,
    dataset: {},
    style: {},
    getBoundingClientRect: () => ({ left: 0, top: 0, width, height }),
  } as unknown as HTMLCanvasElement;
  draw(canvas);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${canvas.width}" height="${canvas.height}" viewBox="0 0 ${canvas.width} ${canvas.height}">` +
    `<rect width="100%" height="100%" fill="${escape(background)}"/>${recorder.parts.join('')}</svg>`
  );
}
