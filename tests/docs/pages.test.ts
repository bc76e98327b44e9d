// The documentation's shape (issue 37): a short README that links one page per topic, and pages that say what
// AttnScope does now, without the history of how it got there (that is in the git log).
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
  ...['api', 'models', 'analysis', 'performance', 'testing', 'cpp'].map((t) => `docs/${t}.md`),
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
