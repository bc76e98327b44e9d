// Section 10, `npm run bench -- blocks`: every model family on the one transformer block, this checkout against
// another one (A/B in one run, interleaved round by round), one thread each.
//
//   git worktree add /tmp/before <commit> && (cd /tmp/before && ln -s "$PWD/node_modules" . && npm run build)
//   ATTNSCOPE_BASELINE=/tmp/before npm run bench -- blocks
//
// Without ATTNSCOPE_BASELINE it times this checkout alone. Rows: BERT-base in float32 and in BF16, the embedded
// default model (USE-lite), and the SmolLM2-shaped decoder's prefill and decode.
import { fmt, ratio } from './harness.mjs';
import { ATTNSCOPE_BUILDS as VARIANTS, EngineProcess, nodeEngine, prepareLlm, defaultModelDir } from './processes.mjs';
import { SENTENCE } from './workloads.mjs';

const ROWS = [
  { label: 'BERT-base n=128, float32', work: { work: 'bert', n: 128 }, rounds: 15 },
  { label: 'BERT-base n=128, BF16', work: { work: 'bert-bf16', n: 128 }, rounds: 15 },
  { label: 'default model, 20 tokens', work: { work: 'default', text: SENTENCE, models: defaultModelDir }, rounds: 40 },
  { label: 'decoder prefill n=128', work: { work: 'llm-prefill', n: 128 }, rounds: 5 },
  { label: 'decoder decode at 256 (ms/token)', work: { work: 'llm-decode', context: 256, tokens: 16 }, rounds: 3 },
];

export async function blocks({ engines, measure }) {
  prepareLlm();
  const baseline = process.env.ATTNSCOPE_BASELINE;
  const ours = VARIANTS.map(({ name }) => engines.find((e) => e.name === `AttnScope ${name} ×1`));
  const theirs = baseline
    ? VARIANTS.map(({ name, build }) => {
        const [command, args] = nodeEngine('attnscope.mjs', 1, build);
        return new EngineProcess(`before ${name} ×1`, command, [...args, baseline]);
      })
    : [];
  const among = [...ours, ...theirs];
  const table = [];
  for (const { label, work, rounds } of ROWS) {
    const r = await measure(label, work, { rounds, warmup: 2 }, among, among[0].name);
    table.push({
      row: label,
      ...Object.fromEntries(among.map((e) => [e.name, fmt(r[e.name]?.ms)])),
      ...Object.fromEntries(
        theirs.length
          ? VARIANTS.map(({ name }) => [
              `${name}: speed now vs before`,
              ratio(r[`AttnScope ${name} ×1`], r[`before ${name} ×1`]),
            ])
          : [],
      ),
    });
  }
  console.log(
    `\n10. Every family on the one block, one thread (median ms)${baseline ? `: this checkout against ${baseline}` : ''}`,
  );
  console.table(table);
  for (const e of theirs) e.quit();
}
