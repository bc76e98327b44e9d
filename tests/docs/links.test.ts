// Every link in README.md and docs/*.md resolves: a relative link (docs/) names a file or folder of this repository,
// a link into this repository's GitHub pages (the README's, which must also work on npmjs.com, where relative links
// do not) names one too, and an anchor names a heading of the page it points to, as GitHub makes them. Links to other
// sites are not fetched.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { repository: { url: string } };
/** https://github.com/owner/name, from package.json's repository. */
const repository = manifest.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
const [owner, name] = new URL(repository).pathname.slice(1).split('/');

/** The page's text with fenced code blocks and code spans blanked out (links there are code, not links). */
function prose(markdown: string): string {
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
}

/** GitHub's anchors for a page's headings: lowercased, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading] of text.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const plain = heading
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .replace(/[`*]/g, '');
    const slug = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    out.add(count ? `${slug}-${count}` : slug);
  }
  return out;
}

/** Every link and image target in a page, with its line. */
function links(markdown: string): Array<{ target: string; line: number }> {
  const out: Array<{ target: string; line: number }> = [];
  prose(markdown)
    .split('\n')
    .forEach((line, i) => {
      for (const [, target] of line.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) out.push({ target, line: i + 1 });
    });
  return out;
}

/** The file in this checkout that a link points to, with its anchor; null for another site. */
function local(page: string, target: string): { file: string; anchor?: string } | null {
  const [path, anchor] = target.split('#') as [string, string | undefined];
  const pages = new RegExp(`^https://github\\.com/${owner}/${name}(?:/(?:blob|tree)/main/(.*))?/?$`);
  const raw = new RegExp(`^https://raw\\.githubusercontent\\.com/${owner}/${name}/main/(.*)$`);
  if (/^https?:\/\//.test(path)) {
    const match = path.match(pages) ?? path.match(raw);
    if (!match) return null;
    return { file: join(root, match[1] ?? 'README.md'), anchor };
  }
  return { file: path ? join(dirname(page), decodeURIComponent(path)) : page, anchor };
}

const docs = join(root, 'docs');
const pages = [
  join(root, 'README.md'),
  ...readdirSync(docs)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(docs, f)),
];

describe.each(pages.map((p) => [relative(root, p), p]))('%s', (shown, page) => {
  const markdown = readFileSync(page, 'utf8');

  it('links only to files that exist, and to headings that exist', () => {
    const broken: string[] = [];
    for (const { target, line } of links(markdown)) {
      const to = local(page, target);
      if (!to) continue;
      if (!existsSync(to.file)) {
        broken.push(`line ${line}: ${target} (no ${relative(root, to.file)})`);
        continue;
      }
      if (to.anchor && !(statSync(to.file).isFile() && anchors(readFileSync(to.file, 'utf8')).has(to.anchor)))
        broken.push(`line ${line}: ${target} (no heading #${to.anchor} in ${relative(root, to.file)})`);
    }
    expect(broken, `${shown}:\n${broken.join('\n')}`).toEqual([]);
  });

  if (shown === 'README.md')
    it('links absolutely, so that its links work on npmjs.com too', () => {
      const relativeLinks = links(markdown).filter(({ target }) => !/^(https:\/\/|#)/.test(target));
      expect(relativeLinks).toEqual([]);
    });
});

describe('anchors', () => {
  it('are made as GitHub makes them', () => {
    const page = '# A `code` title\n## Use it, in *your* app!\n```\n# not a heading\n```\n## Use it, in your app\n';
    expect([...anchors(page)]).toEqual(['a-code-title', 'use-it-in-your-app', 'use-it-in-your-app-1']);
  });
});
