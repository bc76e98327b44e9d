// The page's one line to the worker. It owns the Worker and the request ids, and it applies the
// one staleness rule, so no view has to: a reply counts only if it answers the newest request of
// its kind, and a model load retires everything asked before it (runs, and every analysis of them).
import type {
  Ask,
  Drawn,
  Failure,
  Kind,
  Message,
  Progress,
  Recycle,
  Reply,
  Request,
  TargetTokenMessage,
  TokenMessage,
  TranscriptMessage,
} from './protocol.js';

export type Handlers = { [K in Kind]?: (reply: Reply<K>) => void } & {
  progress?: (progress: Progress) => void;
  /** A generated token: it belongs to its generate request, and counts while that one does. */
  token?: (token: TokenMessage) => void;
  /** A generated target token: it belongs to its translate request, and counts while that one does. */
  targetToken?: (token: TargetTokenMessage) => void;
  /** A speech model's transcript so far: it belongs to its run request, and counts while that one does. */
  transcript?: (message: TranscriptMessage) => void;
  error?: (failure: Failure) => void;
  /** The worker itself failed (it did not load, or threw outside a request). */
  crash?: (message: string) => void;
};

export class Channel {
  private readonly worker: Worker;
  private counter = 0;
  /** Per kind, the id of the newest request: only its reply counts. The worker's own first load is id 0. */
  private readonly newest: Partial<Record<Kind, number>> = { load: 0 };

  constructor(private readonly handlers: Handlers) {
    // Written out here, not passed in: bundlers find the worker's entry by this very expression.
    this.worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
    this.worker.onmessage = (event: MessageEvent<Message>) => this.receive(event.data);
    this.worker.onerror = (event) => handlers.crash?.(event.message);
  }

  /** Posts a request (its typed arrays moved, not copied, when listed in `transfer`); returns its id. */
  send<K extends Kind>(ask: Ask<K>, transfer: Transferable[] = []): number {
    const id = ++this.counter;
    this.newest[ask.kind] = id;
    this.worker.postMessage({ ...ask, id } as Request, transfer);
    return id;
  }

  /** Retires every request of a kind asked so far: their replies (and tokens) no longer count. */
  retire(kind: Kind): void {
    this.newest[kind] = ++this.counter;
  }

  /** Whether a reply to request `id` of this kind would still count. */
  current(kind: Kind, id: number): boolean {
    const load = this.newest.load ?? 0;
    return id === this.newest[kind] && (kind === 'load' || id > load);
  }

  /** Hands a token message's buffer back to the worker, which writes the next tokens' rows into it. */
  private recycle(message: Message): void {
    if (message.kind === 'token')
      this.worker.postMessage({ kind: 'recycle', buffer: message.rows.buffer as ArrayBuffer } satisfies Recycle, [
        message.rows.buffer as ArrayBuffer,
      ]);
  }

  private receive(message: Message): void {
    const kind =
      message.kind === 'progress'
        ? 'load'
        : message.kind === 'token'
          ? 'generate'
          : message.kind === 'target-token'
            ? 'translate'
            : message.kind === 'transcript'
              ? 'run'
              : message.kind === 'error'
                ? message.during
                : message.kind;
    const start = performance.now();
    let handled = 0;
    if (message.kind === 'token') this.timeFrame(() => handled);
    try {
      if (!this.current(kind, message.id)) return;
      // (A token message's handler copies what it keeps of the rows: the buffer then goes back.)
      if (message.kind === 'progress') this.handlers.progress?.(message);
      else if (message.kind === 'token') this.handlers.token?.(message);
      else if (message.kind === 'target-token') this.handlers.targetToken?.(message);
      else if (message.kind === 'transcript') this.handlers.transcript?.(message);
      else if (message.kind === 'error') this.handlers.error?.(message);
      else (this.handlers[message.kind] as ((reply: Reply) => void) | undefined)?.(message);
    } finally {
      this.recycle(message);
      handled = performance.now() - start;
    }
  }

  /**
   * Tells the worker how long this thread worked on a token message: `handled()`, then the frame that draws it,
   * from its first animation-frame callback (this one, asked for before the views ask for theirs) to the task after
   * the frame's rendering.
   */
  private timeFrame(handled: () => number): void {
    requestAnimationFrame(() => {
      const frame = performance.now();
      setTimeout(() => {
        const ms = handled() + performance.now() - frame;
        this.worker.postMessage({ kind: 'drawn', ms } satisfies Drawn);
      });
    });
  }
}
