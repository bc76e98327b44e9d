// The embedded default model after the machine has been idle for a while: a page
// computes after a keystroke, not back to back. Each engine is its own process, as in
// npm run bench, and runs alone while the others sleep: a run after some idling can be
// slower than back to back, native code included. The second table looks for why, from
// /proc: whether the same work takes more CPU time, and whether with two threads they
// wait for a CPU (the woken worker queued on the busy one) while the other is idle. If
// so, interleaved benchmarks, which idle between calls, read slower than back-to-back
// loops. The third table (as root) checks that from the scheduler's own
// events: calls whose threads waited while a CPU idled, against the rest. Last,
// bench/wake_placement.cpp shows the kernel's choice alone: where a woken thread first
// runs, after its waker idled and then ran for a while.
//
//   npm run bench:idle        (after npm run build)
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

import { CpuTrace, MISPLACED, placement } from './cpu_trace.mjs';
import { attnscopeEngines, defaultModelDir, nativeDir, nativeEngines, prepare } from './processes.mjs';
import { SENTENCE } from './workloads.mjs';

prepare();
const IDLE_MS = [0, 1, 3, 10, 30, 100];
const engines = [...attnscopeEngines(), ...nativeEngines()];

const rows = [];
const costs = [];
const placements = [];
for (const e of engines) {
  await e.ask({ op: 'setup', work: 'default', text: SENTENCE, models: defaultModelDir });
  for (let i = 0; i < 300; i++) await e.ask({ op: 'run' }); // V8 tiers the code up
  const row = { engine: e.name };
  const cost = { engine: e.name };
  const trace = e.name.endsWith('×2') ? CpuTrace.open(e.process.pid) : null;
  const traced = [];
  for (const idle of IDLE_MS) {
    const r = await e.timedCalls(idle >= 30 ? 15 : 40, () => idle && sleep(idle), trace);
    row[`idle ${idle} ms`] = r.ms.toFixed(2);
    cost[`idle ${idle} ms`] = r.cost;
    traced.push([idle, r.runs]);
  }
  if (trace) {
    const calls = trace.close();
    for (const [idle, runs] of traced)
      placements.push({ engine: e.name, idle, ...placement(runs, calls.splice(0, runs.length)) });
  }
  rows.push(row);
  costs.push(cost);
  e.quit();
}
console.log('Default model, 20-token sentence: median ms of a run that follows the given idle time');
console.table(rows);
console.log(
  "The same runs from /proc, mean per run: CPU ms of all the engine's threads / ms they waited for a CPU.\n" +
    'Where both grow with idling, the same work took more CPU time, and threads queued behind each other.',
);
console.table(costs);
if (placements.length) {
  console.log(`Two threads, from the scheduler's events: ${MISPLACED}`);
  console.table(placements);
} else console.log('(The scheduler-event table needs root, for tracefs.)');
console.log(execFileSync(`${nativeDir}/wake_placement`, { encoding: 'utf8' }));
