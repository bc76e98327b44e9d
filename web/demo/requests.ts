// What the page asks the worker, and what it does with the answers. Replies land in the state
// (the channel has already dropped the stale ones); requests follow from the state: a run when
// what the model reads (its kind says what: kinds/), the mode, the model, the logit lens or the
// rollout or flow shown changes (the engine computes them with the run), a head's math when the
// math pane is open, a score or a logit taken apart when the Why pane is, and one position's next-token
// distribution when that pane is open. A shared
// link's layer and head wait for its model's run.
import { lastSoundStays } from './audio.js';
import { Channel } from './channel.js';
import { download } from './export.js';
import { generationHandlers } from './generation.js';
import { kindIn, pageKind } from './kinds/page.js';
import { flowWhole, type Ask, type Kind } from './protocol.js';
import { hubOf, type Shared } from './share.js';
import { beamCount, explainAsk, MAX_BEAMS, type Data, type State, type Store } from './state.js';
import { load, loadFailed } from './views/picker.js';
import type { Page } from './views/view.js';

type Panel = keyof Data['errors'];

/** What the page says when a link names a model that was loaded from files. */
export const FILES_LINK =
  'This link was made with a model loaded from files, which a link cannot carry. Choose or drop the same files ' +
  'to see its maps, or load another model.';

/**
 * The rollout or flow a run computes, as its key holds it: flow of every row needs no run per chosen token, flow of
 * one token's does, and of the set shown. Null in the head view.
 */
const acrossKey = (s: Readonly<State>) => {
  if (s.view === 'head') return null;
  const r = s.result;
  const perToken = s.view === 'flow' && (!r || !flowWhole(r.tokens.length, r.shape[0]));
  return [s.view, s.residual, perToken ? s.barToken : null, pairs(s) && s.view === 'flow' ? s.pairSet : null];
};

/**
 * What a run depends on: a change asks for a new one. A text too long for every layer's maps comes back with the
 * shown layer's maps only: then the layer is part of what the run depends on, and choosing another asks for it.
 */
const runKey = (s: Readonly<State>, lens: boolean) => {
  // A generation grows the layer it started on, whatever is chosen meanwhile; maps the page itself cut to one layer
  // for a generation (`trimmed`) are not the run's choice.
  const r = s.result;
  const partial = r && !r.trimmed && r.mapLayers.length < r.layers;
  const input =
    s.mode === 'model' && s.model ? pageKind(s.model).input(s) : [s.text, s.mode === 'two-texts' ? s.context : null];
  return JSON.stringify([s.mode, input, lens, partial ? (s.generation?.layer ?? s.layer) : null, acrossKey(s)]);
};

/** An encoder-decoder in the model's mode: the text is the source, `context` the target. */
export const pairs = (s: Readonly<State>) => s.mode === 'model' && !!s.model && pageKind(s.model).id === 'pair';

