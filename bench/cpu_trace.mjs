// Where an engine's threads ran during each of its calls, from the kernel's scheduler
// events (tracefs, so root only). /proc says how long a thread waited for a CPU; this says
// whether another CPU sat idle meanwhile: two threads queued on one CPU while the other
// idles is the scheduler's placement, not a shortage of CPUs.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

import { median } from './stats.mjs';

const DIR = '/sys/kernel/tracing/';
const EVENTS = ['sched/sched_switch', 'sched/sched_wakeup'];

/** @typedef {{ misplaced: number }} TracedCall ms during which one of the threads waited while a CPU idled */

export class CpuTrace {
  /**
   * A trace of `pid`'s threads, or null where tracefs cannot be written (not root, no tracefs).
   * @param {number} pid
   */
  static open(pid) {
    try {
      if (!existsSync(`${DIR}trace`)) execFileSync('mount', ['-t', 'tracefs', 'nodev', DIR], { stdio: 'ignore' });
      writeFileSync(`${DIR}tracing_on`, '0');
      return new CpuTrace(pid);
    } catch {
      return null;
    }
  }
  /** @param {number} pid */
  constructor(pid) {
    this.threads = new Set(readdirSync(`/proc/${pid}/task`).map(Number));
    this.buffer = readFileSync(`${DIR}buffer_size_kb`, 'utf8').trim();
    writeFileSync(`${DIR}buffer_size_kb`, '32768');
    writeFileSync(`${DIR}trace`, '');
    for (const e of EVENTS) writeFileSync(`${DIR}events/${e}/enable`, '1');
    writeFileSync(`${DIR}tracing_on`, '1');
    this.calls = 0;
  }
  /** Marks the start of a call; end() marks its end. */
  begin() {
    writeFileSync(`${DIR}trace_marker`, `call ${this.calls} begin`);
  }
  end() {
    writeFileSync(`${DIR}trace_marker`, `call ${this.calls++} end`);
  }
  /**
   * Stops tracing, restores tracefs and returns, per marked call, `misplaced`: the ms during
   * which one of the threads waited for a CPU while a CPU was idle.
   * @returns {TracedCall[]}
   */
  close() {
    writeFileSync(`${DIR}tracing_on`, '0');
    const text = readFileSync(`${DIR}trace`, 'utf8');
    for (const e of EVENTS) writeFileSync(`${DIR}events/${e}/enable`, '0');
    writeFileSync(`${DIR}trace`, '');
    writeFileSync(`${DIR}buffer_size_kb`, this.buffer);
    return misplacedPerCall(text, this.threads);
  }
}

/** What the columns of placement() mean. */
export const MISPLACED = '"misplaced" is the time one of its threads waited for a CPU while a CPU was idle';

/**
 * Table columns for calls that took `runs` ms and were traced as `calls` (the first
 * runs.length of them): how many were misplaced for 1 ms or more, the median ms of those
 * and of the others, and the mean misplaced ms.
 * @param {number[]} runs
 * @param {TracedCall[]} calls
 */
export function placement(runs, calls) {
  const late = runs.map((_, i) => calls[i].misplaced >= 1);
  const pick = (/** @type {boolean} */ want) => runs.filter((_, i) => late[i] === want);
  const fmt = (/** @type {number[]} */ xs) => (xs.length ? median(xs).toFixed(2) : '—');
  return {
    'calls misplaced ≥ 1 ms': `${pick(true).length} of ${runs.length}`,
    'their median ms': fmt(pick(true)),
    "the others' median ms": fmt(pick(false)),
    'mean misplaced ms': (runs.reduce((sum, _, i) => sum + calls[i].misplaced, 0) / runs.length).toFixed(1),
  };
}

// "<task>-<pid> [<cpu>] <flags> <seconds>: <event>: <fields>"
const LINE = /^\s*.+?-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$/;

/**
 * Reads a tracefs text of sched_switch and sched_wakeup events with each call between
 * "call … begin" and "call … end" marks: per call, how long one of `threads` was waiting
 * for a CPU while a CPU was idle.
 * @param {string} text
 * @param {Set<number>} threads
 * @returns {TracedCall[]}
 */
export function misplacedPerCall(text, threads) {
  /** @type {Map<string, number>} */
  const running = new Map(); // cpu → pid running on it (0: idle), once seen
  /** @type {Set<number>} */
  const waiting = new Set(); // our threads that are runnable but not running
  /** @type {TracedCall[]} */
  const calls = [];
  /** @type {TracedCall | null} */
  let call = null;
  let last = 0;
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const [, current, cpu, seconds, event, fields] = m;
    const t = Number(seconds) * 1000;
    if (call && waiting.size && [...running.values()].includes(0)) call.misplaced += t - last;
    last = t;
    // Whoever logs an event is running on that CPU (a switch to it is not always logged).
    running.set(cpu, Number(current));
    waiting.delete(Number(current));
    if (event === 'tracing_mark_write') {
      if (fields.endsWith('begin')) call = { misplaced: 0 };
      else if (call) {
        calls.push(call);
        call = null;
      }
    } else if (event === 'sched_switch') {
      const [, prev, state, next] = /prev_pid=(\d+) .*prev_state=(\S+) ==> .*next_pid=(\d+)/.exec(fields) ?? [];
      if (threads.has(Number(prev)) && state.startsWith('R')) waiting.add(Number(prev));
      waiting.delete(Number(next));
      running.set(cpu, Number(next));
    } else if (event === 'sched_wakeup') {
      const [, pid, target] = /pid=(\d+) .*target_cpu=(\d+)/.exec(fields) ?? [];
      // A thread woken before it got off its CPU is still running: no switch follows. One
      // woken onto an idle CPU runs next (the trace does not always log that switch).
      if (running.get(target) === 0) running.set(target, Number(pid));
      else if (threads.has(Number(pid)) && ![...running.values()].includes(Number(pid))) waiting.add(Number(pid));
    }
  }
  return calls;
}
