// Model.generate: the prompt runs once into a KV cache (what the model's last run holds of it is taken from
// there), then one token at a time, drawn in
// C++ (sampling.cpp: temperature, top-k, top-p, a seeded draw). Between tokens the loop yields
// to the event loop (every few milliseconds), so a Worker can take a stop request; onToken sees each token's rows.
import type {
  GenerateOptions,
  GenerateResult,
  GeneratedToken,
  MapSet,
  ModelInfo,
  PairGenerateResult,
} from './types.js';
import { checkOptions, message, typeName } from './checks.js';
import { type RawEngine, type RawGenerationHandle, type RawModelHandle, type RawSequence, orThrow } from './raw.js';
import { mapSetsOf, selfMaps } from './map-sets.js';

const GENERATE_OPTIONS = {
  maxNewTokens: 'number',
  temperature: 'number',
  topK: 'number',
  topP: 'number',
  seed: 'number',
  stop: 'other',
  stopAtEos: 'boolean',
  onToken: 'other',
  signal: 'other',
  attentions: 'other',
  rowsInto: 'other',
  noRepeatNgramSize: 'number',
  beams: 'number',
  lengthPenalty: 'number',
  earlyStopping: 'boolean',
} as const;

/** The most beams a beam search keeps (the engine's limit too). */
const MAX_BEAMS = 8;

/** What generate() needs of a model. */
interface Generator {
  readonly info: ModelInfo;
  readonly hasTokenizer: boolean;
  prepare(op: string, input: string | ArrayLike<number>): string | Int32Array;
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
}

function whole(op: string, name: string, v: number, lo: number, hi: number): number {
  if (!Number.isInteger(v) || v < lo || v > hi)
    throw new Error(message('whole_number', { op, name, lo, hi, got: String(v) }));
  return v;
}

/** The options, checked and with their defaults; `room`: the most tokens the generation may add. */
function optionsOf(op: string, options: GenerateOptions | undefined, info: ModelInfo, room = info.maxTokens) {
  const o = checkOptions(op, options, GENERATE_OPTIONS) as GenerateOptions; // each typed option's type checked
  const temperature = o.temperature ?? 1;
  if (!Number.isFinite(temperature) || temperature < 0)
    throw new Error(`${op}: temperature must be a finite number ≥ 0, got ${String(temperature)}`);
  const topP = o.topP ?? 1;
  if (!(topP > 0 && topP <= 1)) throw new Error(`${op}: topP must be in (0, 1], got ${String(topP)}`);
  const stop = o.stop ?? [];
  if (!Array.isArray(stop) || !stop.every((s) => typeof s === 'string' && s.length > 0))
    throw new Error(`${op}: stop must be an array of non-empty strings, got ${typeName(stop)}`);
  if (o.onToken !== undefined && typeof o.onToken !== 'function')
    throw new Error(`${op}: onToken must be a function, got ${typeName(o.onToken)}`);
  if (o.signal !== undefined && typeof (o.signal as { aborted?: unknown })?.aborted !== 'boolean')
    throw new Error(`${op}: signal must be an AbortSignal, got ${typeName(o.signal)}`);
  if (o.rowsInto !== undefined && typeof o.rowsInto !== 'function')
    throw new Error(`${op}: rowsInto must be a function, got ${typeName(o.rowsInto)}`);
  const attentions = o.attentions ?? true;
  if (attentions !== true && attentions !== false && attentions !== 'rows')
    throw new Error(`${op}: attentions must be true, false or 'rows', got ${typeName(attentions)}`);
  const search = info.generation;
  const beams = o.beams ?? 1;
  if (!Number.isInteger(beams) || beams < 1 || beams > MAX_BEAMS)
    throw new Error(`${op}: beams must be a whole number from 1 to ${MAX_BEAMS}, got ${String(beams)}`);
  if (beams > 1 && !info.encoderDecoder)
    throw new Error(`${op}: beams are for encoder-decoders; ${info.name} generates one sequence at a time`);
  const lengthPenalty = o.lengthPenalty ?? search?.lengthPenalty ?? 1;
  if (!Number.isFinite(lengthPenalty)) throw new Error(`${op}: lengthPenalty must be a finite number`);
  return {
    maxNewTokens: whole(op, 'maxNewTokens', o.maxNewTokens ?? Math.min(32, room), 1, room),
    sampling: {
      temperature,
      topK: whole(op, 'topK', o.topK ?? 0, 0, info.vocabSize),
      topP,
      noRepeatNgramSize: whole(op, 'noRepeatNgramSize', o.noRepeatNgramSize ?? search?.noRepeatNgramSize ?? 0, 0, 1e9),
      banned: Int32Array.from(search?.bannedTokenIds ?? []),
    },
    beams,
    lengthPenalty,
    earlyStopping: o.earlyStopping ?? search?.earlyStopping ?? false,
    seed: whole(op, 'seed', o.seed ?? 0, 0, Number.MAX_SAFE_INTEGER),
    stop,
    stopAtEos: o.stopAtEos ?? true,
    onToken: o.onToken,
    rowsInto: o.rowsInto,
    signal: o.signal,
    maps: attentions === 'rows' ? ('rows' as const) : attentions ? ('all' as const) : ('none' as const),
  };
}