export function connect(
  store: Store,
  colours: Page['colours'],
  restore: Shared | null,
): { page: Page; restoring: () => boolean; answered: () => boolean } {
  /** A link's layer and head, applied to the first run of the model it names. */
  let pending: (Shared & { ready: boolean }) | null = restore && { ...restore, ready: false };
  /** The logit lens, once its pane has been opened for this model: asked for with every run since. */
  let lens = false;
  let askedRun = '';
  /** A link named a model from files, and no model has been loaded since: nothing runs meanwhile. */
  let holding = false;
  /** The id of the last run asked for. */
  let lastRun = 0;
  /** The Hub model whose plan was asked last (an error names no model). */
  let askedPlan = '';
  /** Sounds sent to the worker: their ids, and the names of those not read yet. */
  let audioCount = 0;
  const audioNames = new Map<number, string>();
  const settle = (panel: Panel, patch: Partial<Data>) => {
    const errors = { ...store.get().errors };
    delete errors[panel];
    store.put({ ...patch, errors });
  };
  const fail = (panel: Panel, message: string) => store.put({ errors: { ...store.get().errors, [panel]: message } });

  const channel = new Channel({
    load(reply) {
      const { engine, model, causal, isolated, id, heapInUse, limit } = reply;
      lens = false;
      askedRun = ''; // the new model runs the text (the state changes below ask for it)
      // The panes its kind opens on (kinds/), those a link being restored names first; a model after a vision model
      // or a speech model gives its pane back for the head view.
      const linked = pending && !pending.ready ? { main: pending.main, tools: pending.tools } : {};
      const opened = pageKind(model).opened(model, store.get().model, linked);
      const main = opened.main ?? (['image', 'speech'].includes(store.get().main) ? 'lines' : undefined);
      // Beams start at the model's own num_beams (generation_config.json), within what the page lets through.
      const beams = beamCount(Math.min(model.generation?.numBeams ?? 1, MAX_BEAMS)) ?? 1;
      const asked = store.get().loadingModel;
      store.select({ causal, ids: null, beams, ...opened, ...(main && { main }), ...(asked && { modelId: asked }) });
      // A link made with a model from files cannot bring it: the page waits for the files, and runs nothing else
      // until a model the person chooses has loaded.
      const waiting = id === 0 && pending?.model === 'files';
      holding = waiting || (holding && id === 0);
      store.put({
        engine: { ...engine, isolated, heapInUse },
        model: { ...model, causal },
        limit,
        loadingModel: null,
        loading: waiting
          ? { state: 'waiting', message: FILES_LINK }
          : { state: 'ok', message: id === 0 ? '' : 'Loaded.' },
        // What was computed with the previous model is retired with it: the panes say so, and offer to run again.
        ...{ across: null, math: null, compare: null, intervene: null, ablate: null, explained: null, cost: null },
        ...{ next: null, induction: null, generated: null, translation: null, errors: {} },
      });
      const hub = pending && !pending.ready && id === 0 ? hubOf(pending) : null;
      if (hub) queueMicrotask(() => load(page, { kind: 'hub', id: hub }));
      else if (pending && !waiting) pending.ready = true;
    },
    progress({ file, loaded, total }) {
      const mb = (x: number) => (x / 2 ** 20).toFixed(1);
      const message = `${file}: ${mb(loaded)} MB${total ? ` of ${mb(total)} MB` : ''}`;
      store.put({ loading: { state: 'loading', message, progress: total ? loaded / total : 0 } });
    },
    run(reply) {
      // Nothing asked during a generation runs (Generate waits for the runs asked before it): a late reply is stale.
      if (store.get().generation) return;
      // An encoder-decoder's reply holds every set: the page shows the one its tabs choose.
      const shown =
        store.get().model && reply.mode === 'model' ? pageKind(store.get().model!).shown(reply, store.get()) : reply;
      // A run with the shown layer's maps answers the key it makes with them, not only the one it was asked under.
      if (shown.mapLayers.includes(store.get().layer)) askedRun = runKey({ ...store.get(), result: shown }, lens);
      const before = store.get().result?.tokens;
      const same = before?.length === shown.tokens.length && before.every((t, i) => t === shown.tokens[i]);
      // A refusal to generate or add a token, or why a generation ended, was about the tokens shown before.
      const errors = { ...store.get().errors };
      if (!same) delete errors.generate;
      // Rollout and flow came with the run, or why not.
      delete errors.across;
      if (shown.acrossError) errors.across = shown.acrossError;
      store.put({
        result: shown,
        resultOf: store.get().model,
        runError: null,
        transcript: null,
        errors,
        ...(shown.across && { across: shown.across }),
      });
      // A candidate's ids come back with their text: the box shows it. (A generation's text is in the box already,
      // as it streamed: the run of its ids does not write over the person's prompt.)
      const s = store.get();
      if (reply.text !== undefined && s.ids && s.ids !== s.generated?.ids) store.select({ text: reply.text });
      // The token in focus was a position in the old tokens: new ones let it go.
      if (!same) store.select({ token: null });
      if (pending?.ready) {
        const { layer, head } = pending;
        pending = null;
        store.select({ ...(layer !== undefined && { layer }), ...(head !== undefined && { head }) });
      }
    },
    math: (reply) => settle('math', { math: reply }),
    compare: (reply) => settle('compare', { compare: reply }),
    intervene: (reply) => settle('intervene', { intervene: reply }),
    ablate: (reply) => settle('ablate', { ablate: reply }),
    explain: (reply) => settle('explain', { explained: reply }),
    cost: (reply) => settle('cost', { cost: reply }),
    next: (reply) => settle('next', { next: reply }),
    generate: (reply) => generation.finish(reply),
    // The generated target goes into its box, and runs teacher-forced like any target typed there.
    translate: (reply) => {
      if (store.get().translation?.request !== reply.id) return;
      const errors = { ...store.get().errors };
      delete errors.translate;
      store.select({ context: reply.text, contextIds: reply.ids }, { translation: null, errors });
    },
    token: (token) => generation.token(token),
    targetToken({ id, text, ids }) {
      const t = store.get().translation;
      if (t?.request === id) store.put({ translation: { ...t, text, ids } });
    },
    induction(reply) {
      settle('induction', { induction: reply, result: reply.run, resultOf: store.get().model });
      const best = reply.ranking[0];
      store.select({ layer: best.layer, head: best.head, view: 'head', token: null });
    },
    beside: (reply) => settle('beside', { beside: reply, besideLoading: null }),
    // The sound as the model hears it: the run follows (its id is part of what the run reads).
    audio({ audio, samples, seconds, notices, format }) {
      const name = audioNames.get(audio) ?? 'the sound';
      audioNames.clear();
      const said = [`${name}: ${seconds.toFixed(2)} s, ${format}`, ...notices].join('; ');
      store.select(
        { audio: { id: audio, name, samples, seconds, notices, format }, speechWindow: 0 },
        { audioNotice: { state: 'ok', message: `${said}.` } },
      );
    },
    transcript: ({ id, text }) => store.put({ transcript: { run: id, text } }),
    plan: ({ plan }) => store.put({ plans: { ...store.get().plans, [plan.id]: plan } }),
    npy: ({ bytes }) =>
      download('attentions.npy', new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' })),
    error({ during, message, id }) {
      if (during === 'load') {
        pending = null;
        holding = false;
        store.put({ loading: { state: 'error', message: loadFailed(message, !!id) }, loadingModel: null });
        run(); // what was typed while it loaded was asked of the old model, and retired with the load
      } else if (during === 'run') store.put({ runError: message, transcript: null });
      else if (during === 'generate') generation.failed(message);
      else if (during === 'translate') keepTarget({ errors: { ...store.get().errors, translate: message } });
      else if (during === 'image') store.put({ runError: message });
      else if (during === 'plan') {
        const error = message.replace(/^hubPlan: /, '');
        if (askedPlan) store.put({ plans: { ...store.get().plans, [askedPlan]: { error } } });
      } else if (during === 'audio') {
        const stop = /[.!?)]$/.test(message) ? '' : '.';
        const said = `${message.replace(/^decodeAudio: /, '')}${stop}${lastSoundStays(store.get())}`;
        store.put({ audioNotice: { state: 'error', message: said } });
      } else if (during === 'beside') store.put({ besideLoading: { state: 'error', message: `Beside: ${message}` } });
      else if (during !== 'npy' && during !== 'stop') fail(during, message);
    },
    crash: (message) => store.put({ runError: `the worker failed (${message})` }),
  });

  const page: Page = {
    store,
    ask: <K extends Kind>(ask: Ask<K>, transfer: Transferable[] = []) => channel.send(ask, transfer),
    pending: () => !answered(),
    colours,
    run,
    stopGeneration() {
      channel.retire('generate');
      channel.send({ kind: 'stop' });
      generation.stopped();
    },
    translate() {
      const s = store.get();
      const beams = beamCount(s.beams);
      if (!pairs(s) || s.translation || beams === null) return;
      const request = channel.send({ kind: 'translate', text: s.text, maxNewTokens: s.maxNewTokens, beams });
      const errors = { ...s.errors };
      delete errors.translate;
      store.put({ translation: { request, source: s.text, text: '', ids: [], beams, stopping: false }, errors });
    },
    askPlan(hub) {
      askedPlan = hub;
      channel.send({ kind: 'plan', hub });
    },
    sendAudio(name, bytes) {
      const audio = ++audioCount;
      audioNames.set(audio, name);
      channel.send({ kind: 'audio', audio, bytes }, [bytes]);
      store.put({ audioNotice: { state: 'busy', message: `Reading ${name}…` } });
    },
    sendImage(id, bitmap) {
      channel.send({ kind: 'image', image: { id, bitmap } }, [bitmap]);
    },
    loadBeside(source, transfer = []) {
      const s = store.get();
      if (!s.image || !s.model || kindIn(s) !== 'image') return;
      askedBeside = s.image.id;
      channel.send({ kind: 'beside', source, image: s.image.id }, transfer);
      const name = source.kind === 'hub' ? source.id : 'the files';
      store.put({ besideLoading: { state: 'loading', message: `Loading ${name} beside ${s.model.name}…` } });
    },
    stopTranslation() {
      const t = store.get().translation;
      if (!t || t.stopping) return;
      channel.send({ kind: 'stop' });
      // A beam search has shown nothing yet: its reply, the leading beam when stopped, is the target.
      if (t.beams > 1) return store.put({ translation: { ...t, stopping: true } });
      channel.retire('translate');
      keepTarget();
    },
  };
  /**
   * A target's generation ended early (Stop, an error, or the source changed under it): the tokens shown so far
   * become the target, which runs teacher-forced; with none yet, the target box keeps what it had.
   */
  function keepTarget(data: Partial<Data> = {}): void {
    const t = store.get().translation;
    if (!t) return store.put(data);
    // ids: the decoder's start token, then what it generated.
    if (t.ids.length > 1) store.select({ context: t.text, contextIds: t.ids }, { translation: null, ...data });
    else store.put({ translation: null, ...data });
  }
  const generation = generationHandlers(page);

  function run(): void {
    const s = store.get();
    askedRun = runKey(s, lens);
    // What the model reads, as its kind says (kinds/); nothing while there is nothing to read (a vision model's
    // image not chosen yet: the side panel draws a sample at once).
    const input =
      s.mode === 'model' && s.model
        ? pageKind(s.model).ask(s)
        : { text: s.text, ...(s.mode === 'two-texts' && { context: s.context }) };
    if (!input) return;
    // Rollout or flow, computed in the engine with the run's maps.
    const across = s.view === 'head' ? undefined : { view: s.view, residual: s.residual, token: s.barToken };
    lastRun = channel.send({ kind: 'run', text: s.text, ...input, mode: s.mode, lens, layer: s.layer, across });
  }

  /** Typing while it generates: its tokens stop counting now, and the worker stops it after the current one. */
  function cancelGeneration(): void {
    channel.retire('generate');
    channel.send({ kind: 'stop' });
    queueMicrotask(() => store.put({ generation: null }));
  }

  /** The image the second model (beside) was last asked to run. */
  let askedBeside = 0;
  let askedMath = '';
  let askedNext = '';
  let askedExplain = '';
  store.subscribe((s: Readonly<State>) => {
    lens ||= s.tools === 'lens' && !!s.model?.languageModel && s.mode === 'model';
    if (s.loading.state === 'waiting') return;
    // The worker's first model is on its way (its progress lands in the state): its load's reply asks for the first
    // run, once it is known whether a link's files must be waited for.
    if (!s.model) return;
    if (s.loading.state === 'loading' && holding) return; // a link's files are on their way: no other model's maps
    // Rollout and flow follow one sequence's attention to itself: an encoder-decoder's cross-attention tab, and a
    // speech model's maps (its run computes neither), show the head (a link or the model before may have asked).
    if (s.view !== 'head' && s.mode === 'model' && ((pairs(s) && s.pairSet === 'cross') || kindIn(s) === 'speech'))
      return store.select({ view: 'head' });
    // A target generated for another source (the source was edited, or the mode changed) is kept as it stands.
    if (s.translation && !s.translation.stopping && (s.text !== s.translation.source || !pairs(s)))
      return page.stopTranslation();
    if (runKey(s, lens) !== askedRun) {
      if (s.generation) {
        // The mode or the logit lens changed: what was generated is kept first. (Typing keeps it before the key
        // lands, source.ts; a text changed any other way means the generation's tokens no longer follow it.)
        if (s.text === s.generation.prompt) return page.stopGeneration();
        cancelGeneration();
      }
      // The last generation describes the text until it is edited (its ids are the text's while unchanged).
      if (s.generated && s.ids !== s.generated.ids) queueMicrotask(() => store.put({ generated: null }));
      return run();
    }
    // An encoder-decoder's tabs choose among the sets its run returned: no run.
    const r0 = s.result;
    if (r0?.sets && r0.set !== s.pairSet && r0.sets[s.pairSet]) {
      const other = { ...r0.sets[s.pairSet]!, sets: r0.sets };
      const errors = { ...s.errors };
      delete errors.across;
      if (other.acrossError) errors.across = other.acrossError;
      return store.put({ result: other, errors, ...(other.across && { across: other.across }) });
    }
    // The second vision model follows the image.
    if (
      s.beside &&
      s.image &&
      kindIn(s) === 'image' &&
      s.beside.vision.image !== s.image.id &&
      askedBeside !== s.image.id
    ) {
      askedBeside = s.image.id;
      channel.send({ kind: 'beside', image: s.image.id });
    }
    const r = s.result;
    // Grown maps (generation) and the induction test have no run of the text in the worker to analyse.
    if (!r || r.run < 0 || s.generation) return;
    if (s.main === 'math') {
      const m = s.math;
      const ask = { run: r.run, layer: s.layer, head: s.head, scale: s.scale, causal: s.causal };
      const key = JSON.stringify(ask);
      const current =
        m && JSON.stringify([m.run, m.layer, m.head, m.scale, m.causal]) === JSON.stringify(Object.values(ask));
      if (!current && key !== askedMath) {
        askedMath = key;
        channel.send({ kind: 'math', ...ask });
      }
    }
    const why = explainAsk(s);
    if (s.main === 'why' && why) {
      const key = JSON.stringify(why);
      const e = s.explained?.explained;
      if ((!e || JSON.stringify(e.ask) !== key) && key !== askedExplain) {
        askedExplain = key;
        channel.send({ kind: 'explain', ...why });
        // An error was about the question before.
        if (s.errors.explain) {
          const errors = { ...s.errors };
          delete errors.explain;
          store.put({ errors });
        }
      }
    }
    if (s.tools === 'next' && s.model?.languageModel && r.mode === 'model') {
      const position = s.token ?? r.tokens.length - 1;
      const key = JSON.stringify([r.run, position]);
      const current = s.next?.run === r.run && s.next.position === position;
      if (!current && key !== askedNext) {
        askedNext = key;
        channel.send({ kind: 'next', run: r.run, position });
      }
    }
  });
  // While a link is restored, the URL keeps it: the page does not write over it.
  // The last run asked for has been answered (or failed): what the page shows is of its text, for the tests.
  function answered(): boolean {
    const s = store.get();
    return !!s.runError || (s.result?.run ?? -1) >= lastRun || s.loading.state !== 'ok';
  }
  return { page, restoring: () => pending !== null, answered };
}
