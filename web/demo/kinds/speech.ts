// Speech through an encoder and a decoder (Whisper): the run reads the sound the page sent (the engine read it in
// the worker, named by its id) and transcribes it greedily, timing its words with the alignment heads; the
// transcript streams to the page while it decodes. One run returns the three map sets of the first 30 s window, cut
// to the sound heard: the encoder's (over the audio positions, 20 ms each), the decoder's, and the cross-attention's
// (the target's tokens over the audio), with what the speech pane draws on one time axis beside them.
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
  input: (s) => [s.audio?.id ?? null, s.speechLanguage, s.speechTask, s.speechHeads],
  // Nothing runs until there is a sound (the side panel asks for one).
  ask: (s) =>
    s.audio
      ? {
          text: s.text,
          audio: s.audio.id,
          language: s.speechLanguage,
          task: s.speechTask,
          ...(s.speechHeads && { alignmentHeads: s.speechHeads }),
        }
      : null,
  // Its three sets are shown as an encoder-decoder's are, by the same tabs.
  shown: pairPage.shown,
  opened: (_model, _before, linked) => ({
    speechHeads: null,
    main: linked.main && MAIN.includes(linked.main) ? linked.main : 'speech',
    tools: linked.tools && TOOLS.includes(linked.tools) ? linked.tools : 'heads',
    pairSet: 'cross',
    mode: 'model',
    view: 'head',
  }),
};

/** The run decoding now: a newer one stops it after its token in progress, and starts once it has. */
let decoding: Promise<unknown> = Promise.resolve();

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
    // Positions heard in the first window (20 ms each), as the engine counts them: every encoder layer's maps of
    // them while they fit the budget, else the layer shown.
    const heard = Math.floor(Math.min(samples.length, audioInfo.windowSamples) / audioInfo.hopLength / 2);
    const positions = Math.max(1, Math.min(audioInfo.positions, heard));
    const perLayer = info.heads * positions * positions * 4;
    const layers =
      perLayer * encoderLayers <= ENCODER_BYTES
        ? Array.from({ length: encoderLayers }, (_, l) => l)
        : [Math.max(0, Math.min(request.layer, encoderLayers - 1))];
    const { id } = request;
    const generating = model.generate(
      { audio: samples },
      {
        wordTimestamps: true,
        ...(request.language && { language: request.language }),
        ...(request.task && info.speech?.multilingual && { task: request.task }),
        encoderMapLayers: layers,
        ...(request.alignmentHeads && { alignmentHeads: request.alignmentHeads }),
        signal: controller.signal,
        onToken: (t) => postMessage({ id, kind: 'transcript', text: t.text } satisfies TranscriptMessage),
      },
    );
    decoding = generating;
    let g;
    try {
      g = await generating;
    } finally {
      if (s.generation === controller) s.generation = null;
    }
    if (controller.signal.aborted) throw new Error('a newer sound or setting replaced this one');
    const first = g.windows[0]!;
    const [melBins, allFrames] = first.features.shape as [number, number];
    const frames = Math.min(allFrames, 2 * first.audioTokens.length);
    const features = new Float32Array(melBins * frames);
    for (let m = 0; m < melBins; m++)
      features.set(first.features.data.subarray(m * allFrames, m * allFrames + frames), m * frames);
    // The prompt's tokens have no probability: they were not generated.
    const generatedAt = first.tokenProbabilities.findIndex((p) => !Number.isNaN(p));
    const speech: SpeechRun = {
      audio: request.audio!,
      text: g.text,
      language: g.language,
      ...(first.languageProbability !== undefined && { languageProbability: first.languageProbability }),
      seconds: first.seconds,
      features,
      melBins,
      frames,
      promptTokens: generatedAt < 0 ? first.targetTokens.length : generatedAt,
      tokenTimes: first.tokenTimes!,
      tokenProbabilities: first.tokenProbabilities,
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
      const maps = first.maps[set]!;
      const audio = set === 'encoder';
      const tokens = audio ? first.audioTokens : first.targetTokens;
      const kept: Kept = {
        mode: 'model',
        tokens,
        special: audio ? tokens.map(() => false) : Array.from(first.targetIds, (t) => t >= info.speech!.endOfText),
        ...(!audio && { ids: first.targetIds }),
        attentions: maps.attentions,
        shape: maps.shape,
        mapLayers: maps.mapLayers,
        layers: audio ? encoderLayers : info.layers,
        causal: maps.causal,
        truncated: false,
        totalTokens: tokens.length,
      };
      return { set, kept, extra: { ...(set === 'cross' && { keyTokens: first.audioTokens }), speech } };
    });
  },
};
