// Model.generate({ audio }): Whisper's decoding, window by window. Each 30 s window runs through the encoder once;
// the decoder starts from its start of transcript, then its language (given, or the most likely language token
// after the start: language detection), its task and no-timestamps tokens, and generates text with the tokens
// generation_config.json suppresses (always, and at the first step) left out. Word timestamps come from the
// alignment heads' cross-attention (alignment.ts), words from the tokens (words.ts).
import type {
  AlignmentHeadScore,
  ModelInfo,
  SpeechGenerateOptions,
  SpeechGenerateResult,
  SpeechInput,
  SpeechSettings,
  SpeechWindow,
  SpeechWord,
  Tensor,
} from './types.js';
import { checkOptions, checkTensor, typeName } from './checks.js';
import { type RawEngine, type RawGenerationHandle, type RawModelHandle, type RawSequence, orThrow } from './raw.js';
import { mapSetsOf } from './map-sets.js';
import { samplesOf } from './audio.js';
import { scoreHeads, tokenTimes } from './alignment.js';
import { groupWords } from './words.js';
import { type Filters, filtered, segmentsOf } from './timestamps.js';
import { nextTask } from './generate.js';

const OPTIONS = {
  language: 'other',
  task: 'other',
  wordTimestamps: 'boolean',
  timestamps: 'boolean',
  beams: 'number',
  lengthPenalty: 'number',
  alignmentHeads: 'other',
  maxNewTokens: 'number',
  temperature: 'other',
  compressionRatioThreshold: 'number',
  logProbThreshold: 'number',
  seed: 'number',
  attentions: 'boolean',
  mapBytes: 'number',
  encoderMapLayers: 'other',
  onToken: 'other',
  signal: 'other',
} as const;

/** The most bytes of maps a generation keeps across its windows, unless told otherwise (an hour is 120 windows). */
const MAP_BYTES = 512 * 2 ** 20;

/** Whisper's median filter width along time (transformers' default; openai's `medfilt_width`). */
const FILTER_WIDTH = 7;
const NONE = new Int32Array(0);

/** What generateSpeech needs of a model. */
interface Listener {
  readonly info: ModelInfo;
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
}

/**
 * A speech model's decoding settings from its generation_config.json (`bytes`), or undefined for other models.
 * Without `alignment_heads`, the heads of the decoder's second half, as openai/whisper sets them by default.
 */
export function speechSettings(info: ModelInfo, bytes: Uint8Array | undefined): SpeechSettings | undefined {
  if (info.input !== 'audio') return undefined;
  let g: Record<string, unknown> = {};
  if (bytes)
    try {
      g = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    } catch {
      g = {};
    }
  const id = (v: unknown) =>
    Number.isInteger(v) && (v as number) >= 0 && (v as number) < info.vocabSize ? (v as number) : undefined;
  const ids = (v: unknown) => (Array.isArray(v) ? v.map(id).filter((x): x is number => x !== undefined) : []);
  const languages: Record<string, number> = {};
  for (const [token, v] of Object.entries((g.lang_to_id as Record<string, unknown>) ?? {})) {
    const code = /^<\|([^|]+)\|>$/.exec(token)?.[1];
    if (code && id(v) !== undefined) languages[code] = id(v)!;
  }
  const tasks: SpeechSettings['tasks'] = {};
  for (const [task, v] of Object.entries((g.task_to_id as Record<string, unknown>) ?? {}))
    if ((task === 'transcribe' || task === 'translate') && id(v) !== undefined) tasks[task] = id(v)!;
  const { layers, heads } = info;
  const given = Array.isArray(g.alignment_heads)
    ? (g.alignment_heads as unknown[]).filter(
        (p): p is [number, number] =>
          Array.isArray(p) &&
          p.length === 2 &&
          id(p[0]) !== undefined &&
          p[0] < layers &&
          id(p[1]) !== undefined &&
          p[1] < heads,
      )
    : [];
  const half: Array<[number, number]> = [];
  for (let l = layers >> 1; l < layers; l++) for (let h = 0; h < heads; h++) half.push([l, h]);
  const eot = id(g.eos_token_id) ?? info.eosTokenIds[0];
  const noTimestamps = id(g.no_timestamps_token_id);
  return {
    multilingual: g.is_multilingual === true || Object.keys(languages).length > 0,
    languages,
    tasks,
    startOfTranscript: id(g.decoder_start_token_id) ?? info.decoderStartTokenId!,
    endOfText: eot,
    ...(noTimestamps !== undefined && { noTimestamps }),
    suppressTokens: ids(g.suppress_tokens),
    beginSuppressTokens: ids(g.begin_suppress_tokens),
    ...(Number.isInteger(g.max_initial_timestamp_index) && {
      maxInitialTimestamp: g.max_initial_timestamp_index as number,
    }),
    alignmentHeads: given.length ? given.map(([l, h]) => [l, h]) : half,
  };
}