/**
 * The longest a generation runs without yielding to the event loop (ms): a stop request waits this, and the token
 * in progress.
 */
const YIELD_MS = 4;

/**
 * Yields to the event loop between tokens: a Worker's stop request gets in, and nothing is lost.
 * Not setTimeout(0): Node waits at least 1 ms, and browsers 4 ms once timeouts nest 5 deep, which
 * at 20 ms a token would cost a fifth of the speed. A MessageChannel message (or Node's
 * setImmediate) is the next task without a delay.
 */
export const nextTask: () => Promise<void> = (() => {
  const immediate = (globalThis as { setImmediate?: (f: () => void) => void }).setImmediate;
  if (immediate) return () => new Promise<void>((resolve) => immediate(resolve));
  if (typeof MessageChannel === 'undefined') return () => new Promise<void>((resolve) => setTimeout(resolve, 0));
  const channel = new MessageChannel();
  const waiting: Array<() => void> = [];
  channel.port1.onmessage = () => waiting.shift()?.();
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      channel.port2.postMessage(null);
    });
})();

/**
 * An encoder-decoder's generation: the source through the encoder once (in startPair), then the decoder token by token
 * from its start token (and the forced BOS), as one-stack models generate. Its maps at the end are those of a
 * teacher-forced run of the source and the whole target: the decoder is causal and reads the same memory, so they are
 * the maps each token was generated with.
 */
