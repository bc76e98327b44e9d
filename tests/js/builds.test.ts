// How createEngine picks its build, and that it says why: info().reason, and a refusal or a
// one-time warning instead of a silent fallback. The browser's side (pages with and without
// cross-origin isolation) runs in Chromium in tests/consumer.
import { afterEach, describe, expect, it, vi } from 'vitest';

import { chooseBuild, infoOnce, warnOnce } from '../../dist/builds.js';
import { createEngine } from '../../dist/node.js';

const NOT_ISOLATED = 'SharedArrayBuffer unavailable: the page is not cross-origin isolated';

describe('createEngine says why it chose its build', () => {
  it('in Node, for asked-for threads, one thread, the default and a named build', async () => {
    const reasons: Record<string, string> = {};
    for (const [name, options] of Object.entries({
      two: { threads: 2 },
      one: { threads: 1 },
      default: {},
      named: { build: 'simd' as const },
    })) {
      const engine = await createEngine(options);
      reasons[name] = engine.info().reason;
      engine.dispose();
    }
    const relaxed = 'relaxed SIMD validates in this JavaScript engine';
    expect(reasons.two).toBe(`2 threads asked for, and SharedArrayBuffer is available; ${relaxed}`);
    expect(reasons.one).toBe(`one thread asked for; ${relaxed}`);
    expect(reasons.default).toMatch(/^(one thread|\d threads) by default \(the cores, at most 4\)/);
    expect(reasons.named).toBe("build 'simd' was asked for, on 1 thread");
  });

  it('runs a threaded build on one thread when asked to, with the numbers of the single-threaded build', async () => {
    const one = await createEngine({ build: 'simd-threads', threads: 1 });
    const plain = await createEngine({ build: 'simd' });
    expect(one.info()).toMatchObject({ build: 'simd-threads', threads: 1 });
    const x = { data: Float32Array.from({ length: 6 * 8 }, (_, i) => Math.sin(i)), shape: [6, 8] };
    expect(one.attention(x, x, x, { causal: true }).weights.data).toEqual(
      plain.attention(x, x, x, { causal: true }).weights.data,
    );
    one.dispose();
    plain.dispose();
  });

  it('refuses threads that a named single-threaded build cannot give', async () => {
    await expect(createEngine({ build: 'simd', threads: 4 })).rejects.toThrow(
      "createEngine: build 'simd' runs on one thread, got threads: 4",
    );
  });

  it('without SharedArrayBuffer: one thread, the reason, and the threads refused if they were asked for', () => {
    const page = { threads: `${NOT_ISOLATED} (it needs the headers …)`, relaxedSimd: true };
    const asked = chooseBuild({ threads: 4 }, 2, page);
    expect(asked).toMatchObject({ build: 'relaxed-simd', threads: 1, refused: 4, defaultRefused: undefined });
    expect(asked.reason).toBe(
      `one thread, not 4 asked for: ${page.threads}; relaxed SIMD validates in this JavaScript engine`,
    );
    const byDefault = chooseBuild({}, 4, { ...page, relaxedSimd: false });
    // The default's threads, refused: the browser entry says so once, on the console at info level.
    expect(byDefault).toMatchObject({ build: 'simd', threads: 1, refused: undefined, defaultRefused: 4 });
    expect(byDefault.reason).toMatch(/^one thread, not 4 by default \(the cores, at most 4\): SharedArrayBuffer/);
    expect(byDefault.reason).toMatch(/no relaxed SIMD in this JavaScript engine/);
    expect(chooseBuild({ threads: 1 }, 4, page)).toMatchObject({ refused: undefined, defaultRefused: undefined });
    expect(chooseBuild({}, 4, { ...page, threads: true }).defaultRefused).toBeUndefined();
    expect(chooseBuild({ build: 'simd' }, 4, page).defaultRefused).toBeUndefined();
    // One core: one thread by default, nothing refused, and the reason still says why more could not be had.
    expect(chooseBuild({}, 1, page).defaultRefused).toBeUndefined();
    expect(chooseBuild({}, 1, page).reason).toBe(
      `one thread by default (the cores, at most 4) (more could not be had: ${page.threads}); relaxed SIMD validates in this JavaScript engine`,
    );
    expect(() => chooseBuild({ build: 'simd-threads' }, 4, page)).toThrow(
      `createEngine: build 'simd-threads' cannot run here: ${NOT_ISOLATED}`,
    );
  });
});

describe('warnOnce and infoOnce', () => {
  afterEach(() => vi.restoreAllMocks());

  it('warns once per kind of warning', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    warnOnce('test: a', 'first');
    warnOnce('test: a', 'again');
    warnOnce('test: b', 'other');
    expect(warn.mock.calls).toEqual([['attnscope: first'], ['attnscope: other']]);
  });

  it('infoOnce notes once per kind of note, at info level', () => {
    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    infoOnce('test: note', 'first');
    infoOnce('test: note', 'again');
    expect(info.mock.calls).toEqual([['attnscope: first']]);
  });
});
