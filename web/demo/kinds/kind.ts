// The kinds of model the page shows, as the engine tells them apart (ModelInfo's input and stacks): text through
// one stack (encoders, language models), a source and a target through an encoder and a decoder, an image through
// one stack, speech through an encoder and a decoder. What differs between them lives in one module each (text.ts,
// pair.ts, image.ts, speech.ts): on the page, what a run reads and which panes a model opens on; in the worker, the
// model's one run and what its reply carries.
// page.ts and worker.ts pick a kind's part from the model's info; nothing else asks which kind a model is.
import type { ModelInfo } from 'attnscope';

import type { Ask, Request, RunResult, SetName } from '../protocol.js';
import type { Choice, State } from '../state.js';
import type { Kept, Session } from '../worker-analysis.js';

export type KindId = 'text' | 'pair' | 'image' | 'speech';

/** Which kind a model is, from what the engine says of it. */
export function kindOf(info: Pick<ModelInfo, 'input' | 'stacks'>): KindId {
  if (info.input === 'image') return 'image';
  if (info.input === 'audio') return 'speech';
  return info.stacks.length === 2 ? 'pair' : 'text';
}

/** A kind on the page. */
export interface PageKind {
  id: KindId;
  /** What the model's run reads, as the run key holds it: a change asks for a new run. */
  input(s: Readonly<State>): unknown;
  /** The run request's fields for what it reads, or null while there is nothing to run (no image chosen yet). */
  ask(s: Readonly<State>): Partial<Ask<'run'>> | null;
  /** What the page shows of a run's reply: the reply, or the set chosen among an encoder-decoder's. */
  shown(reply: RunResult, s: Readonly<State>): RunResult;
  /**
   * The choices a model of this kind starts with when it loads: the panes it opens (`linked`: those a link being
   * restored names, which win), given the model before it.
   */
  opened(model: ModelInfo, before: ModelInfo | null, linked: Partial<Pick<Choice, 'main' | 'tools'>>): Partial<Choice>;
}

/** One set of maps a run made, as the worker keeps it and what the page's reply adds to it. */
export interface MadeSet {
  set: SetName;
  kept: Kept;
  extra: Partial<RunResult>;
}

/** A kind in the worker. */
export interface WorkerKind {
  id: KindId;
  /** The model's one run for a `run` request, with the rollout or flow it asks for: every map set it made. */
  run(request: Request<'run'>, s: Session): MadeSet[] | Promise<MadeSet[]>;
}
