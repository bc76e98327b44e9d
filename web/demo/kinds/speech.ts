// Speech through an encoder and a decoder (Whisper): the run reads the sound the page sent (the engine read it in
// the worker, named by its id) and transcribes it greedily, timing its words with the alignment heads; the
// transcript streams to the page while it decodes. One run returns the three map sets of one 30 s window (the
// first, or the one chosen; another window of the same sound decodes nothing again), cut to the sound heard: the encoder's (over the audio positions, 20 ms each), the decoder's, and the cross-attention's
// (the target's tokens over the audio), with what the speech pane draws on one time axis beside them.
import type { SpeechGenerateOptions, SpeechGenerateResult } from 'attnscope';
import type { Kept } from '../worker-analysis.js';
import type { PairSet, SpeechRun, TranscriptMessage } from '../protocol.js';
import type { MadeSet, PageKind, WorkerKind } from './kind.js';
import { pairPage } from './pair.js';

const SETS: readonly PairSet[] = ['encoder', 'decoder', 'cross'];
/** Every encoder layer's maps while they take no more than this; past it, the layer shown (another is a run away). */
const ENCODER_BYTES = 96 * 2 ** 20;
/** The main panes and tools that read a speech run's maps; the others need a text (or an image). */
const MAIN = ['speech', 'lines'];
const TOOLS = ['heads', 'cost'];

export const speechPage: PageKind = {
  id: 'speech',
  input: (s) => [s.audio?.id ?? null, s.speechLanguage, s.speechTask, s.speechHeads, s.speechWindow],
  // Nothing runs until there is a sound (the side panel asks for one).
  ask: (s) =>
    s.audio
      ? {
          text: s.text,
          audio: s.audio.id,
          language: s.speechLanguage,
          task: s.speechTask,
          ...(s.speechHeads && { alignmentHeads: s.speechHeads }),
          window: s.speechWindow,
        }
      : null,
  // Its three sets are shown as an encoder-decoder's are, by the same tabs.
  shown: pairPage.shown,
  opened: (_model, _before, linked) => ({
    speechHeads: null,
    speechWindow: 0,
    main: linked.main && MAIN.includes(linked.main) ? linked.main : 'speech',
    tools: linked.tools && TOOLS.includes(linked.tools) ? linked.tools : 'heads',
    pairSet: 'cross',
    mode: 'model',
    view: 'head',
  }),
};

/** The run decoding now: a newer one stops it after its token in progress, and starts once it has. */
let decoding: Promise<unknown> = Promise.resolve();
/**
 * The maps the worker keeps of a transcription (its first windows'; one of whisper-tiny's with every encoder map
 * takes about 100 MiB): a window past them is decoded again, alone, when shown.
 */
const MAP_BYTES = 256 * 2 ** 20;

