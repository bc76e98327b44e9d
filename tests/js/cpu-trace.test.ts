// The benchmark's reading of the kernel's scheduler events (bench/cpu_trace.mjs), on
// trace lines written here in tracefs's format: which calls waited for a CPU while one idled.
import { describe, expect, it } from 'vitest';

import { misplacedPerCall } from '../../bench/cpu_trace.mjs';

const MAIN = 100;
const WORKER = 101;
const OTHER = 200;

/** One tracefs line: `task-pid [cpu] flags seconds: event: fields`, at `ms` milliseconds. */
const line = (pid: number, cpu: number, ms: number, event: string, fields: string) =>
  `  node-${pid}  [00${cpu}] d..2. ${(ms / 1000).toFixed(6)}: ${event}: ${fields}`;
const wakeup = (by: number, cpu: number, ms: number, pid: number, target: number) =>
  line(by, cpu, ms, 'sched_wakeup', `comm=node pid=${pid} prio=120 target_cpu=00${target}`);
const swtch = (cpu: number, ms: number, prev: number, state: string, next: number) =>
  line(
    prev,
    cpu,
    ms,
    'sched_switch',
    `prev_comm=node prev_pid=${prev} prev_prio=120 prev_state=${state} ==> next_comm=node next_pid=${next} next_prio=120`,
  );
const mark = (cpu: number, ms: number, text: string, by = OTHER) => line(by, cpu, ms, 'tracing_mark_write', text);

const ours = new Set([MAIN, WORKER]);

describe('CpuTrace: misplaced time per call', () => {
  it('counts the time a thread waits on a busy CPU while the other CPU idles', () => {
    const trace = [
      swtch(1, 0, OTHER, 'S', 0), // CPU 1 idle from here
      swtch(0, 0.5, OTHER, 'S', MAIN), // main runs on CPU 0
      mark(0, 1, 'call 0 begin'),
      wakeup(MAIN, 0, 2, WORKER, 0), // the worker queued behind main on CPU 0
      swtch(0, 5, MAIN, 'R', WORKER), // 3 ms later it runs, and main waits
      swtch(0, 6, WORKER, 'S', MAIN), // 1 ms later main runs again
      mark(0, 7, 'call 0 end'),
    ].join('\n');
    const [call] = misplacedPerCall(trace, ours);
    expect(call.misplaced).toBeCloseTo(4, 6);
  });

  it('counts nothing when the other CPU was busy, or when the woken thread went to the idle CPU', () => {
    const trace = [
      swtch(1, 0, 0, 'R', OTHER), // CPU 1 runs someone else's thread
      swtch(0, 0, OTHER, 'S', MAIN),
      mark(0, 1, 'call 0 begin'),
      wakeup(MAIN, 0, 2, WORKER, 0),
      swtch(0, 5, MAIN, 'R', WORKER),
      mark(0, 7, 'call 0 end'),
      swtch(0, 7.5, WORKER, 'S', MAIN),
      swtch(1, 8, OTHER, 'S', 0), // now CPU 1 idles
      mark(0, 9, 'call 1 begin'),
      wakeup(MAIN, 0, 10, WORKER, 1), // woken onto idle CPU 1: the trace need not log the switch to it
      line(WORKER, 1, 12, 'sched_wakeup', `comm=node pid=${OTHER} prio=120 target_cpu=000`),
      mark(0, 13, 'call 1 end'),
    ].join('\n');
    expect(misplacedPerCall(trace, ours).map((c) => c.misplaced)).toEqual([0, 0]);
  });

  it('does not count a thread woken while it was still on its CPU', () => {
    const trace = [
      swtch(0, 0, OTHER, 'S', WORKER),
      mark(1, 1, 'call 0 begin'),
      swtch(1, 1.5, OTHER, 'S', 0),
      line(0, 1, 2, 'sched_wakeup', `comm=node pid=${WORKER} prio=120 target_cpu=000`), // from an interrupt on idle CPU 1
      line(OTHER, 1, 4, 'tracing_mark_write', 'call 0 end'),
    ].join('\n');
    expect(misplacedPerCall(trace, ours)[0].misplaced).toBe(0);
  });

  it('takes whoever logs an event as running on that CPU, logged switch or not', () => {
    const trace = [
      swtch(1, 0, OTHER, 'S', 0), // CPU 1 idles
      swtch(0, 0, OTHER, 'S', MAIN),
      mark(0, 1, 'call 0 begin', MAIN),
      wakeup(MAIN, 0, 2, WORKER, 0), // queued behind main while CPU 1 idles ...
      line(WORKER, 1, 3, 'sched_migrate_task', 'comm=node pid=1 prio=120 orig_cpu=0 dest_cpu=1'), // ... until it shows up on CPU 1
      swtch(0, 4, MAIN, 'S', 0), // CPU 0 idles
      mark(1, 7, 'call 0 end', WORKER),
      mark(1, 8, 'call 1 begin', OTHER), // someone else on CPU 1 now
      wakeup(OTHER, 1, 8.5, MAIN, 0), // main onto idle CPU 0
      wakeup(MAIN, 0, 9, WORKER, 0), // the worker queued behind it: no CPU idles
      mark(0, 10, 'call 1 end', MAIN),
    ].join('\n');
    expect(misplacedPerCall(trace, ours).map((c) => c.misplaced)).toEqual([expect.closeTo(1, 6), 0]);
  });
});
