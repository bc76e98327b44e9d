// The package as a user gets it: npm pack, install into an empty folder outside
// the repository, import by name in Node and compute.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'attnscope-pack-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

it('npm pack → npm install in an empty folder → import and compute in Node', () => {
  const tarball = run('npm', ['pack', '--silent', '--pack-destination', work], root).trim().split('\n').pop()!;
  const listing = run('tar', ['-tzf', join(work, tarball)], work);
  // Ships the four builds for both environments (in browsers the relaxed ones share their twin's glue),
  // the opt-in default model, and no sources or build leftovers.
  const builds = ['mt', 'st', 'mt-relaxed', 'st-relaxed'];
  for (const f of [
    'dist/node.js',
    'dist/browser.js',
    'dist/index.d.ts',
    'dist/models/default.js',
    'dist/models/default.d.ts',
    'dist/models/default/model.safetensors.index.json',
    'dist/wasm/node/package.json',
    ...builds.flatMap((b) => [`dist/wasm/node/attnscope-${b}.js`, `dist/wasm/node/attnscope-${b}.wasm`]),
    ...builds.map((b) => `dist/wasm/web/attnscope-${b}.wasm`),
    'dist/wasm/web/attnscope-mt.js',
    'dist/wasm/web/attnscope-st.js',
    'dist/wasm/node/attnscope-mt.worker.js',
    'dist/wasm/node/attnscope-mt-relaxed.worker.js',
  ])
    expect(listing).toContain(`package/${f}`);
  expect(listing).not.toMatch(/package\/(cpp|tests|build|web)\//);
  expect(listing).not.toMatch(/package\/dist\/wasm\/web\/attnscope-(mt|st)-relaxed\.js|model\.safetensors\n/);

  const app = join(work, 'app');
  run('mkdir', ['-p', app], work);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--offline', join(work, tarball)], app);
  expect(readdirSync(join(app, 'node_modules'))).toContain('attnscope');
  writeFileSync(
    join(app, 'main.js'),
    `import { createEngine } from 'attnscope';
for (const threads of [2, 1]) {
  const engine = await createEngine({ threads });
  const x = { data: new Float32Array([1, 0, 0, 1, 1, 1]), shape: [3, 2] };
  const { output, weights } = engine.selfAttention(x);
  const model = await engine.loadModel('default');
  const run = model.run('The cat sat on the mat.');
  console.log(JSON.stringify({ info: engine.info(), output: Array.from(output.data), rowSum: weights.data[0] + weights.data[1] + weights.data[2], tokens: run.tokens, shape: run.shape }));
  engine.dispose();
}
`,
  );
  // Node 20 as it comes, then with relaxed SIMD switched on (as Node 22 and browsers have it).
  const lines = [[], ['--experimental-wasm-relaxed-simd']].flatMap((flags) =>
    run('node', [...flags, 'main.js'], app)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  );
  expect(lines.map((l) => l.info.build)).toEqual(['simd-threads', 'simd', 'relaxed-simd-threads', 'relaxed-simd']);
  for (const l of lines) {
    expect(l.rowSum).toBeCloseTo(1, 6);
    expect(l.tokens).toEqual(['▁The', '▁cat', '▁sat', '▁on', '▁the', '▁ma', 't', '.']);
    expect(l.shape).toEqual([2, 4, 8, 8]);
    // softmax([1, 0, 1]) over rows of x, times x: row 0 of the output
    const e = Math.E;
    expect(l.output[0]).toBeCloseTo((e + e) / (e + 1 + e), 5);
  }
}, 180_000);
