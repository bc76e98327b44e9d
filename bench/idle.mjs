// The embedded default model after the machine has been idle for a while: a page
// computes after a keystroke, not back to back. On this project's VM a call after
// 10 ms or more of idling runs up to 1.7× slower on one thread and 2.5× on two (the
// CPUs clock down or are descheduled while idle), so interleaved benchmarks, which
// idle between calls, read slower than back-to-back loops.
//
//   npm run bench:idle        (after npm run build)
import { setTimeout as sleep } from 'node:timers/promises';

import { createEngine } from '../dist/node.js';
import { SENTENCE } from './workloads.mjs';

const rows = [];
for (const threads of [1, 2]) {
  const engine = await createEngine({ threads });
  const model = await engine.loadModel('default');
  for (let i = 0; i < 300; i++) model.run(SENTENCE); // V8 tiers the code up
  const row = { threads };
  for (const idle of [0, 1, 3, 10, 30, 100]) {
    const times = [];
    for (let i = 0; i < (idle >= 30 ? 15 : 40); i++) {
      if (idle) await sleep(idle);
      const start = performance.now();
      model.run(SENTENCE);
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    row[`idle ${idle} ms`] = times[times.length >> 1].toFixed(2);
  }
  rows.push(row);
  engine.dispose();
}
console.log('Default model, 20-token sentence: median ms of a run that follows the given idle time');
console.table(rows);
