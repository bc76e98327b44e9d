// `npm run docs`: the API reference, generated from the package's TSDoc into build/docs/api/ (Markdown, one page per
// symbol; build/docs/api/index.md is the start). Fails when an exported symbol or member has no doc comment, or a
// comment that the TSDoc parser cannot read (api-extractor.json says which messages are errors).
//
//   1. tsc writes the package's declarations to build/docs/dts/ (nothing in dist/ changes);
//   2. one entry file holds both import paths, `attnscope` and `attnscope/models/default`;
//   3. API Extractor checks the comments and writes the doc model; api-documenter turns it into Markdown.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = `${root}build/docs/`;
const bin = (name) => `${root}node_modules/.bin/${name}`;

rmSync(out, { recursive: true, force: true });
execFileSync(bin('tsc'), ['-p', 'web/tsconfig.json', '--emitDeclarationOnly', '--outDir', `${out}dts`], {
  cwd: root,
  stdio: 'inherit',
});

// The package's own documentation comment (index.ts's), then both entry points' exports.
const index = readFileSync(`${out}dts/index.d.ts`, 'utf8');
const packageDoc = index.match(/^\/\*\*[\s\S]*?\*\//)?.[0];
if (!packageDoc?.includes('@packageDocumentation')) throw new Error('docs: index.ts lost its @packageDocumentation');
writeFileSync(
  `${out}dts/reference.d.ts`,
  `${packageDoc.replace(
    ' * @packageDocumentation',
    ' *\n * `defaultModelFiles` is exported by `attnscope/models/default`; everything else by `attnscope`.\n' +
      ' * @packageDocumentation',
  )}\nexport * from './index.js';\nexport { defaultModelFiles } from './models/default.js';\n`,
);

const config = ExtractorConfig.loadFileAndPrepare(`${root}api-extractor.json`);
// A local build: the API report (what makes API Extractor look for undocumented symbols) is written to build/docs/
// rather than compared with a committed copy.
const result = Extractor.invoke(config, {
  localBuild: true,
  messageCallback(message) {
    if (message.messageId === 'console-api-report-created') message.logLevel = 'none';
  },
});
if (!result.succeeded) {
  console.error(`docs: API Extractor found ${result.errorCount} error(s); see above`);
  process.exit(1);
}
execFileSync(bin('api-documenter'), ['markdown', '-i', `${out}model`, '-o', `${out}api`], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
});
console.log(`docs: the API reference is in ${out}api/index.md`);
