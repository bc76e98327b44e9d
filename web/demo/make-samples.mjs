// The speech samples the page offers, made here rather than downloaded or committed: Debian's espeak-ng speaks each
// sentence below into a WAV (22,050 Hz mono 16-bit, as espeak-ng writes them; the engine resamples to 16 kHz), in
// public/samples/ with an index.json saying what each one says and how it was made. .ci/setup runs this; the files
// are build outputs (git ignores them). Run again: `node web/demo/make-samples.mjs`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const out = fileURLToPath(new URL('../../public/samples/', import.meta.url));

/** Each sample: its file, its button, the voice (espeak-ng's language) and what it says. */
export const SAMPLES = [
  {
    id: 'english',
    title: 'English',
    voice: 'en-us',
    text: 'The quick brown fox jumps over the lazy dog, and the cat sat on the mat.',
  },
  {
    id: 'german',
    title: 'German',
    voice: 'de',
    text: 'Der Hund sitzt auf der Matte, und die Katze schläft in der Sonne.',
  },
  { id: 'french', title: 'French', voice: 'fr', text: 'Le chat dort sur le tapis, et le chien regarde la lune.' },
];
const SPEED = 150; // words per minute

mkdirSync(out, { recursive: true });
const index = SAMPLES.map(({ id, title, voice, text }) => {
  const file = `${id}.wav`;
  execFileSync('espeak-ng', ['-v', voice, '-s', String(SPEED), '-w', `${out}${file}`, text]);
  return { id, title, file, text, made: `espeak-ng -v ${voice} -s ${SPEED} -w ${file} "${text}"` };
});
writeFileSync(`${out}index.json`, `${JSON.stringify(index, null, 2)}\n`);
console.log(`samples: ${index.length} made with espeak-ng in public/samples/`);