export async function generatePair(
  model: Generator,
  handle: RawModelHandle,
  engine: () => RawEngine,
  newGeneration: () => RawGenerationHandle,
  input: { source: string | ArrayLike<number> },
  options: GenerateOptions | undefined,
): Promise<PairGenerateResult> {
  const op = 'generate';
  const { info } = model;
  if (!info.languageModel)
    throw new Error(`${op}: ${info.name} (${info.architecture}) has no LM head to generate with`);
  const start = [info.decoderStartTokenId!, ...(info.forcedBosTokenId === undefined ? [] : [info.forcedBosTokenId])];
  const o = optionsOf(op, options, info, info.maxTokens - 1);
  if (!model.hasTokenizer && o.stop.length)
    throw new Error(`${op}: stop strings need text, and ${info.name}'s files hold no tokenizer AttnScope reads`);
  const decode = (ids: ArrayLike<number>, skipSpecialTokens = false) =>
    model.hasTokenizer ? model.decode(ids, { skipSpecialTokens }) : '';
  const prepared = model.prepare(`${op}: source`, input.source);
  const source = typeof prepared === 'string' ? orThrow(handle.tokenize(prepared, false)).ids : prepared;
  // The start token and what it generates, within the model's max_length where it sets one.
  const limit = Math.min(o.maxNewTokens + 1, info.maxTokens, info.generation?.maxLength ?? Infinity);
  const generation = newGeneration();
  try {
    let target = [start[0]];
    let yielded = performance.now();
    let stopReason: PairGenerateResult['stopReason'] = 'maxNewTokens';
    if (o.beams > 1) {
      const { beams, lengthPenalty, earlyStopping } = o;
      const { noRepeatNgramSize, banned } = o.sampling;
      const settings = { beams, lengthPenalty, noRepeatNgramSize, earlyStopping, maxLength: limit, banned };
      orThrow(generation.startBeams(handle, engine(), source, Int32Array.from(start), settings));
      target = start.slice(0, limit);
      for (;;) {
        if (o.signal?.aborted) {
          stopReason = 'aborted'; // the leading beam so far
          break;
        }
        const step = orThrow(generation.beamStep(engine()));
        target = Array.from(step.ids);
        if (step.done) {
          stopReason = step.ended ? 'eos' : 'maxNewTokens';
          break;
        }
        if (performance.now() - yielded >= YIELD_MS) {
          await nextTask();
          yielded = performance.now();
        }
      }
    } else orThrow(generation.startPair(handle, engine(), source, Int32Array.of(start[0]), o.seed, o.maps, undefined));
    while (o.beams === 1 && target.length < limit) {
      if (o.signal?.aborted) {
        stopReason = 'aborted';
        break;
      }
      const forced = target.length < start.length ? start[target.length] : undefined;
      const step = orThrow(
        forced === undefined ? generation.step(engine(), o.sampling, undefined) : generation.append(engine(), forced),
      );
      target.push(step.id);
      const text = decode(target.slice(1), true);
      o.onToken?.({
        id: step.id,
        token: step.token,
        position: target.length - 1,
        text,
        ...(step.rows && { rows: step.rows }),
        ...(step.crossRows && { crossRows: step.crossRows }),
      });
      if (forced === undefined && o.stopAtEos && info.eosTokenIds.includes(step.id)) {
        stopReason = 'eos';
        break;
      }
      if (o.stop.some((s) => text.includes(s))) {
        stopReason = 'stop';
        break;
      }
      if (performance.now() - yielded >= YIELD_MS) {
        await nextTask();
        yielded = performance.now();
      }
    }
    // A generation that kept every row holds every map: the encoder's from its one run, the decoder's and the cross
    // rows token by token. A beam search keeps none (the winner's maps come from a teacher-forced run of it), and
    // 'rows' or false keep none.
    const done = o.beams === 1 ? orThrow(generation.result()) : undefined;
    const run = done?.encoder
      ? undefined
      : orThrow(handle.run(engine(), { source, target: Int32Array.from(target) }, {}));
    // The generation's own maps are the sets a run names, over the sequences it names.
    let maps: PairGenerateResult['maps'];
    let s: RawSequence;
    let t: { tokens: string[]; ids: Int32Array };
    if (run) {
      maps = mapSetsOf(run.maps, run.sequences);
      [s] = run.sequences;
      t = run.sequences[1];
    } else {
      s = done!.source!;
      t = done!;
      const every = Array.from({ length: info.layers }, (_, l) => l);
      const kvHead = Int32Array.from({ length: info.heads }, (_, h) => h);
      const sequences: RawSequence[] = [
        s,
        { ...s, name: 'target', tokens: t.tokens, ids: t.ids, special: done!.special },
      ];
      maps = mapSetsOf(
        [
          done!.encoder!,
          {
            name: 'decoder',
            queries: 1,
            keys: 1,
            causal: true,
            attentions: done!.attentions!,
            mapLayers: every,
            kvHead,
          },
          { name: 'cross', queries: 1, keys: 0, causal: false, attentions: done!.cross!, mapLayers: every, kvHead },
        ],
        sequences,
      );
    }
    const kept = run ? o.maps !== 'none' : o.maps === 'all';
    return {
      text: decode(target, true),
      sourceTokens: s.tokens,
      sourceIds: s.ids,
      targetTokens: t.tokens,
      targetIds: t.ids,
      maps: kept ? maps : {},
      truncated: s.truncated,
      stopReason,
      seed: o.seed,
    };
  } finally {
    generation.delete();
  }
}

