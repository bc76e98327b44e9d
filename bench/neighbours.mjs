// How much a call slows down when another engine ran just before it, as in npm run bench,
// where every round runs each engine once. Multi-head attention, n = 128 (d_model 768, 12
// heads): each subject runs after nothing but its own settle, or after one set of
// neighbours (each of them run once, then settled), 25 rounds each. The second table reads
// /proc as bench:idle does: CPU ms of all the subject's threads / ms they waited for a CPU.
// The third (as root) reads the scheduler's own events for AttnScope relaxed ×2 (CpuTrace):
// in how many calls one of its threads waited for a CPU while a CPU was idle, and how long
// those calls and the others took.
//
//   npm run bench:neighbours       (after npm run build)
import { CpuTrace, MISPLACED, placement } from './cpu_trace.mjs';
import { EngineProcess, attnscopeEngines, nativeEngines, nodeEngine, prepare } from './processes.mjs';

prepare();
const N = 128;
const ROUNDS = 25;
const [relaxed1, relaxed2] = attnscopeEngines().filter((e) => e.name.includes('relaxed'));
const ort2 = new EngineProcess('ORT-web ×2', ...nodeEngine('ort.mjs', 2));
const tfjs = new EngineProcess('TF.js wasm ×1', ...nodeEngine('tfjs.mjs', 1));
const natives = nativeEngines();
const subjects = [relaxed1, relaxed2, ort2];
const neighbourSets = (subject) => ({
  nothing: [],
  'native ×1, ×2': natives,
  'TF.js wasm ×1': [tfjs],
  'the other ×2 engine': [subject === ort2 ? relaxed2 : ort2],
});

const everyone = [relaxed1, relaxed2, ort2, tfjs, ...natives];
for (const e of everyone) {
  await e.ask({ op: 'setup', work: 'mha', n: N });
  for (let i = 0; i < 40; i++) await e.ask({ op: 'run' }); // V8 tiers the code up
  await e.settle();
}
const trace = CpuTrace.open(relaxed2.process.pid);
const traced = []; // [label, ms of each call] for relaxed ×2, in the order traced
const times = [];
const costs = [];
for (const subject of subjects) {
  const row = { engine: subject.name };
  const cost = { engine: subject.name };
  for (const [label, neighbours] of Object.entries(neighbourSets(subject))) {
    const r = await subject.timedCalls(
      ROUNDS,
      async () => {
        await subject.settle();
        for (const e of neighbours) {
          await e.ask({ op: 'run' });
          await e.settle();
        }
      },
      subject === relaxed2 ? trace : null,
    );
    if (subject === relaxed2) traced.push([label, r.runs]);
    row[`after ${label}`] = r.ms.toFixed(2);
    cost[`after ${label}`] = r.cost;
  }
  times.push(row);
  costs.push(cost);
}
console.log(`Multi-head attention, n = ${N}: median ms of a call that follows the given engines' calls`);
console.table(times);
console.log('The same calls from /proc, mean per call: CPU ms of all the threads / ms they waited for a CPU');
console.table(costs);
if (trace) {
  const misplaced = trace.close();
  console.log(`${relaxed2.name}, from the scheduler's events: ${MISPLACED}`);
  console.table(traced.map(([label, runs], i) => ({ after: label, ...placement(runs, misplaced.slice(i * ROUNDS)) })));
} else console.log('(The scheduler-event table needs root, for tracefs.)');
for (const e of everyone) e.quit();