/** The first `keep` rows and columns of a raw map set's maps `[layers, heads, rows, cols]` (cut to keep the audio). */
function cropped(t: Tensor, keepRows: number, keepCols: number): Tensor {
  const [layers, heads, rows, cols] = t.shape;
  const out = new Float32Array(layers * heads * keepRows * keepCols);
  for (let m = 0; m < layers * heads; m++)
    for (let r = 0; r < keepRows; r++) {
      const from = (m * rows + r) * cols;
      out.set(t.data.subarray(from, from + keepCols), (m * keepRows + r) * keepCols);
    }
  return { data: out, shape: [layers, heads, keepRows, keepCols] };
}

/** UTF-8 bytes over their zlib-compressed bytes (DEFLATE, level 6): openai's compression_ratio, > 2.4 repeating. */
async function compressionRatio(text: string): Promise<number> {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length === 0) return 0;
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream('deflate'));
  const compressed = await new Response(stream).arrayBuffer();
  return bytes.length / compressed.byteLength;
}

export async function generateSpeech(
  model: Listener,
  handle: RawModelHandle,
  engine: () => RawEngine,
  newGeneration: () => RawGenerationHandle,
  speech: SpeechSettings,
  input: SpeechInput,
  options: SpeechGenerateOptions | undefined,
): Promise<SpeechGenerateResult> {
  const op = 'generate';
  const { info } = model;
  const audioInfo = info.audio!;
  const o = checkOptions(op, options, OPTIONS) as SpeechGenerateOptions;
  for (const name of ['language', 'task'] as const)
    if (o[name] !== undefined && typeof o[name] !== 'string')
      throw new Error(`${op}: ${name} must be a string, got ${typeName(o[name])}`);
  const task = o.task ?? 'transcribe';
  if (task !== 'transcribe' && task !== 'translate')
    throw new Error(`${op}: task must be 'transcribe' or 'translate', got '${task}'`);
  let language = o.language?.replace(/^<\|(.*)\|>$/, '$1').toLowerCase();
  if (speech.multilingual) {
    if (language !== undefined && speech.languages[language] === undefined)
      throw new Error(
        `${op}: ${info.name} knows no language '${o.language}'; it knows ${Object.keys(speech.languages).join(', ')}`,
      );
    if (speech.tasks[task] === undefined)
      throw new Error(`${op}: ${info.name}'s generation_config.json has no task_to_id for '${task}'`);
  } else {
    if (language !== undefined && language !== 'en')
      throw new Error(`${op}: ${info.name} is an English-only model; it cannot take language '${o.language}'`);
    if (task === 'translate') throw new Error(`${op}: ${info.name} is an English-only model; it only transcribes`);
    language = 'en';
  }
  if (speech.noTimestamps === undefined)
    throw new Error(`${op}: ${info.name}'s generation_config.json has no no_timestamps_token_id`);
  const temperatures = Array.isArray(o.temperature) ? o.temperature : [o.temperature ?? 0];
  if (!temperatures.length || !temperatures.every((t) => typeof t === 'number' && Number.isFinite(t) && t >= 0))
    throw new Error(
      `${op}: temperature must be a finite number ≥ 0, or a list of them to fall back through, got ${JSON.stringify(o.temperature)}`,
    );
  const ratioLimit = o.compressionRatioThreshold ?? 2.4;
  const logProbLimit = o.logProbThreshold ?? -1;
  if (!Number.isFinite(ratioLimit) || !Number.isFinite(logProbLimit))
    throw new Error(`${op}: compressionRatioThreshold and logProbThreshold must be finite numbers`);
  const seed = o.seed ?? 0;
  if (!Number.isInteger(seed) || seed < 0 || seed > Number.MAX_SAFE_INTEGER)
    throw new Error(`${op}: seed must be a whole number from 0, got ${String(seed)}`);
  // The prompt takes up to 4 of the decoder's positions, and the last token generated needs one.
  const room = info.maxTokens - 5;
  const maxNewTokens = o.maxNewTokens ?? Math.min(room, info.maxTokens >> 1);
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1 || maxNewTokens > room)
    throw new Error(`${op}: maxNewTokens must be a whole number from 1 to ${room}, got ${String(maxNewTokens)}`);
  const heads = o.alignmentHeads ?? speech.alignmentHeads;
  if (
    !Array.isArray(heads) ||
    !heads.every(
      (p) =>
        Array.isArray(p) &&
        p.length === 2 &&
        Number.isInteger(p[0]) &&
        Number.isInteger(p[1]) &&
        p[0] >= 0 &&
        p[0] < info.layers &&
        p[1] >= 0 &&
        p[1] < info.heads,
    )
  )
    throw new Error(
      `${op}: alignmentHeads must be [layer, head] pairs within the decoder's ${info.layers} layers × ${info.heads} ` +
        `heads, got ${JSON.stringify(heads)}`,
    );
  const encoderLayers = o.encoderMapLayers ?? [];
  if (!Array.isArray(encoderLayers) || !encoderLayers.every((l) => Number.isInteger(l)))
    throw new Error(`${op}: encoderMapLayers must be an array of layer numbers, got ${typeName(encoderLayers)}`);
  if (o.onToken !== undefined && typeof o.onToken !== 'function')
    throw new Error(`${op}: onToken must be a function, got ${typeName(o.onToken)}`);
  if (o.signal !== undefined && typeof (o.signal as { aborted?: unknown })?.aborted !== 'boolean')
    throw new Error(`${op}: signal must be an AbortSignal, got ${typeName(o.signal)}`);
  const beams = o.beams ?? 1;
  if (!Number.isInteger(beams) || beams < 1 || beams > 8)
    throw new Error(`${op}: beams must be a whole number from 1 to 8, got ${String(beams)}`);
  const lengthPenalty = o.lengthPenalty ?? 1;
  if (!Number.isFinite(lengthPenalty)) throw new Error(`${op}: lengthPenalty must be a finite number`);
  const keepMaps = o.attentions ?? true;
  const mapBytes = o.mapBytes ?? MAP_BYTES;
  if (!(mapBytes >= 0)) throw new Error(`${op}: mapBytes must be a number of bytes ≥ 0, got ${String(o.mapBytes)}`);
  /** The bytes of maps the windows keep so far, and the first window whose maps the budget left out. */
  let mapsKept = 0;
  let firstWithout = -1;
  const budget = (window: SpeechWindow) => {
    const bytes = Object.values(window.maps).reduce((sum, m) => sum + (m?.attentions.byteLength ?? 0), 0);
    if (firstWithout < 0 && mapsKept + bytes <= mapBytes) mapsKept += bytes;
    else {
      if (firstWithout < 0 && bytes > 0) firstWithout = windows.length; // the index this window takes
      window.maps = {};
    }
  };
  const wordTimestamps = o.wordTimestamps ?? false;
  const filters: Filters = {
    endOfText: speech.endOfText,
    noTimestamps: speech.noTimestamps,
    vocabSize: info.vocabSize,
    suppress: speech.suppressTokens,
    beginSuppress: speech.beginSuppressTokens,
    timestamps: o.timestamps ?? false,
    maxInitialTimestamp: speech.maxInitialTimestamp,
  };
  const perFrame = audioInfo.windowSamples / audioInfo.samplingRate / audioInfo.positions; // 20 ms
  const samplesPerFrame = audioInfo.windowSamples / audioInfo.positions;

  // Window after window: the next starts where the last one's sound ends, or, with timestamps, at the last
  // timestamp of its last whole segment (openai's transcribe).
  const windows: SpeechWindow[] = [];
  let stopReason: SpeechGenerateResult['stopReason'] = 'eos';
  if (typeof input === 'object' && input !== null && 'features' in input) {
    checkTensor(op, 'features', input.features);
    const window = await decodeWindow(0, { features: input.features }, 0);
    budget(window.window);
    windows.push(window.window);
    stopReason = window.window.stopReason;
  } else if (typeof input === 'object' && input !== null && 'audio' in input) {
    const samples = samplesOf(op, input.audio);
    if (samples.length === 0) await decodeWindow(0, { audio: samples }, 0); // the engine says why
    for (let seek = 0; seek < samples.length && stopReason !== 'aborted';) {
      const audio = samples.subarray(seek, seek + audioInfo.windowSamples);
      const { window, advance } = await decodeWindow(windows.length, { audio }, seek / audioInfo.samplingRate);
      budget(window);
      windows.push(window);
      stopReason = window.stopReason;
      seek += advance !== undefined && advance > 0 ? Math.min(audio.length, advance * samplesPerFrame) : audio.length;
    }
  } else throw new Error(`${op}: a speech model generates from { audio } or { features }, got ${typeName(input)}`);

  const first = windows[0];
  return {
    text: windows.map((w) => w.text).join(''),
    language: first.language,
    ...(wordTimestamps && { words: windows.flatMap((w) => w.words!) }),
    ...(filters.timestamps && { segments: windows.flatMap((w) => w.segments!) }),
    alignmentHeads: heads.map(([l, h]) => [l, h]),
    windows,
    targetTokens: first.targetTokens,
    targetIds: first.targetIds,
    audioTokens: first.audioTokens,
    features: first.features,
    maps: first.maps,
    stopReason,
    seed,
    notices:
      firstWithout < 0
        ? []
        : [
            `maps kept for the first ${firstWithout} of ${windows.length} windows: the rest would pass mapBytes ` +
              `(${Math.round(mapBytes / 2 ** 20)} MiB); their text, words and times are all there`,
          ],
  };

  /**
   * A window decoded at each temperature in turn until its text neither repeats itself (gzip compression ratio above
   * the threshold) nor is unlikely (mean log-probability below it), as openai's transcribe falls back.
   */
  async function decodeWindow(
    index: number,
    source: { audio: Float32Array } | { features: Tensor },
    start: number,
  ): Promise<{ window: SpeechWindow; advance?: number }> {
    for (let t = 0; ; t++) {
      const decoded = await decodeOnce(index, source, start, temperatures[t]);
      const w = decoded.window;
      if (t + 1 === temperatures.length || w.stopReason === 'aborted') return decoded;
      if (w.compressionRatio <= ratioLimit && w.avgLogprob >= logProbLimit) return decoded;
    }
  }

  async function decodeOnce(
    index: number,
    source: { audio: Float32Array } | { features: Tensor },
    start: number,
    temperature: number,
  ): Promise<{ window: SpeechWindow; advance?: number }> {
    const g = newGeneration();
    try {
      const maps = keepMaps || wordTimestamps ? 'all' : 'none';
      orThrow(
        g.startPair(
          handle,
          engine(),
          source,
          Int32Array.of(speech.startOfTranscript),
          seed,
          maps,
          Int32Array.from(encoderLayers),
        ),
      );
      const probabilities: number[] = [NaN];
      let detected: { language: string; probability: number } | undefined;
      let windowLanguage = language;
      const forced: number[] = [];
      if (speech.multilingual) {
        if (windowLanguage === undefined) {
          detected = detect(orThrow(g.logits(engine())));
          windowLanguage = detected.language;
        }
        forced.push(speech.languages[windowLanguage], speech.tasks[task]!);
      }
      if (!filters.timestamps) forced.push(speech.noTimestamps!);
      for (const id of forced) {
        orThrow(g.append(engine(), id));
        probabilities.push(NaN);
      }
      const prompt = 1 + forced.length;
      let reason: SpeechWindow['stopReason'] = 'maxNewTokens';
      // With beams, the search's winner, then read again token by token for its maps and probabilities.
      // Beams search at temperature 0; a fallback to a higher one samples (openai: beam_size at t = 0 only).
      const won =
        beams > 1 && temperature === 0 ? await beamSearch(source, [speech.startOfTranscript, ...forced]) : undefined;
      if (won?.aborted) reason = 'aborted';
      const generated: number[] = [];
      let sumLogprob = 0;
      let yielded = performance.now();
      for (let i = 0; i < maxNewTokens && (!won || i < won.ids.length); i++) {
        if (!won && o.signal?.aborted) {
          reason = 'aborted';
          break;
        }
        const logits = orThrow(g.logits(engine()));
        const banned = filtered(logits, generated, filters);
        // The chosen token's log-probability among those the filters left (openai's sum_logprobs adds these up),
        // and its probability among the text tokens (openai's word probability), from two log-sum-exps the engine
        // takes over the 51,865 logits before the step moves on.
        const left = orThrow(g.logSumExp(engine(), banned, logits.length));
        const text = orThrow(g.logSumExp(engine(), NONE, speech.endOfText));
        const step = won
          ? orThrow(g.append(engine(), won.ids[i]))
          : orThrow(g.step(engine(), { temperature, topK: 0, topP: 1, noRepeatNgramSize: 0, banned }, undefined));
        sumLogprob += logits[step.id] - left;
        probabilities.push(step.id < speech.endOfText ? Math.exp(logits[step.id] - text) : NaN);
        if (step.id === speech.endOfText) {
          reason = 'eos';
          break;
        }
        generated.push(step.id);
        o.onToken?.({
          id: step.id,
          token: step.token,
          position: prompt + i,
          text: model.decode(
            generated.filter((id) => id < speech.endOfText),
            { skipSpecialTokens: true },
          ),
          ...(step.crossRows && { crossRows: step.crossRows }),
          window: index,
        });
        if (performance.now() - yielded >= 4) {
          await nextTask();
          yielded = performance.now();
        }
      }
      const r = orThrow(g.result());
      const audio = r.source!;
      const n = r.ids.length;
      // The audio's own frames: the window's samples / hop, halved by the second convolution.
      const heard =
        'audio' in source ? Math.floor(Math.floor(source.audio.length / audioInfo.hopLength) / 2) : audioInfo.positions;
      const frames = Math.max(1, Math.min(audioInfo.positions, heard));
      const ids = Array.from(r.ids);
      // With timestamps: the segments, and the tokens kept (a segment left unfinished is the next window's).
      const marked = filters.timestamps ? segmentsOf(generated, speech.noTimestamps!, frames) : undefined;
      const kept = prompt + (marked ? marked.kept : generated.length);
      const textOf = (from: number, to: number) =>
        model.decode(
          ids.slice(from, to).filter((id) => id < speech.endOfText),
          { skipSpecialTokens: true },
        );
      const segments = marked?.segments.map((m) => ({
        start: round(start + m.start * perFrame),
        end: round(start + m.end * perFrame),
        text: textOf(prompt + m.from, prompt + m.to),
        tokens: [prompt + m.from, prompt + m.to] as [number, number],
        window: index,
      }));
      let words: SpeechWord[] | undefined;
      let times: Float64Array | undefined;
      if (wordTimestamps) {
        times = tokenTimes(r.cross!.data, r.cross!.shape, heads, n, frames, perFrame, FILTER_WIDTH);
        // A token's span runs to the next token's time; the last one's to the end of what it heard.
        const end = (k: number) => (k + 1 < n ? times![k + 1] : frames * perFrame);
        const text = ids.map((id, k) => k).filter((k) => k >= prompt && k < kept && ids[k] < speech.endOfText);
        words = groupWords(
          text.map((k) => ids[k]),
          (t) => model.decode(t),
          windowLanguage,
        ).map(({ word, indices }) => {
          const ks = indices.map((i) => text[i]);
          const p = ks.reduce((s, k) => s + probabilities[k], 0) / ks.length;
          return {
            word,
            start: round(start + times![ks[0]]),
            end: round(start + end(ks[ks.length - 1])),
            probability: p,
            tokens: [ks[0], ks[ks.length - 1] + 1] as [number, number],
            window: index,
          };
        });
      }
      let windowMaps: SpeechWindow['maps'] = {};
      if (keepMaps) {
        const target: RawSequence = { ...audio, name: 'target', tokens: r.tokens, ids: r.ids, special: r.special };
        const kept: RawSequence = { ...audio, tokens: audio.tokens.slice(0, frames) };
        const every = Array.from({ length: info.layers }, (_, l) => l);
        const kvHead = Int32Array.from({ length: info.heads }, (_, h) => h);
        const sets = [
          ...(r.encoder ? [{ ...r.encoder, attentions: cropped(r.encoder.attentions, frames, frames) }] : []),
          {
            name: 'decoder' as const,
            queries: 1,
            keys: 1,
            causal: true,
            attentions: r.attentions!,
            mapLayers: every,
            kvHead,
          },
          {
            name: 'cross' as const,
            queries: 1,
            keys: 0,
            causal: false,
            attentions: cropped(r.cross!, n, frames),
            mapLayers: every,
            kvHead,
          },
        ];
        windowMaps = mapSetsOf(sets, [kept, target]) as SpeechWindow['maps'];
      }
      const text = textOf(prompt, kept);
      const window: SpeechWindow = {
        start,
        seconds: audio.seconds ?? 0,
        text,
        temperature,
        avgLogprob: sumLogprob / (generated.length + 1),
        compressionRatio: await compressionRatio(text),
        language: windowLanguage!,
        ...(detected && { languageProbability: detected.probability }),
        targetTokens: r.tokens,
        targetIds: r.ids,
        tokenProbabilities: Float32Array.from(probabilities),
        ...(times && { tokenTimes: times }),
        ...(words && { words }),
        audioTokens: audio.tokens.slice(0, frames),
        features: r.features!,
        maps: windowMaps,
        ...(segments && { segments }),
        stopReason: reason,
      };
      return { window, advance: marked?.advance };
    } finally {
      g.delete();
    }
  }

  /**
   * The beam search's winner after `start` (the prompt), as transformers' beam search scores it, each beam filtered
   * as greedy decoding is after its own tokens (`suppress_tokens`, `begin_suppress_tokens` at its first step, and
   * with timestamps their rules, which depend on what the beam wrote and on its logits).
   */
  async function beamSearch(
    source: { audio: Float32Array } | { features: Tensor },
    start: number[],
  ): Promise<{ ids: number[]; aborted: boolean }> {
    const b = newGeneration();
    try {
      orThrow(
        b.startBeams(handle, engine(), source, Int32Array.from(start), {
          beams,
          lengthPenalty,
          noRepeatNgramSize: 0,
          earlyStopping: false,
          maxLength: start.length + maxNewTokens,
          banned: new Int32Array(0),
          filter: (ids, logits) => filtered(logits, Array.from(ids.subarray(start.length)), filters),
        }),
      );
      for (;;) {
        if (o.signal?.aborted) return { ids: [], aborted: true };
        const step = orThrow(b.beamStep(engine()));
        if (step.done) return { ids: Array.from(step.ids.slice(start.length)), aborted: false };
        await nextTask();
      }
    } finally {
      b.delete();
    }
  }

  /** The most likely language token after the start of transcript, and its probability among the languages. */
  function detect(logits: Float32Array): { language: string; probability: number } {
    const entries = Object.entries(speech.languages);
    let best = entries[0];
    for (const e of entries) if (logits[e[1]] > logits[best[1]]) best = e;
    let sum = 0;
    for (const [, id] of entries) sum += Math.exp(logits[id] - logits[best[1]]);
    return { language: best[0], probability: 1 / sum };
  }
}

