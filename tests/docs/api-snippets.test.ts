// Every ```js block of docs/api.md, run as a user would run it: saved as a module inside this repository, so that
// `import … from 'attnscope'` resolves to the package itself (its `exports`, the built dist/), and run by Node from
// the repository's root, where the paths the snippets read (checkpoints in tests/golden/, tokenizers in
// node_modules/) are. A snippet that throws, or whose `assert` fails, fails here: the page cannot drift from the API.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(join(root, 'docs/api.md'), 'utf8');

/** Each ```js block with the heading it sits under and its line in the page. */
function snippets(markdown: string): Array<{ heading: string; line: number; code: string }> {
  const out: Array<{ heading: string; line: number; code: string }> = [];
  let heading = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const title = lines[i].match(/^#{1,4} (.*)/);
    if (title) heading = title[1];
    if (lines[i] !== '```js') continue;
    const start = i;
    const code: string[] = [];
    while (++i < lines.length && lines[i] !== '```') code.push(lines[i]);
    out.push({ heading, line: start + 1, code: code.join('\n') + '\n' });
  }
  return out;
}

const blocks = snippets(page);
const dir = join(root, 'test-output/docs/snippets');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });

describe('docs/api.md', () => {
  it('has a runnable snippet for every task', () => {
    const headings = new Set(blocks.map((b) => b.heading));
    for (const task of ['Attention', 'Layers', 'Models', 'Generation', 'Analysis', 'Export'])
      expect(
        [...headings].some((h) => h.startsWith(task)),
        task,
      ).toBe(true);
    for (const b of blocks) expect(b.code, `line ${b.line}`).toMatch(/from 'attnscope'/);
  });

  it.each(blocks.map((b) => [`line ${b.line} (${b.heading})`, b] as const))('%s runs', (_, block) => {
    const file = join(dir, `api-${block.line}.mjs`);
    writeFileSync(file, block.code);
    try {
      execFileSync(process.execPath, [file], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      const { stdout, stderr } = err as { stdout?: string; stderr?: string };
      throw new Error(`docs/api.md line ${block.line} failed:\n${stderr || stdout || String(err)}`);
    }
  });
});
