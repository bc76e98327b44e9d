// The embedded default model after the machine has been idle for a while: a page
// computes after a keystroke, not back to back. Each engine is its own process, as in
// npm run bench, and runs alone while the others sleep. On this project's VM a run
// after 30 ms or more of idling is up to 2× slower, native code included. Seen from
// /proc during such runs: the same work takes up to twice the CPU time, and the two
// threads sometimes share one CPU for several ms; the host places this VM's vCPUs.
// So interleaved benchmarks, which idle between calls, read slower than back-to-back loops.
//
//   npm run bench:idle        (after npm run build)
import { setTimeout as sleep } from 'node:timers/promises';

import { attnscopeEngines, defaultModelDir, nativeEngines, prepare } from './processes.mjs';
import { SENTENCE } from './workloads.mjs';

prepare();
const IDLE_MS = [0, 1, 3, 10, 30, 100];
const engines = [...attnscopeEngines(), ...nativeEngines()];

const rows = [];
for (const e of engines) {
  await e.ask({ op: 'setup', work: 'default', text: SENTENCE, models: defaultModelDir });
  for (let i = 0; i < 300; i++) await e.ask({ op: 'run' }); // V8 tiers the code up
  const row = { engine: e.name };
  for (const idle of IDLE_MS) {
    const times = [];
    for (let i = 0; i < (idle >= 30 ? 15 : 40); i++) {
      if (idle) await sleep(idle);
      times.push((await e.ask({ op: 'run' })).ms);
    }
    times.sort((a, b) => a - b);
    row[`idle ${idle} ms`] = times[times.length >> 1].toFixed(2);
  }
  rows.push(row);
  e.quit();
}
console.log('Default model, 20-token sentence: median ms of a run that follows the given idle time');
console.table(rows);
