// The documentation's shape (issue 37): a short README that links one page per topic, and pages that say what
// AttnScope does now, without the history of how it got there (that is in the git log).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const TOPICS = ['api', 'models', 'analysis', 'performance', 'architecture', 'testing'];
/** Pages held to the no-history rule. */
const PAGES = [
  'README.md',
  'bench/README.md',
  ...['api', 'models', 'analysis', 'performance', 'testing', 'cpp', 'architecture'].map((t) => `docs/${t}.md`),
];

describe('README.md', () => {
  const readme = read('README.md');
  it('is under 200 lines', () => expect(readme.trimEnd().split('\n').length).toBeLessThan(200));
  it('links every topic page', () => {
    for (const topic of TOPICS) expect(readme, topic).toContain(`/docs/${topic}.md`);
  });
});

describe.each(PAGES)('%s', (page) => {
  const text = read(page);
  it('tells no history: no machine of the day, no commit, nothing tried and dropped', () => {
    const lines = text.split('\n');
    const found = lines
      .map((line, i) => ({ line, n: i + 1 }))
      .filter(({ line }) =>
        [
          /\bthis VM\b/i,
          /\b(this|a later|that|the same) session\b/i,
          /\bnot kept\b/i,
          /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/,
        ].some((re) => re.test(line)),
      )
      .map(({ line, n }) => `line ${n}: ${line}`);
    expect(found).toEqual([]);
  });
});

describe('docs/architecture.md', () => {
  const text = read('docs/architecture.md');
  it('names only files that are there (but in the worked example of an input kind to come)', () => {
    const files = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n');
    const [before, after = ''] = text.split('## Adding an input kind');
    const rest = after.slice(after.indexOf('\n## '));
    const named = [...(before + rest).matchAll(/`([\w./-]+\.(?:ts|cpp|hpp|mjs|py|css|html))`/g)].map(([, f]) => f);
    expect(named.length).toBeGreaterThan(20);
    const missing = named.filter((f) => !files.some((path) => path === f || path.endsWith(`/${f}`)));
    expect(missing).toEqual([]);
  });
});

describe('docs/performance.md', () => {
  const text = read('docs/performance.md');
  it('dates every run it shows and names the command that repeats it', () => {
    const sections = text.split(/^## /m).filter((s) => /^\| .*\d/m.test(s));
    for (const s of sections.filter((s) => !s.startsWith('The targets'))) {
      expect(s, s.slice(0, 40)).toMatch(/run on \d{4}-\d{2}-\d{2}/);
      expect(s, s.slice(0, 40)).toMatch(/`npm run bench[^`]*`/);
    }
  });
  it('shows the plot that npm run bench draws', () => {
    expect(text).toContain('](performance.svg)');
    expect(existsSync(join(root, 'docs/performance.svg'))).toBe(true);
  });
});
