// The side panel in speech mode (a speech model is loaded): the text's controls give way to a sound's: choose a
// file, drop one anywhere on the page, record from the microphone, or take a sample sentence (spoken by espeak-ng
// when the page was set up); the language spoken (or detect it) and the
// task. It says what became of the sound (its length, format, what was done to it, or why it could not be read: the
// last sound then stays), and shows the transcript as the model writes it.
import { isAudio, lastSoundStays, record, wavBytes, type Recording } from '../audio.js';
import { kindIn } from '../kinds/page.js';
import { $, changes, setProp, setText, takeFiles, type Page, type View } from './view.js';

export function audioInputView(page: Page): View {
  const language = $<HTMLSelectElement>('speech-language');
  const task = $<HTMLSelectElement>('speech-task');
  const recordButton = $<HTMLButtonElement>('record');
  const speech = () => kindIn(page.store.get()) === 'speech';
  /** The sound being read: a later choice wins over one still decoding here. */
  let reading = 0;
  let recording: Recording | null = null;

  async function use(bytes: () => Promise<ArrayBuffer>, name: string): Promise<void> {
    const ticket = ++reading;
    page.store.put({ audioNotice: { state: 'busy', message: `Reading ${name}…` } });
    try {
      const wav = await wavBytes(await bytes());
      if (ticket === reading) page.sendAudio(name, wav);
    } catch (err) {
      if (ticket !== reading) return;
      const message = err instanceof Error ? err.message : String(err);
      page.store.put({
        audioNotice: { state: 'error', message: `${name}: ${message}.${lastSoundStays(page.store.get())}` },
      });
    }
  }
  const useFile = (file: File) => use(() => file.arrayBuffer(), file.name);

  // With a speech model loaded, a sound chosen or dropped is the sound.
  takeFiles($<HTMLInputElement>('audio-file'), speech, isAudio, (f) => void useFile(f));
  recordButton.addEventListener('click', async () => {
    if (recording) {
      const r = recording;
      recording = null;
      const seconds = ((performance.now() - r.started) / 1000).toFixed(1);
      void use(() => r.stop(), `a recording of ${seconds} s`);
      view.render(page.store.get());
      return;
    }
    try {
      page.store.put({ audioNotice: { state: 'busy', message: 'Asking for the microphone…' } });
      recording = await record();
      page.store.put({ audioNotice: { state: 'busy', message: 'Recording: press Stop when you are done.' } });
    } catch (err) {
      const message = `${(err as Error).message}.${lastSoundStays(page.store.get())}`;
      page.store.put({ audioNotice: { state: 'error', message } });
    }
    view.render(page.store.get());
  });
  // The samples setup made with espeak-ng (make-samples.mjs), when there are any: a button each, saying what it says.
  const samples = $('audio-samples');
  let samplesAsked = false;
  async function listSamples(): Promise<void> {
    samplesAsked = true;
    try {
      const reply = await fetch('samples/index.json');
      if (!reply.ok) return;
      const list = (await reply.json()) as Array<{ id: string; title: string; file: string; text: string }>;
      for (const { id, title, file, text } of list) {
        const b = document.createElement('button');
        b.type = 'button';
        b.dataset.sample = id;
        b.textContent = title;
        b.title = `"${text}" (spoken by espeak-ng)`;
        b.addEventListener('click', () =>
          use(async () => {
            const r = await fetch(`samples/${file}`);
            if (!r.ok) throw new Error(`the sample could not be fetched (${r.status})`);
            return r.arrayBuffer();
          }, `the ${title} sample, "${text}"`),
        );
        samples.append(b);
      }
      samples.hidden = !list.length;
    } catch {
      // No samples were made (setup not run): the row stays hidden.
    }
  }

  language.addEventListener('change', () => page.store.select({ speechLanguage: language.value }));
  task.addEventListener('change', () => page.store.select({ speechTask: task.value as 'transcribe' | 'translate' }));

  const languages = changes();
  const view: View = {
    id: 'audio-input',
    render(s) {
      const on = kindIn(s) === 'speech';
      if (document.body.classList.contains('speech') !== on) document.body.classList.toggle('speech', on);
      setProp($('audio-input'), 'hidden', !on);
      if (!on) return;
      if (!samplesAsked) void listSamples();
      const settings = s.model?.speech;
      if (languages(settings)) {
        const codes = settings?.multilingual ? Object.keys(settings.languages) : ['en'];
        language.replaceChildren(
          ...(settings?.multilingual ? [new Option('detect it', '')] : []),
          ...codes.map((c) => new Option(c, c)),
        );
      }
      setProp(language, 'value', settings?.multilingual ? s.speechLanguage : 'en');
      setProp(language, 'disabled', !settings?.multilingual);
      setProp($('speech-task-row'), 'hidden', !settings?.multilingual);
      setProp(task, 'value', s.speechTask);
      setText(recordButton, recording ? 'Stop' : 'Record');
      recordButton.setAttribute('aria-pressed', String(!!recording));
      const status = $('audio-status');
      const n = s.audioNotice;
      setText(status, n ? n.message : s.audio ? '' : 'Choose, drop or record a sound: the model transcribes it.');
      const state = n?.state ?? 'ok';
      if (status.dataset.state !== state) status.dataset.state = state;
      // The transcript as it is written, then the run's; a failed run says why where the transcript goes.
      const transcript = $('transcript');
      const writing = s.transcript && !s.runError;
      const speechRun = s.result?.speech;
      const text = s.runError
        ? `Could not transcribe: ${s.runError}`
        : writing
          ? `${s.transcript!.text}…`
          : speechRun && speechRun.audio === s.audio?.id
            ? speechRun.text.trim()
            : s.audio
              ? 'Transcribing…'
              : '';
      setText(transcript, text);
      const tState = s.runError ? 'error' : writing || (s.audio && speechRun?.audio !== s.audio.id) ? 'busy' : 'ok';
      if (transcript.dataset.state !== tState) transcript.dataset.state = tState;
    },
  };
  return view;
}
