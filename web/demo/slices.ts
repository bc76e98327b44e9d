// Work too long for one task, cut into tasks of a few milliseconds: between them the page answers keystrokes,
// clicks and scrolls and paints, so no task blocks it long (the Long Tasks API counts 50 ms as long).
// A MessageChannel message is the next task without setTimeout's clamp of 4 ms once timeouts nest.

const channel = new MessageChannel();
const waiting: Array<() => void> = [];
channel.port1.onmessage = () => waiting.shift()?.();
const nextTask = (resolve: () => void) => {
  waiting.push(resolve);
  channel.port2.postMessage(null);
};

export interface Sliced {
  cancel(): void;
  /** Whether it ran to the end (not cancelled). */
  readonly done: boolean;
}

/**
 * Calls `step` again and again, a task of at most `budget` ms at a time, until it returns true (finished) or the
 * job is cancelled; `progress` runs after each task (to draw what is ready).
 */
export function sliced(step: () => boolean, progress: () => void = () => {}, budget = 8): Sliced {
  let cancelled = false;
  let finished = false;
  const run = () => {
    if (cancelled) return;
    const start = performance.now();
    do {
      if (step()) {
        finished = true;
        break;
      }
    } while (performance.now() - start < budget);
    progress();
    if (!finished) nextTask(run);
  };
  nextTask(run);
  return {
    cancel: () => {
      cancelled = true;
    },
    get done() {
      return finished;
    },
  };
}
