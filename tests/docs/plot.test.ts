// bench/plot.mjs on made-up data: every series drawn, in order of n, on log-log axes that hold every point.
import { describe, expect, it } from 'vitest';

import { escapeXml, logTicks, timePlot } from '../../bench/plot.mjs';

const series: Array<{ name: string; points: Array<[number, number]> }> = [
  // ms = n² / 100: a straight line of slope 2 on log-log axes
  { name: 'AttnScope relaxed ×1', points: [16, 64, 256, 1024].map((n) => [n, (n * n) / 100] as [number, number]) },
  { name: 'ORT-web ×2', points: [[1024, 50] as [number, number], [16, 2], [256, 20]] },
  { name: 'a <peer> & "friend"', points: [[16, 3] as [number, number], [64, Number.NaN], [256, 0]] },
];
const svg = timePlot({ title: 'Time <against> n', subtitle: 'synthetic', xLabel: 'n', yLabel: 'ms', series });

/** The path of the series drawn under `name` (its <title>), as [x, y] pairs in SVG coordinates. */
function path(name: string): number[][] {
  const group = svg.split('<g>').find((g) => g.startsWith(`<title>${escapeXml(name)}</title>`));
  expect(group, name).toBeDefined();
  const d = group!.match(/ d="([^"]+)"/)![1];
  return d
    .split(/[ML]/)
    .filter(Boolean)
    .map((p) => p.trim().split(' ').map(Number));
}

describe('timePlot', () => {
  it('is one SVG document with its title, and text escaped', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('<title>Time &lt;against&gt; n</title>');
    expect(svg).toContain('a &lt;peer&gt; &amp; &quot;friend&quot;');
    expect(svg).not.toMatch(/<peer>|NaN|Infinity/);
  });

  it('draws each series in order of n, leaving out points that cannot sit on log axes', () => {
    const ours = path('AttnScope relaxed ×1');
    expect(ours).toHaveLength(4);
    const peer = path('ORT-web ×2');
    expect(peer.map(([x]) => x)).toEqual([...peer.map(([x]) => x)].sort((a, b) => a - b));
    expect(path('a <peer> & "friend"')).toHaveLength(1);
  });

  it('puts n and ms on log scales: n² is a straight line of slope 2', () => {
    const p = path('AttnScope relaxed ×1');
    const slopes = p.slice(1).map(([x, y], i) => (p[i][1] - y) / (x - p[i][0]));
    for (const s of slopes) expect(s).toBeCloseTo(slopes[0], 1);
    // and y rises with n (SVG's y grows downwards)
    expect(p[3][1]).toBeLessThan(p[0][1]);
    for (const decade of ['1', '10', '100', '1k', '10k']) expect(svg).toContain(`>${decade}</text>`);
  });

  it('labels the axes with the n measured and powers of ten', () => {
    for (const n of ['16', '64', '256', '1,024']) expect(svg).toContain(`>${n}</text>`);
    expect(logTicks(1, 100)).toEqual([1, 2, 5, 10, 20, 50, 100]);
    expect(logTicks(3, 30)).toEqual([5, 10, 20]);
  });

  it('tells the thread counts apart by dash, and refuses a chart with nothing to draw', () => {
    expect(svg.split('<g>').find((g) => g.includes('ORT-web ×2'))).toContain('stroke-dasharray');
    expect(svg.split('<g>').find((g) => g.includes('AttnScope relaxed ×1'))).not.toContain('stroke-dasharray');
    expect(() => timePlot({ title: '', xLabel: '', yLabel: '', series: [{ name: 'x', points: [[0, 1]] }] })).toThrow(
      /no series/,
    );
  });
});
