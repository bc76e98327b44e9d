// The selected head's arithmetic, step by step, on the engine's own numbers:
//   X → Q, K, V → Q Kᵀ → scaled → masked → softmax → weights · V → every head side by side → W_O.
// The worker sends the steps (protocol MathSteps); the weights are the run's own map unless the
// switches ask for a walk-through the model does not take. Nothing is computed here: each step is
// painted from its own smallest (dark) to largest (bright) value.
import { cellImage } from '../draw/heatmap.js';
import { headMap } from '../map-rows.js';
import type { Matrix } from '../protocol.js';
import type { State } from '../state.js';
import { $, changes, type Page, type View } from './view.js';

/** The most rows (and columns) a step's picture shows. */
const SHOWN = 512;

interface Step {
  title: string;
  formula: string;
  m: Matrix | undefined;
}

/** The smallest and largest finite values, in one pass (a spread would overflow the stack on big matrices). */
function range(data: Float32Array): { min: number; max: number } {
  let min = Infinity,
    max = -Infinity;
  for (const x of data) {
    if (!Number.isFinite(x)) continue;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  return { min, max };
}

function figure({ title, formula, m }: Step): HTMLLIElement {
  const li = document.createElement('li');
  const h = document.createElement('h3');
  h.textContent = title;
  const f = document.createElement('code');
  f.textContent = formula;
  const canvas = document.createElement('canvas');
  const caption = document.createElement('p');
  caption.className = 'note';
  li.append(h, f, canvas, caption);
  if (!m) return li;
  const { min, max } = range(m.data);
  // A figure is a few hundred pixels wide: a long input's n × n steps are shown every k-th row and column.
  const [down, across] = [Math.ceil(m.rows / SHOWN), Math.ceil(m.cols / SHOWN)];
  const [rows, cols] = [Math.ceil(m.rows / down), Math.ceil(m.cols / across)];
  const shown = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++)
    for (let j = 0; j < cols; j++) {
      const x = m.data[i * down * m.cols + j * across];
      shown[i * cols + j] = max > min ? (x - min) / (max - min) : Number.isFinite(x) ? 0.5 : x;
    }
  Object.assign(canvas, { width: cols, height: rows });
  canvas.getContext('2d')!.drawImage(cellImage(shown, cols, [0, rows], [0, cols]), 0, 0);
  canvas.setAttribute('aria-label', `${title}, ${m.rows} by ${m.cols}`);
  caption.textContent = `[${m.rows} × ${m.cols}] · from ${min.toPrecision(3)} (dark) to ${max.toPrecision(3)} (bright)`;
  return li;
}