export const speechWorker: WorkerKind = {
  id: 'speech',
  async run(request, s) {
    const model = s.model!;
    const { info } = model;
    const samples = request.audio === undefined ? undefined : s.audios.get(request.audio);
    if (!samples) throw new Error('choose, drop or record a sound: this is a speech model');
    s.generation?.abort();
    const controller = new AbortController();
    s.generation = controller;
    await decoding.catch(() => undefined);
    if (controller.signal.aborted) throw new Error('a newer sound or setting replaced this one');
    const audioInfo = info.audio!;
    const encoderLayers = info.encoderLayers ?? 1;
    // Every encoder layer's maps while a window's fit the budget (positions heard in the first, 20 ms each), else
    // the layer shown.
    const heard = Math.min(samples.length, audioInfo.windowSamples);
    const positions = Math.max(1, Math.min(audioInfo.positions, Math.floor(heard / audioInfo.hopLength / 2)));
    const perLayer = info.heads * positions * positions * 4;
    const layers =
      perLayer * encoderLayers <= ENCODER_BYTES
        ? Array.from({ length: encoderLayers }, (_, l) => l)
        : [Math.max(0, Math.min(request.layer, encoderLayers - 1))];
    const { id } = request;
    const options: SpeechGenerateOptions = {
      wordTimestamps: true,
      ...(request.language && { language: request.language }),
      ...(request.task && info.speech?.multilingual && { task: request.task }),
      encoderMapLayers: layers,
      ...(request.alignmentHeads && { alignmentHeads: request.alignmentHeads }),
      mapBytes: MAP_BYTES,
      signal: controller.signal,
    };
    const key = JSON.stringify([request.audio, request.language, request.task, request.alignmentHeads]);
    let g: SpeechGenerateResult;
    if (s.transcribed?.key === key) g = s.transcribed.g;
    else {
      s.transcribed = null;
      const generating = model.generate(
        { audio: samples },
        {
          ...options,
          onToken: (t) => postMessage({ id, kind: 'transcript', text: t.text } satisfies TranscriptMessage),
        },
      );
      decoding = generating;
      try {
        g = await generating;
      } finally {
        if (s.generation === controller) s.generation = null;
      }
      if (controller.signal.aborted) throw new Error('a newer sound or setting replaced this one');
      s.transcribed = { key, g };
    }
    // The window shown, with its maps: as kept, or (past the budget, or for another encoder layer) that window
    // decoded again on its own, which gives it exactly (each window starts afresh, from the same seed).
    const index = Math.max(0, Math.min(request.window ?? 0, g.windows.length - 1));
    const at = g.windows[index]!;
    const from = Math.round(at.start * audioInfo.samplingRate);
    const kept = at.maps.encoder?.mapLayers;
    let shown = at;
    if (!at.maps.cross || !layers.every((l) => kept?.includes(l))) {
      const alone = model.generate(
        { audio: samples.subarray(from, from + audioInfo.windowSamples) },
        { ...options, mapBytes: Infinity },
      );
      decoding = alone;
      try {
        shown = (await alone).windows[0]!;
      } finally {
        if (s.generation === controller) s.generation = null;
      }
      if (controller.signal.aborted) throw new Error('a newer sound or setting replaced this one');
    } else if (s.generation === controller) s.generation = null;
    const [melBins, allFrames] = shown.features.shape as [number, number];
    const frames = Math.min(allFrames, 2 * shown.audioTokens.length);
    const features = new Float32Array(melBins * frames);
    for (let m = 0; m < melBins; m++)
      features.set(shown.features.data.subarray(m * allFrames, m * allFrames + frames), m * frames);
    // The audio positions, named by their time in the whole sound (the engine names a window's from its start).
    const step = audioInfo.windowSamples / audioInfo.samplingRate / audioInfo.positions;
    const audioTokens =
      at.start === 0 ? shown.audioTokens : shown.audioTokens.map((_, i) => `${(at.start + i * step).toFixed(2)} s`);
    // The prompt's tokens have no probability: they were not generated.
    const generatedAt = shown.tokenProbabilities.findIndex((p) => !Number.isNaN(p));
    // The reply's arrays move to the page: the kept generation's are copied.
    const speech: SpeechRun = {
      audio: request.audio!,
      text: g.text,
      language: g.language,
      ...(shown.languageProbability !== undefined && { languageProbability: shown.languageProbability }),
      window: index,
      start: at.start,
      seconds: shown.seconds,
      features,
      melBins,
      frames,
      promptTokens: generatedAt < 0 ? shown.targetTokens.length : generatedAt,
      tokenTimes: shown.tokenTimes!.slice(),
      tokenProbabilities: shown.tokenProbabilities.slice(),
      words: g.words ?? [],
      alignmentHeads: g.alignmentHeads,
      // Against the words as the alignment heads timed them: with nothing said there are none to score.
      headScores: g.words?.length ? model.scoreAlignmentHeads(g) : [],
      windows: g.windows.map(({ start, seconds, text, temperature, avgLogprob, compressionRatio }) => ({
        start,
        seconds,
        text,
        temperature,
        avgLogprob,
        compressionRatio,
      })),
    };
    return SETS.map((set): MadeSet => {
      const maps = shown.maps[set]!;
      const audio = set === 'encoder';
      const tokens = audio ? audioTokens : shown.targetTokens;
      const kept: Kept = {
        mode: 'model',
        tokens,
        special: audio ? tokens.map(() => false) : Array.from(shown.targetIds, (t) => t >= info.speech!.endOfText),
        ...(!audio && { ids: shown.targetIds.slice() }),
        attentions: maps.attentions.slice(),
        shape: maps.shape,
        mapLayers: maps.mapLayers,
        layers: audio ? encoderLayers : info.layers,
        causal: maps.causal,
        truncated: false,
        totalTokens: tokens.length,
      };
      return { set, kept, extra: { ...(set === 'cross' && { keyTokens: audioTokens }), speech } };
    });
  },
};