const round = (seconds: number) => Math.round(seconds * 1e6) / 1e6;

/** Model.scoreAlignmentHeads: every head against the reference words, over every window that kept its maps. */
export function scoreAlignmentHeads(
  info: ModelInfo,
  result: SpeechGenerateResult,
  options: { reference?: SpeechWord[]; tolerance?: number } | undefined,
): AlignmentHeadScore[] {
  const op = 'scoreAlignmentHeads';
  const o = checkOptions(op, options, { reference: 'other', tolerance: 'number' }) as {
    reference?: SpeechWord[];
    tolerance?: number;
  };
  if (typeof result !== 'object' || result === null || !Array.isArray(result.windows))
    throw new Error(`${op}: result must be what generate({ audio }) returned, got ${typeName(result)}`);
  const tolerance = o.tolerance ?? 0.1;
  if (!(tolerance >= 0)) throw new Error(`${op}: tolerance must be a number of seconds ≥ 0, got ${String(tolerance)}`);
  const reference = o.reference ?? result.words;
  if (!Array.isArray(reference) || reference.length === 0)
    throw new Error(
      `${op}: no words to score against: generate with wordTimestamps: true, or give reference words with their times`,
    );
  const totals = new Map<string, AlignmentHeadScore & { words: number }>();
  result.windows.forEach((w, index) => {
    const words = reference.filter((x) => x.window === index);
    if (words.length === 0) return;
    const cross = w.maps.cross;
    if (!cross) throw new Error(`${op}: window ${index} kept no maps; generate with attentions: true`);
    const starts = words.map((x) => {
      if (!Array.isArray(x.tokens) || !(x.tokens[0] >= 0 && x.tokens[0] < cross.shape[2]))
        throw new Error(
          `${op}: a reference word's tokens must be within its window's target, got ${JSON.stringify(x.tokens)}`,
        );
      return { token: x.tokens[0], seconds: x.start - w.start };
    });
    const perFrame = info.audio!.windowSamples / info.audio!.samplingRate / info.audio!.positions;
    for (const s of scoreHeads(cross.attentions, cross.shape, starts, perFrame, tolerance)) {
      const key = `${s.layer},${s.head}`;
      const t = totals.get(key) ?? { layer: s.layer, head: s.head, score: 0, meanError: 0, words: 0 };
      t.score += s.score * starts.length;
      t.meanError += s.meanError * starts.length;
      t.words += starts.length;
      totals.set(key, t);
    }
  });
  if (totals.size === 0) throw new Error(`${op}: the reference words name no window of this result`);
  return [...totals.values()]
    .map(({ layer, head, score, meanError, words }) => ({
      layer,
      head,
      score: score / words,
      meanError: meanError / words,
    }))
    .sort((a, b) => b.score - a.score || a.meanError - b.meanError);
}
