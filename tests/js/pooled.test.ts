// The page's max-pooled levels of a map (web/demo/draw/pooled.ts): a pyramid that keeps the rows another map shares
// with it (typing at the end of a causal model's text) and folds the rest, or that is widened past a power of 2 as a
// generation grows its map, holds exactly what a pyramid built from that map alone holds, at every level.
import { describe, expect, it } from 'vitest';

import { poolRow, Pooled, Pyramid, sharedRows, type MapRows } from '../../web/demo/draw/pooled.js';

/** A causal map's rows, seeded: row i has i + 1 weights summing to 1. */
function causalMap(n: number, seed: number): Float32Array[] {
  let a = seed >>> 0;
  const random = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: n }, (_, i) => {
    const row = Float32Array.from({ length: i + 1 }, () => random() ** 4);
    const sum = row.reduce((s, v) => s + v, 0);
    return row.map((v) => v / sum);
  });
}

const rowsOf = (rows: Float32Array[]): MapRows => ({ n: rows.length, cols: rows.length, row: (i) => rows[i] });

/** Every level's blocks, for comparing two pyramids. */
const levels = (p: Pyramid) => p.levels.map((level) => Array.from(level.data));

describe('Pyramid.keep', () => {
  // The edited text keeps the first `shared` tokens of a 300-token one and goes on to `n` tokens of its own.
  const cases = [
    { shared: 297, n: 300 }, // typing at the end
    { shared: 300, n: 305 }, // typing after the end
    { shared: 256, n: 290 }, // an edit on a coarse block's edge
    { shared: 255, n: 260 }, // and just before it
    { shared: 1, n: 200 }, // at the start: little is kept
    { shared: 0, n: 256 }, // nothing shared
    { shared: 150, n: 151 }, // an edit in the middle that shortens the text
  ];
  for (const { shared, n } of cases)
    it(`keeps ${shared} shared rows and folds the rest of ${n}, as a pyramid of the new map alone`, () => {
      const before = causalMap(300, 1);
      const after = [...before.slice(0, shared), ...causalMap(n, 2).slice(shared)];
      const kept = new Pyramid(512);
      kept.extend(rowsOf(before));
      kept.keep(shared);
      expect(kept.rows).toBeLessThanOrEqual(shared);
      kept.extend(rowsOf(after));
      const fresh = new Pyramid(512);
      fresh.extend(rowsOf(after));
      expect(kept.rows).toBe(n);
      expect(levels(kept)).toEqual(levels(fresh));
    });

  it('widens to a larger capacity with the same levels, then folds more rows as a fresh pyramid does', () => {
    const rows = causalMap(300, 4);
    const narrow = new Pyramid(256);
    narrow.extend(rowsOf(rows.slice(0, 200)));
    const wide = narrow.widened(512);
    expect(wide.rows).toBe(200);
    wide.extend(rowsOf(rows));
    const fresh = new Pyramid(512);
    fresh.extend(rowsOf(rows));
    expect(levels(wide)).toEqual(levels(fresh));
  });

  it('keeps no more rows than it had folded', () => {
    const p = new Pyramid(64);
    p.extend(rowsOf(causalMap(10, 3)));
    p.keep(40);
    expect(p.rows).toBe(10);
  });
});

describe('sharedRows', () => {
  it('counts the ids two runs begin with, up to the rows held', () => {
    expect(sharedRows([5, 6, 7, 8], [5, 6, 9])).toBe(2);
    expect(sharedRows([5, 6, 7], [5, 6, 7, 8, 9])).toBe(3); // typed at the end: every earlier row kept
    expect(sharedRows([5, 6, 7], [5, 6, 7, 8, 9], 2)).toBe(2);
    expect(sharedRows([1, 2], [3, 2])).toBe(0);
    expect(sharedRows([], [1])).toBe(0);
  });
});

describe('Pooled.add', () => {
  it('folds a row pooled beforehand (poolRow, as the worker pools a generated token) as it folds the row itself', () => {
    const rows = causalMap(300, 7);
    for (const block of [1, 2, 4, 8]) {
      const whole = new Pooled(block, 300);
      const pooled = new Pooled(block, 300);
      rows.forEach((row, i) => {
        whole.add(i, row);
        const cells = new Float32Array(Math.ceil(row.length / block));
        poolRow(row, block, cells);
        pooled.add(i, cells, block, 1);
      });
      expect(Array.from(pooled.data)).toEqual(Array.from(whole.data));
    }
  });
});