export async function generate(
  model: Generator,
  handle: RawModelHandle,
  engine: () => RawEngine,
  newGeneration: () => RawGenerationHandle,
  input: string | ArrayLike<number>,
  options: GenerateOptions | undefined,
): Promise<GenerateResult> {
  const op = 'generate';
  const { info } = model;
  if (!info.languageModel)
    throw new Error(`${op}: ${info.name} (${info.architecture}) is not a language model; generate needs a decoder`);
  const o = optionsOf(op, options, info);
  if (!model.hasTokenizer && o.stop.length)
    throw new Error(`${op}: stop strings need text, and ${info.name}'s files hold no tokenizer AttnScope reads`);
  // Without a tokenizer the model runs on ids alone, and has no text to give.
  const decode = (ids: ArrayLike<number>, skipSpecialTokens = false) =>
    model.hasTokenizer ? model.decode(ids, { skipSpecialTokens }) : '';
  const prepared = model.prepare(op, input);
  const prompt = typeof prepared === 'string' ? orThrow(handle.tokenize(prepared, false)).ids : prepared;
  if (prompt.length + o.maxNewTokens > info.maxTokens)
    throw new Error(
      `${op}: the prompt's ${prompt.length} tokens and maxNewTokens=${o.maxNewTokens} exceed the model's ${info.maxTokens} tokens`,
    );
  const generation = newGeneration();
  try {
    orThrow(generation.start(handle, engine(), prompt, o.seed, o.maps));
    const added: number[] = [];
    let yielded = performance.now();
    let stopReason: GenerateResult['stopReason'] = 'maxNewTokens';
    for (let i = 0; i < o.maxNewTokens; i++) {
      if (o.signal?.aborted) {
        stopReason = 'aborted';
        break;
      }
      // Where this token's rows go, when the caller gives them a place: [layers, heads, position + 1].
      let into: Float32Array | undefined;
      if (o.rowsInto && o.maps !== 'none') {
        const length = info.layers * info.heads * (prompt.length + i + 1);
        into = o.rowsInto(length);
        if (!(into instanceof Float32Array) || into.length !== length)
          throw new Error(
            `${op}: rowsInto(${length}) must return a Float32Array of exactly ${length} values, got ${typeName(into)}` +
              (into instanceof Float32Array ? ` of ${into.length}` : ''),
          );
      }
      const step = orThrow(generation.step(engine(), o.sampling, into));
      added.push(step.id);
      const text = decode(added);
      const token: GeneratedToken = {
        id: step.id,
        token: step.token,
        position: prompt.length + i,
        text,
        rows: step.rows,
      };
      o.onToken?.(token);
      if (o.stopAtEos && info.eosTokenIds.includes(step.id)) {
        stopReason = 'eos';
        break;
      }
      if (o.stop.some((s) => text.includes(s))) {
        stopReason = 'stop';
        break;
      }
      // A yield costs about as much as a small model's token: at most one every YIELD_MS.
      if (i + 1 < o.maxNewTokens && performance.now() - yielded >= YIELD_MS) {
        await nextTask();
        yielded = performance.now();
      }
    }
    const r = orThrow(generation.result());
    return {
      text: decode(r.ids, true),
      generated: decode(added, true),
      ids: r.ids,
      tokens: r.tokens,
      special: r.special,
      ...(r.attentions && {
        attentions: r.attentions.data,
        shape: r.attentions.shape as GenerateResult['shape'],
      }),
      maps: r.attentions
        ? {
            self: selfMaps(
              r.tokens,
              r.attentions.data,
              r.attentions.shape as [number, number, number, number],
              Array.from({ length: r.attentions.shape[0] }, (_, l) => l),
              true,
            ),
          }
        : {},
      promptTokens: prompt.length,
      reusedTokens: r.reusedTokens,
      stopReason,
      seed: o.seed,
    };
  } finally {
    generation.delete();
  }
}