/** The figures, titled and explained for the math view's switches. */
function steps(s: Readonly<State>, m: NonNullable<State['math']>): Step[] {
  const r = s.result!;
  const model = r.mode === 'model';
  const heads = r.shape[1];
  const n = r.tokens.length;
  const own = headMap(r, m.layer, m.head);
  const weights = m.weights ?? (own ? { data: own, rows: n, cols: n } : undefined);
  const h = m.head + 1;
  // Grouped-query attention: this query head reads the keys and values its group shares.
  const kvHeads = model ? (s.model?.kvHeads ?? heads) : heads;
  const group = kvHeads > 0 && kvHeads < heads ? heads / kvHeads : 1;
  const kv = Math.floor(m.head / group);
  const shared =
    group > 1 ? `, KV head ${kv + 1}: shared by query heads ${kv * group + 1}–${(kv + 1) * group}` : `, head ${h}'s`;
  const scaled = !s.scale
    ? 'not scaled: the softmax saturates'
    : model
      ? `÷ √d_k = ÷ √${m.q.cols}`
      : `× s = ${m.factor}`;
  return [
    ...(model
      ? [
          { title: 'Input', formula: 'X: each token as a vector', m: m.x },
          { title: 'Query weights', formula: `W_Q, head ${h}'s columns`, m: m.wq },
          { title: group > 1 ? 'Key weights (shared)' : 'Key weights', formula: `W_K${shared} columns`, m: m.wk },
          {
            title: group > 1 ? 'Value weights (shared)' : 'Value weights',
            formula: `W_V${shared} columns`,
            m: m.wv,
          },
        ]
      : []),
    { title: 'Queries', formula: model ? 'Q = X · W_Q (+ b)' : 'Q = X', m: m.q },
    {
      title: group > 1 ? 'Keys (shared)' : 'Keys',
      formula: model ? `K = X · W_K (+ b)${group > 1 ? shared : ''}` : 'K = X',
      m: m.k,
    },
    {
      title: group > 1 ? 'Values (shared)' : 'Values',
      formula: model ? `V = X · W_V (+ b)${group > 1 ? shared : ''}` : 'V = X',
      m: m.v,
    },
    { title: 'Scores', formula: 'Q · Kᵀ', m: m.scores },
    { title: 'Scaled', formula: scaled, m: m.scaled },
    { title: 'Masked', formula: s.causal ? 'later keys → −∞ (blank)' : 'no mask', m: m.masked },
    {
      title: 'Weights',
      formula: m.weights ? 'softmax, row by row' : "softmax, row by row: the run's own map",
      m: weights,
    },
    { title: 'Head output', formula: 'weights · V', m: m.output },
    { title: 'All heads side by side', formula: `concat over ${heads} heads, then · W_O`, m: m.concat },
    ...(model ? [{ title: 'Output weights', formula: 'W_O: heads back to the model width', m: m.wo }] : []),
  ];
}

/** Every step in one picture: three per row, each titled. */
function compose(canvas: HTMLCanvasElement, fg: string): HTMLCanvasElement {
  const items = [...document.querySelectorAll<HTMLLIElement>('#steps > li')];
  const cell = 200,
    title = 24,
    per = 3;
  canvas.width = per * (cell + 16);
  canvas.height = Math.ceil(items.length / per) * (cell + title + 16);
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = '13px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  items.forEach((li, k) => {
    const x = (k % per) * (cell + 16),
      y = Math.floor(k / per) * (cell + title + 16);
    ctx.fillStyle = fg;
    ctx.fillText(li.querySelector('h3')?.textContent ?? '', x, y + title / 2);
    const source = li.querySelector('canvas')!;
    const scale = Math.min(cell / source.width, cell / source.height);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(source, x, y + title, source.width * scale, source.height * scale);
  });
  return canvas;
}

export function mathView(page: Page): View {
  const list = $('steps');
  const note = $('math-note');
  const explain = note.textContent ?? '';
  const formulas = changes();
  const pictures = changes();
  const scale = $<HTMLInputElement>('scale');
  const causal = $<HTMLInputElement>('causal');
  scale.addEventListener('change', () => page.store.select({ scale: scale.checked }));
  causal.addEventListener('change', () => page.store.select({ causal: causal.checked }));
  return {
    id: 'math',
    pane: 'math',
    render(s) {
      const r = s.result;
      const m = s.math;
      $('math-layer').textContent = String(s.layer + 1);
      $('math-head').textContent = String(s.head + 1);
      scale.checked = s.scale;
      causal.checked = s.causal;
      const current = !!r && !!m && m.run === r.run && m.layer === s.layer && m.head === s.head;
      list.setAttribute('aria-busy', String(!current || m!.scale !== s.scale || m!.causal !== s.causal));
      const error = s.errors.math;
      note.dataset.state = error ? 'error' : 'ok';
      note.textContent = error ?? explain;
      if (!r || !m || m.run !== r.run) return;
      const all = steps(s, m);
      if (pictures(m)) list.replaceChildren(...all.map(figure));
      else if (formulas(s.scale, s.causal))
        all.forEach((step, k) => {
          const code = list.children[k]?.querySelector('code');
          if (code) code.textContent = step.formula;
        });
    },
    export: {
      canvas: () => compose(document.createElement('canvas'), page.colours().fg),
      draw: (c) => compose(c, page.colours().fg),
    },
  };
}
