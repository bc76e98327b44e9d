// Which part of an n × m map (m = n but in cross-attention) a plot box shows: the size of a cell in CSS pixels,
// and where cell (0, 0) sits. Zooming keeps the cell under the pointer where it is; panning never goes past the
// map's edges; a map smaller than the box sits in its top-left corner.

/** The largest a cell may grow, in CSS pixels. */
const MAX_CELL = 64;

export class Viewport {
  /** Rows (queries) and columns (keys). */
  n = 1;
  m = 1;
  /** The plot box, in CSS pixels of the canvas. */
  box = { x: 0, y: 0, w: 1, h: 1 };
  /** CSS pixels per cell, and where cell (0, 0)'s corner is relative to the box. */
  cell = 1;
  ox = 0;
  oy = 0;

  /** Cell size at which the whole map fits. */
  get fit(): number {
    return Math.min(this.box.w / this.m, this.box.h / this.n);
  }

  get zoomed(): boolean {
    return this.cell > this.fit * 1.001;
  }

  /**
   * A new size or a new map: a new map (other n) starts fitted, a resize keeps the zoom. A map that grew (`growing`:
   * generation's rows) keeps its cell size, and follows the new rows when its last row was in view.
   */
  reset(n: number, box: { x: number; y: number; w: number; h: number }, growing = false, m = n): void {
    const zoom = this.n === n && this.m === m ? this.cell / this.fit : 1;
    const atBottom = this.oy + this.n * this.cell <= this.box.h + 0.5;
    const wasZoomed = this.zoomed;
    const cell = this.cell;
    this.n = n;
    this.m = m;
    this.box = box;
    this.cell = growing && wasZoomed ? Math.max(cell, this.fit) : this.fit * zoom;
    if (growing && wasZoomed && atBottom) this.oy = this.box.h - n * this.cell;
    this.clamp();
  }

  fitAll(): void {
    this.cell = this.fit;
    this.ox = this.oy = 0;
  }

  /** Multiplies the cell size by `factor`, keeping the point (px, py) of the box in place. */
  zoom(factor: number, px = this.box.w / 2, py = this.box.h / 2): void {
    const next = Math.min(Math.max(this.cell * factor, this.fit), Math.max(MAX_CELL, this.fit));
    const u = (px - this.ox) / this.cell,
      v = (py - this.oy) / this.cell;
    this.cell = next;
    this.ox = px - u * next;
    this.oy = py - v * next;
    this.clamp();
  }

  pan(dx: number, dy: number): void {
    this.ox += dx;
    this.oy += dy;
    this.clamp();
  }

  /** Pans as little as needed to show cell (i, j) whole. */
  reveal(i: number, j: number): void {
    const { w, h } = this.box;
    const c = this.cell;
    if (this.ox + j * c < 0) this.ox = -j * c;
    if (this.ox + (j + 1) * c > w) this.ox = w - (j + 1) * c;
    if (this.oy + i * c < 0) this.oy = -i * c;
    if (this.oy + (i + 1) * c > h) this.oy = h - (i + 1) * c;
    this.clamp();
  }

  private clamp(): void {
    this.ox = Math.min(0, Math.max(this.ox, Math.min(0, this.box.w - this.m * this.cell)));
    this.oy = Math.min(0, Math.max(this.oy, Math.min(0, this.box.h - this.n * this.cell)));
  }

  /** The rows (or columns) any part of which is in view: [first, end). */
  visible(axis: 'rows' | 'cols'): [number, number] {
    const [o, extent] = axis === 'rows' ? [this.oy, this.box.h] : [this.ox, this.box.w];
    const first = Math.max(0, Math.floor(-o / this.cell));
    return [first, Math.min(axis === 'rows' ? this.n : this.m, Math.ceil((extent - o) / this.cell))];
  }

  /** The cell under a point in CSS pixels of the canvas, or null outside the map. */
  cellAt(x: number, y: number): { i: number; j: number } | null {
    const j = Math.floor((x - this.box.x - this.ox) / this.cell);
    const i = Math.floor((y - this.box.y - this.oy) / this.cell);
    const inside = x >= this.box.x && y >= this.box.y && x < this.box.x + this.box.w && y < this.box.y + this.box.h;
    return inside && i >= 0 && j >= 0 && i < this.n && j < this.m ? { i, j } : null;
  }

  /** Left and top of column j and row i, in CSS pixels of the canvas. */
  x(j: number): number {
    return this.box.x + this.ox + j * this.cell;
  }
  y(i: number): number {
    return this.box.y + this.oy + i * this.cell;
  }
}
