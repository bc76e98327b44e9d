// The page's head measures for images and cross-attention (web/demo/measures.ts) on maps planted to give known
// values: a head that looks at each patch itself, one spread evenly over the image, one parked on [CLS]; an
// alignment in order, one reversed, one stuck on the first key.
import { describe, expect, it } from 'vitest';

import { crossMeasures, imageMeasures } from '../../web/demo/measures.js';

/** Maps [1, heads, n, m] from one function per head of (query, key) → weight, each row made to sum to 1. */
function mapsOf(n: number, m: number, heads: Array<(q: number, k: number) => number>) {
  const attentions = new Float32Array(heads.length * n * m);
  heads.forEach((f, h) => {
    for (let q = 0; q < n; q++) {
      const row = attentions.subarray((h * n + q) * m, (h * n + q + 1) * m);
      for (let k = 0; k < m; k++) row[k] = f(q, k);
      const sum = row.reduce((a, b) => a + b, 0);
      for (let k = 0; k < m; k++) row[k] /= sum;
    }
  });
  return { attentions, shape: [1, heads.length, n, m] as [number, number, number, number], mapLayers: [0] };
}

describe('head measures', () => {
  it('an image: over the patch grid, [CLS] and registers apart', () => {
    // [CLS], two registers, then 4 × 4 patches.
    const [prefix, registers, rows, cols] = [1, 2, 4, 4];
    const first = prefix + registers,
      n = first + rows * cols;
    const maps = mapsOf(n, n, [
      (q, k) => (q === k ? 1 : 0), // each token itself
      (_q, k) => (k >= first ? 1 : 0), // the whole image alike
      (_q, k) => (k === 0 ? 1 : 0), // [CLS] only
      (_q, k) => (k >= prefix && k < first ? 1 : 0), // the registers only
    ]);
    const [itself, even, cls, regs] = imageMeasures(maps, [rows, cols], prefix, registers);
    expect(itself).toMatchObject({ spread: 0, distance: 0, self: 1, neighbourhood: 1, cls: 1 / n, registers: 2 / n });
    expect(even!.spread).toBeCloseTo(Math.log(16), 5);
    expect(even!.self).toBeCloseTo(1 / 16, 6);
    // Mean straight-line distance between two patches of a 4 × 4 grid, and the mean 3 × 3 neighbourhood's size.
    let distance = 0,
      near = 0;
    for (let a = 0; a < 16; a++)
      for (let b = 0; b < 16; b++) {
        const [ar, ac, br, bc] = [a >> 2, a & 3, b >> 2, b & 3];
        distance += Math.hypot(ar - br, ac - bc) / 256;
        if (Math.abs(ar - br) <= 1 && Math.abs(ac - bc) <= 1) near += 1 / 256;
      }
    expect(even!.distance).toBeCloseTo(distance, 5);
    expect(even!.neighbourhood).toBeCloseTo(near, 5);
    expect(even!.cls).toBe(0);
    expect(cls).toMatchObject({ cls: 1, registers: 0, self: 0, neighbourhood: 0 });
    expect(cls!.spread).toBeNaN(); // no patch looks at a patch
    expect(regs!.registers).toBeCloseTo(1, 6);
    // Without registers, their column has nothing to say.
    const plain = imageMeasures(mapsOf(17, 17, [(q, k) => (q === k ? 1 : 0)]), [4, 4], 1, 0);
    expect(plain[0]!.registers).toBeNaN();
  });

  it('cross-attention: as an alignment', () => {
    const [n, m] = [5, 9];
    const maps = mapsOf(n, m, [
      (q, k) => (k === q * 2 ? 1 : 0), // in order, along the diagonal
      (q, k) => (k === m - 1 - q * 2 ? 1 : 0), // reversed
      (_q, k) => (k === 0 ? 1 : 0), // stuck on the first key
      () => 1, // everywhere alike
    ]);
    const [order, reversed, stuck, even] = crossMeasures(maps);
    expect(order).toMatchObject({ entropy: 0, monotonicity: 1, diagonal: 0, coverage: 5 / 9 });
    expect(reversed!.monotonicity).toBe(0);
    expect(reversed!.coverage).toBeCloseTo(5 / 9, 6);
    expect(reversed!.diagonal).toBeCloseTo((1 + 0.5 + 0 + 0.5 + 1) / 5, 6);
    expect(stuck).toMatchObject({ monotonicity: 1, coverage: 1 / 9 });
    expect(stuck!.diagonal).toBeCloseTo(0.5, 6);
    expect(even!.entropy).toBeCloseTo(Math.log(9), 5);
  });
});
