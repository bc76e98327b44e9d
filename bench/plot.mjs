// Time against n per engine, as an SVG line chart on log-log axes (a quadratic term shows as a slope of 2).
// Pure: data in, SVG text out; bench/index.mjs writes what section 1 measured to docs/performance.svg.

const WIDTH = 760;
const HEIGHT = 460;
const MARGIN = { left: 64, right: 196, top: 44, bottom: 52 };
/** One hue per kind of engine; the thread count is the dash. */
const HUES = [
  ['AttnScope relaxed', '#1f6fd1'],
  ['AttnScope wasm', '#7aa7e0'],
  ['ORT-web', '#d9541e'],
  ['TF.js', '#8a5a00'],
  ['native', '#2e8b57'],
];

/** @type {Record<string, string>} */
const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/**
 * Text safe inside SVG elements and attributes.
 * @param {unknown} text
 */
export const escapeXml = (text) => String(text).replace(/[&<>"']/g, (c) => ENTITIES[c]);

/**
 * Powers of ten and their 2× and 5× between lo and hi (both > 0), as tick values.
 * @param {number} lo
 * @param {number} hi
 */
export function logTicks(lo, hi) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push(v);
    }
  return ticks;
}

/** @param {number} v */
const label = (v) => (v >= 1000 ? `${v / 1000}k` : v >= 1 ? String(v) : String(Number(v.toPrecision(2))));
/** @param {string} name */
const colourOf = (name) => HUES.find(([prefix]) => name.startsWith(prefix))?.[1] ?? '#555555';
/** @param {string} name */
const dashOf = (name) => (/×\s*2\b/.test(name) ? '6 4' : '');

/**
 * An SVG line chart of `series` on log-log axes.
 * @param {{ title: string, subtitle?: string, xLabel: string, yLabel: string,
 *   series: Array<{ name: string, points: Array<[number, number | undefined]> }> }} chart
 *   points are [x, y] pairs, x and y > 0 (others are left out); a series keeps its points' order by x.
 * @returns {string} the SVG document
 */
export function timePlot({ title, subtitle = '', xLabel, yLabel, series }) {
  const lines = series
    .map((s) => ({
      ...s,
      points: /** @type {Array<[number, number]>} */ (
        s.points.filter(([x, y]) => y !== undefined && x > 0 && y > 0 && Number.isFinite(x) && Number.isFinite(y))
      ),
    }))
    .map((s) => ({ ...s, points: [...s.points].sort((a, b) => a[0] - b[0]) }))
    .filter((s) => s.points.length);
  if (!lines.length) throw new Error('timePlot: no series with positive points');
  const xs = lines.flatMap((s) => s.points.map(([x]) => x));
  const ys = lines.flatMap((s) => s.points.map(([, y]) => y));
  // Axes from the power-of-ten steps around the data, so that every point lies inside.
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const [y0, y1] = [10 ** Math.floor(Math.log10(Math.min(...ys))), 10 ** Math.ceil(Math.log10(Math.max(...ys)))];
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  /** Where v lies between lo and hi on a log scale, 0 to 1. @type {(v: number, lo: number, hi: number) => number} */
  const span = (v, lo, hi) => (hi > lo ? (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : 0.5);
  /** @param {number} x */
  const px = (x) => MARGIN.left + span(x, x0, x1) * plotW;
  /** @param {number} y */
  const py = (y) => MARGIN.top + (1 - span(y, y0, y1)) * plotH;
  /** @param {number} v */
  const f = (v) => v.toFixed(1);

  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" ` +
      `font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12" role="img">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${MARGIN.left}" y="20" font-size="15" font-weight="600" fill="#111111">${escapeXml(title)}</text>`,
  ];
  if (subtitle) out.push(`<text x="${MARGIN.left}" y="36" fill="#555555">${escapeXml(subtitle)}</text>`);
  const xTicks = xs.filter((x, i) => xs.indexOf(x) === i).sort((a, b) => a - b);
  for (const x of xTicks)
    out.push(
      `<line x1="${f(px(x))}" y1="${MARGIN.top}" x2="${f(px(x))}" y2="${MARGIN.top + plotH}" stroke="#e6e6e6"/>`,
      `<text x="${f(px(x))}" y="${MARGIN.top + plotH + 16}" text-anchor="middle" fill="#333333">` +
        `${x.toLocaleString('en-US')}</text>`,
    );
  for (const y of logTicks(y0, y1)) {
    const major = Math.abs(Math.log10(y) - Math.round(Math.log10(y))) < 1e-9;
    out.push(
      `<line x1="${MARGIN.left}" y1="${f(py(y))}" x2="${MARGIN.left + plotW}" y2="${f(py(y))}" ` +
        `stroke="${major ? '#d0d0d0' : '#eeeeee'}"/>`,
      `<text x="${MARGIN.left - 6}" y="${f(py(y) + 4)}" text-anchor="end" fill="#333333">${label(y)}</text>`,
    );
  }
  out.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888888"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 12}" text-anchor="middle" fill="#111111">` +
      `${escapeXml(xLabel)}</text>`,
    `<text transform="translate(16 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle" fill="#111111">` +
      `${escapeXml(yLabel)}</text>`,
  );
  lines.forEach((s, i) => {
    const colour = colourOf(s.name);
    const dash = dashOf(s.name);
    const d = s.points.map(([x, y], k) => `${k ? 'L' : 'M'}${f(px(x))} ${f(py(y))}`).join(' ');
    out.push(
      `<g><title>${escapeXml(s.name)}</title>` +
        `<path d="${d}" fill="none" stroke="${colour}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''}/>` +
        s.points.map(([x, y]) => `<circle cx="${f(px(x))}" cy="${f(py(y))}" r="2.5" fill="${colour}"/>`).join('') +
        '</g>',
    );
    const ly = MARGIN.top + 8 + i * 20;
    const lx = MARGIN.left + plotW + 14;
    out.push(
      `<line x1="${lx}" y1="${ly}" x2="${lx + 26}" y2="${ly}" stroke="${colour}" stroke-width="2"` +
        `${dash ? ` stroke-dasharray="${dash}"` : ''}/>`,
      `<text x="${lx + 32}" y="${ly + 4}" fill="#111111">${escapeXml(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
