// A speech model (a random Whisper in openai/whisper-tiny's layout: its vocabulary, special tokens and
// generation_config.json) in the page: loaded from files, it opens the speech mode (the sound's controls, the speech
// pane, no pane that needs a text). whisper.cpp's jfk.wav, chosen as a person would, is transcribed: the transcript,
// the words and their times, and every map set the page shows are the library's own generation here in Node; the
// alignment the pane draws is the alignment heads' mean (or the head chosen), read back under the pointer. A file
// that is not sound says so and keeps the last sound; a recording (Chromium's fake microphone, speaking jfk.wav) is
// transcribed like a file; a text model after it gives the text mode back.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { jfkWav, speechWhisper } from '../whisper.mjs';
import { assert, check, loadFiles, ONE_PIXEL_PNG, serve } from './harness.mjs';

/** The samples .ci/setup made with espeak-ng (web/demo/make-samples.mjs). */
const SAMPLES = new URL('../../public/samples/', import.meta.url);
const WORDS = ['"', 'the', 'dog', 'sat', 'on', 'mat', 'and', 'we', 'choose', 'to', 'go', 'moon', 'caf'];

const maxDiff = (a, b) => {
  if (a.length !== b.length) return Infinity;
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
};

/** A mono 16 kHz 16-bit PCM WAV of samples in [-1, 1). */
function pcm16Wav(samples) {
  const out = Buffer.alloc(44 + 2 * samples.length);
  out.write('RIFF', 0);
  out.writeUInt32LE(out.length - 8, 4);
  out.write('WAVEfmt ', 8);
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(16000, 24);
  out.writeUInt32LE(32000, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36);
  out.writeUInt32LE(2 * samples.length, 40);
  for (let i = 0; i < samples.length; i++)
    out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(samples[i] * 32768))), 44 + 2 * i);
  return out;
}

export async function speechChecks(browser, site, engine, shots) {
  const files = speechWhisper(WORDS);
  const model = await engine.loadModel({ files });
  const jfk = jfkWav();
  const audio = await engine.decodeAudio(jfk);
  const server = await serve(true, site);
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.grantPermissions(['microphone']);
  // Every transcript message the worker sends, in order: the transcript streams a token at a time.
  await context.addInitScript(() => {
    window.__transcripts = [];
    const Real = window.Worker;
    window.Worker = class extends Real {
      set onmessage(fn) {
        super.onmessage = (event) => {
          if (event.data?.kind === 'transcript') window.__transcripts.push(event.data.text);
          fn(event);
        };
      }
    };
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  /** Waits until the page shows a transcription of its current sound, and returns it as the state holds it. */
  const transcribed = () =>
    page.waitForFunction(
      () => {
        const s = window.__attnscope.state();
        return s.audio && s.result?.speech?.audio === s.audio.id && !s.transcript;
      },
      null,
      { timeout: 60_000 },
    );
  const library = (options = {}) =>
    model.generate({ audio: audio.samples }, { wordTimestamps: true, encoderMapLayers: [0], ...options });
  const chooseAudio = (name, buffer) =>
    page.setInputFiles('#audio-file', { name, mimeType: 'audio/wav', buffer: Buffer.from(buffer) });

  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => document.getElementById('model-name').dataset.architecture !== undefined);

    await check(
      'speech: a Whisper from files opens the speech mode: the sound, the speech pane, no text pane',
      async () => {
        await loadFiles(page, files, 'WhisperForConditionalGeneration');
        await page.waitForSelector('#audio-input:not([hidden])');
        const shown = await page.evaluate(() => {
          const visible = (id) => {
            const el = document.getElementById(id);
            return !!el && !el.hidden && el.getClientRects().length > 0;
          };
          return {
            texts: visible('texts'),
            speechTab: visible('tab-speech'),
            stacks: visible('stack-row'),
            textTabs: ['math', 'why', 'next', 'lens', 'induction', 'compare', 'intervene', 'across', 'ablate'].filter(
              (p) => visible(`tab-${p}`),
            ),
            main: window.__attnscope.state().main,
            status: document.getElementById('audio-status').textContent,
            languages: [...document.getElementById('speech-language').options].slice(0, 3).map((o) => o.value),
          };
        });
        assert(!shown.texts && shown.speechTab && shown.stacks, JSON.stringify(shown));
        assert(shown.textTabs.length === 0, `panes that need a text are offered: ${shown.textTabs}`);
        assert(shown.main === 'speech', `opens on ${shown.main}`);
        assert(/Choose, drop or record a sound/.test(shown.status), shown.status);
        assert(shown.languages.join() === ',en,zh', `languages: ${shown.languages}`);
      },
    );

    const g = await library();
    await check("speech: jfk.wav chosen: the transcript, the words and every map set are the library's", async () => {
      await chooseAudio('jfk.wav', jfk);
      await transcribed();
      const got = await page.evaluate(() => {
        const s = window.__attnscope.state();
        const sets = s.result.sets;
        const arr = (a) => Array.from(a);
        return {
          notice: s.audioNotice?.message,
          text: s.result.speech.text,
          words: s.result.speech.words.map(({ word, start, end }) => [word, start, end]),
          buttons: [...document.querySelectorAll('#speech-words button')].map((b) => b.textContent),
          transcript: document.getElementById('transcript').textContent,
          cross: { shape: sets.cross.shape, data: arr(sets.cross.attentions), keys: sets.cross.keyTokens.length },
          decoder: { shape: sets.decoder.shape, data: arr(sets.decoder.attentions) },
          encoder: { shape: sets.encoder.shape, data: arr(sets.encoder.attentions) },
          canvas: !document.getElementById('speech-canvas').hidden,
          measures: s.result.measures,
        };
      });
      assert(/^jfk\.wav: 11\.00 s, WAV, 16-bit PCM\.$/.test(got.notice), got.notice);
      assert(got.text === g.text && got.transcript === g.text.trim(), `${got.text} vs ${g.text}`);
      const want = g.words.map(({ word, start, end }) => [word, start, end]);
      assert(
        JSON.stringify(got.words) === JSON.stringify(want),
        `${JSON.stringify(got.words)} vs ${JSON.stringify(want)}`,
      );
      assert(got.buttons.join('|') === g.words.map((w) => w.word.trim()).join('|'), got.buttons.join('|'));
      for (const set of ['cross', 'decoder', 'encoder']) {
        const mine = g.maps[set];
        const d = maxDiff(got[set].data, mine.attentions);
        assert(
          JSON.stringify(got[set].shape) === JSON.stringify(mine.shape),
          `${set}: ${got[set].shape} vs ${mine.shape}`,
        );
        assert(d === 0, `${set}: differs from the library's by ${d}`);
      }
      assert(got.cross.keys === g.audioTokens.length && got.cross.keys === 550, `${got.cross.keys} positions`);
      assert(got.canvas && got.measures === 'cross', JSON.stringify([got.canvas, got.measures]));
      // The transcript streamed a token at a time: each message the text so far, the last one the whole.
      const streamed = await page.evaluate(() => window.__transcripts);
      const generated = g.windows[0].tokenProbabilities.filter((p) => !Number.isNaN(p)).length;
      assert(streamed.length >= generated - 1 && streamed.at(-1) === g.text, `${streamed.length} messages`);
      assert(
        streamed.every((t, k) => k === 0 || t.startsWith(streamed[k - 1].trimEnd().slice(0, -1))),
        JSON.stringify(streamed),
      );
      // The path drawn through the alignment is where each generated token starts, as the library timed it.
      const times = JSON.parse(await page.getAttribute('#speech-canvas', 'data-times'));
      const first = g.windows[0].tokenProbabilities.findIndex((p) => !Number.isNaN(p));
      const timed = Array.from(g.windows[0].tokenTimes.subarray(first));
      assert(JSON.stringify(times) === JSON.stringify(timed), `${times} vs ${timed}`);
    });

    /** The weight the readout gives under the pointer at a generated token's row and an audio position. */
    const readAt = async (row, position) => {
      const layout = await page.evaluate(() => {
        const c = document.getElementById('speech-canvas');
        return { ...c.getBoundingClientRect().toJSON(), width: c.width };
      });
      // The layout of draw/speech.ts: 72 px of labels, 8 px right; bands 4 + 44 + 6 + 80 + 6 from the top.
      const perSecond = (layout.width - 80) / (g.audioTokens.length * 0.02);
      const rows = g.targetTokens.length - prompt;
      const rowHeight = Math.max(6, Math.min(16, Math.floor(320 / rows)));
      await page.mouse.move(
        layout.x + 72 + (position + 0.5) * 0.02 * perSecond,
        layout.y + 4 + 44 + 6 + 80 + 6 + (row + 0.5) * rowHeight,
      );
      const text = await page.textContent('#speech-readout');
      const m = /attends ([\d.]+) here/.exec(text);
      assert(m, text);
      return Number(m[1]);
    };
    const prompt = g.windows[0].tokenProbabilities.findIndex((p) => !Number.isNaN(p));
    const crossAt = (l, h, row, k) => {
      const [, heads, n, positions] = g.maps.cross.shape;
      return g.maps.cross.attentions[((l * heads + h) * n + prompt + row) * positions + k];
    };
    await check(
      "speech: the alignment drawn is the alignment heads' mean; This head draws the head chosen",
      async () => {
        const heads = g.alignmentHeads;
        for (const [row, k] of [
          [0, 10],
          [1, 200],
          [2, 420],
        ]) {
          const want = heads.reduce((s, [l, h]) => s + crossAt(l, h, row, k), 0) / heads.length;
          const got = await readAt(row, k);
          assert(Math.abs(got - want) < 6e-4, `row ${row}, position ${k}: ${got} vs ${want.toFixed(4)}`);
        }
        await page.selectOption('#layer', { value: '0' });
        await page.selectOption('#head', { value: '1' });
        await page.check('input[name="speech-alignment"][value="head"]');
        const want = crossAt(0, 1, 1, 300);
        const got = await readAt(1, 300);
        assert(Math.abs(got - want) < 6e-4, `head 1 of layer 1: ${got} vs ${want.toFixed(4)}`);
        await page.screenshot({ path: join(shots, 'demo-speech.png') });
      },
    );

    await check('speech: every head ranked as the library ranks it; the heads ticked time the words', async () => {
      const table = () =>
        page.$$eval('#speech-heads-table tbody tr', (rows) =>
          rows.map((r) => [...r.cells].map((c) => c.textContent).concat(String(r.querySelector('input').checked))),
        );
      const want = model
        .scoreAlignmentHeads(g)
        .map(({ layer, head, score, meanError }) => [
          `L${layer + 1} H${head + 1}`,
          `${Math.round(score * 100)}%`,
          `${Math.round(meanError * 1000)} ms`,
          '',
          String(g.alignmentHeads.some(([l, h]) => l === layer && h === head)),
        ]);
      const got = await table();
      assert(JSON.stringify(got) === JSON.stringify(want), `${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
      const json = await page.textContent('#speech-heads-json');
      assert(json === `"alignment_heads": ${JSON.stringify(g.alignmentHeads)}`, json);
      // Layer 1's head 1 added to the model's [[1, 0], [1, 1]]: the words as the library times them with the three.
      await page.check('#speech-heads-table input[value="0,0"]');
      await page.waitForFunction(() => window.__attnscope.state().result?.speech?.alignmentHeads?.length === 3, null, {
        timeout: 60_000,
      });
      await transcribed();
      const three = await library({
        alignmentHeads: [
          [0, 0],
          [1, 0],
          [1, 1],
        ],
      });
      const words = await page.evaluate(() =>
        window.__attnscope.state().result.speech.words.map((w) => [w.start, w.end]),
      );
      assert(
        JSON.stringify(words) === JSON.stringify(three.words.map((w) => [w.start, w.end])),
        `${JSON.stringify(words)} vs ${JSON.stringify(three.words.map((w) => [w.start, w.end]))}`,
      );
      assert(
        (await page.textContent('#speech-heads-json')) === '"alignment_heads": [[0,0],[1,0],[1,1]]',
        await page.textContent('#speech-heads-json'),
      );
      await page.click('#speech-heads-reset');
      await page.waitForFunction(() => window.__attnscope.state().result?.speech?.alignmentHeads?.length === 2, null, {
        timeout: 60_000,
      });
      await transcribed();
    });

    await check(
      "speech: a word plays its stretch of the sound, and the encoder's map is over every position",
      async () => {
        const word = g.words.find((w) => w.end - w.start > 0.1) ?? g.words[0];
        const index = g.words.indexOf(word);
        const started = Date.now();
        await page.click(`#speech-words button >> nth=${index}`);
        await page.waitForFunction(() => document.getElementById('speech-play').textContent === 'Stop');
        await page.waitForFunction(() => document.getElementById('speech-play').textContent === 'Play', null, {
          timeout: 10_000,
        });
        const ms = Date.now() - started;
        assert(ms >= (word.end - word.start) * 1000 - 50, `played ${ms} ms of a ${word.end - word.start} s word`);
        await page.click('#stack-encoder');
        await page.waitForFunction(() => window.__attnscope.state().result?.set === 'encoder');
        const keys = await page.evaluate(() => JSON.parse(document.getElementById('map').dataset.tokens).length);
        assert(keys === 550, `the encoder's map has ${keys} columns`);
        await page.click('#stack-cross');
      },
    );

    await check('speech: a language chosen goes into the prompt, as the library writes it', async () => {
      await page.selectOption('#speech-language', 'de');
      await page.waitForFunction(
        () => window.__attnscope.state().result?.sets?.decoder?.tokens?.[1] === '<|de|>',
        null,
        {
          timeout: 60_000,
        },
      );
      await transcribed();
      const de = await library({ language: 'de' });
      const text = await page.evaluate(() => window.__attnscope.state().result.speech.text);
      assert(text === de.text, `${text} vs ${de.text}`);
      await page.selectOption('#speech-language', '');
      await transcribed();
    });

    await check("speech: a sound longer than 30 s: each window's maps, words and axis, as the library's", async () => {
      // jfk.wav three times over: 33 s, two windows (the second holds 3 s).
      const n = audio.samples.length;
      const samples = new Float32Array(3 * n);
      for (let k = 0; k < 3; k++) samples.set(audio.samples, k * n);
      const long = await model.generate({ audio: samples }, { wordTimestamps: true, encoderMapLayers: [0] });
      assert(long.windows.length === 2, `${long.windows.length} windows`);
      await chooseAudio('jfk3.wav', pcm16Wav(samples));
      await page.waitForFunction(() => window.__attnscope.state().audio?.name === 'jfk3.wav');
      await transcribed();
      const shown = () =>
        page.evaluate(() => {
          const s = window.__attnscope.state();
          const sets = s.result.sets;
          const arr = (a) => Array.from(a);
          return {
            window: s.result.speech.window,
            text: s.result.speech.text,
            options: [...document.getElementById('speech-window').options].map((o) => o.textContent),
            picker: !document.getElementById('speech-window-row').hidden,
            words: [...document.querySelectorAll('#speech-words button')].map((b) => [
              b.textContent,
              Number(b.dataset.window),
              b.dataset.shown !== undefined,
            ]),
            times: JSON.parse(document.getElementById('speech-canvas').dataset.times),
            note: document.getElementById('speech-note').textContent,
            cross: { shape: sets.cross.shape, data: arr(sets.cross.attentions) },
            decoder: { shape: sets.decoder.shape, data: arr(sets.decoder.attentions) },
            encoder: { shape: sets.encoder.shape, data: arr(sets.encoder.attentions) },
            positions: [sets.cross.keyTokens, sets.encoder.tokens].map((t) => [t[0], t.at(-1)]),
            streamed: window.__transcripts.length,
            seconds: s.audio.seconds,
            windows: s.result.speech.windows.map((w) => [w.start, w.seconds, w.text.length]),
          };
        });
      const same = (got, k) => {
        const w = long.windows[k];
        assert(
          got.window === k && got.text === long.text,
          `window ${got.window} of ${JSON.stringify(got.windows)} (${got.seconds} s): ${got.text} vs ${long.text}`,
        );
        for (const set of ['cross', 'decoder', 'encoder']) {
          const mine = w.maps[set];
          const shapes = [got[set].shape, mine.shape].map((x) => JSON.stringify(x));
          assert(shapes[0] === shapes[1], `window ${k} ${set}: ${shapes[0]} vs ${shapes[1]}`);
          const d = maxDiff(got[set].data, mine.attentions);
          assert(d === 0, `window ${k} ${set}: differs from the library's by ${d}`);
        }
        // The audio positions are named by their time in the whole sound.
        const named = [w.start, w.start + (w.audioTokens.length - 1) * 0.02].map((t) => `${t.toFixed(2)} s`);
        for (const ends of got.positions) assert(ends.join() === named.join(), `window ${k}: positions ${ends}`);
        const first = w.tokenProbabilities.findIndex((p) => !Number.isNaN(p));
        const timed = JSON.stringify(Array.from(w.tokenTimes.subarray(first)));
        assert(JSON.stringify(got.times) === timed, `window ${k}: ${got.times} vs ${timed}`);
        const words = long.words.map((x) => [x.word.trim(), x.window, x.window === k]);
        assert(JSON.stringify(got.words) === JSON.stringify(words), `window ${k}: ${JSON.stringify(got.words)}`);
      };
      const before = await shown();
      same(before, 0);
      assert(before.picker && before.options.length === 2, JSON.stringify(before.options));
      assert(/^1: 0:00–0:30/.test(before.options[0]) && /^2: 0:30–0:33/.test(before.options[1]), before.options);
      assert(/2 windows of 30 s: the maps are window 1's \(0:00–0:30\)/.test(before.note), before.note);
      // Another window: its maps, from the generation kept (no token decoded again).
      await page.selectOption('#speech-window', '1');
      await page.waitForFunction(() => window.__attnscope.state().result?.speech?.window === 1);
      const after = await shown();
      same(after, 1);
      assert(after.streamed === before.streamed, `decoded again: ${after.streamed - before.streamed} tokens streamed`);
      assert(/the maps are window 2's \(0:30–0:33\)/.test(after.note), after.note);
      await page.screenshot({ path: join(shots, 'demo-speech-window.png') });
      // A word of the first window shows the first window again.
      await page.click('#speech-words button[data-window="0"]');
      await page.waitForFunction(() => window.__attnscope.state().result?.speech?.window === 0);
      same(await shown(), 0);
    });

    await check('speech: a sound dropped on the page is the sound, transcribed as chosen', async () => {
      const before = await page.evaluate(() => window.__attnscope.state().audio.id);
      await page.evaluate((b64) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        const data = new DataTransfer();
        data.items.add(new File([bytes], 'dropped.wav', { type: 'audio/wav' }));
        document
          .getElementById('map')
          .dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
      }, Buffer.from(jfk).toString('base64'));
      await page.waitForFunction((id) => window.__attnscope.state().audio?.id !== id, before);
      await transcribed();
      const s = await page.evaluate(() => ({
        name: window.__attnscope.state().audio.name,
        text: window.__attnscope.state().result.speech.text,
        model: window.__attnscope.state().model.architecture,
      }));
      assert(
        s.name === 'dropped.wav' && s.text === g.text && s.model === 'WhisperForConditionalGeneration',
        JSON.stringify(s),
      );
    });

    await check('speech: a file that is not sound says so, and the last sound and its transcript stay', async () => {
      const before = await page.evaluate(() => window.__attnscope.state().audio.id);
      await chooseAudio('notes.mp3', Buffer.from('these are not the sounds you are looking for'));
      await page.waitForFunction(() => window.__attnscope.state().audioNotice?.state === 'error');
      const broken = Buffer.from(jfk.subarray(0, 44));
      broken.write('LIST', 36); // the header's data chunk renamed: a WAV with no samples
      const said = await page.textContent('#audio-status');
      assert(/^notes\.mp3: this browser could not decode the file as sound.*The last sound stays\.$/.test(said), said);
      await chooseAudio('empty.wav', broken);
      await page.waitForFunction((text) => {
        const n = window.__attnscope.state().audioNotice;
        return n?.state === 'error' && n.message !== text;
      }, said);
      const after = await page.evaluate(() => ({
        id: window.__attnscope.state().audio.id,
        notice: document.getElementById('audio-status').textContent,
        text: window.__attnscope.state().result.speech.text,
      }));
      assert(after.id === before && after.text === g.text, JSON.stringify(after));
      assert(/WAV|data/i.test(after.notice) && /The last sound stays\.$/.test(after.notice), after.notice);
    });

    await check(
      'speech: an image chosen as model files is refused in the page’s words: Whisper reads sound',
      async () => {
        await page.setInputFiles('#files', [{ name: 'cat.png', mimeType: 'image/png', buffer: ONE_PIXEL_PNG }]);
        await page.waitForFunction(() => document.getElementById('load-status').dataset.state === 'error');
        const said = await page.textContent('#load-status');
        assert(/reads sound, not images: choose a vision model/.test(said), said);
        const model = await page.evaluate(() => window.__attnscope.state().model.architecture);
        assert(model === 'WhisperForConditionalGeneration', model);
      },
    );

    await check('speech: a recording from the microphone is transcribed as a file is', async () => {
      await page.click('#record');
      await page.waitForFunction(() => document.getElementById('record').getAttribute('aria-pressed') === 'true');
      await page.waitForTimeout(1500);
      await page.click('#record');
      await page.waitForFunction(() => /^a recording of/.test(window.__attnscope.state().audio?.name ?? ''), null, {
        timeout: 30_000,
      });
      await transcribed();
      const s = await page.evaluate(() => {
        const st = window.__attnscope.state();
        return {
          seconds: st.audio.seconds,
          notice: st.audioNotice.message,
          samples: Array.from(st.audio.samples),
          text: st.result.speech.text,
        };
      });
      assert(s.seconds > 0.8 && s.seconds < 3, `${s.seconds} s`);
      assert(/32-bit float/.test(s.notice), s.notice);
      // The fake microphone speaks jfk.wav: what was recorded is speech, not silence, and the page's transcript of
      // it is the library's of the same samples.
      const rms = Math.sqrt(s.samples.reduce((a, x) => a + x * x, 0) / s.samples.length);
      assert(rms > 0.01, `the recording's RMS is ${rms}`);
      const heard = await model.generate({ audio: Float32Array.from(s.samples) }, { wordTimestamps: true });
      assert(s.text === heard.text, `${s.text} vs ${heard.text}`);
    });

    await check(
      'speech: a sample sentence spoken by espeak-ng (made at setup) is transcribed as a file is',
      async () => {
        const index = JSON.parse(readFileSync(new URL('index.json', SAMPLES), 'utf8'));
        const buttons = await page.$$eval('#audio-samples button', (bs) => bs.map((b) => b.textContent));
        assert(buttons.join() === index.map((x) => x.title).join(), `${buttons} vs ${index.map((x) => x.title)}`);
        const german = index.find((x) => x.id === 'german');
        await page.click('#audio-samples button[data-sample="german"]');
        await page.waitForFunction(
          (name) => window.__attnscope.state().audio?.name === name,
          `the German sample, "${german.text}"`,
        );
        await transcribed();
        const bytes = readFileSync(new URL(german.file, SAMPLES));
        const decoded = await engine.decodeAudio(bytes);
        const want = await model.generate({ audio: decoded.samples }, { wordTimestamps: true });
        const got = await page.evaluate(() => ({
          text: window.__attnscope.state().result.speech.text,
          notice: window.__attnscope.state().audioNotice.message,
        }));
        assert(got.text === want.text, `${got.text} vs ${want.text}`);
        assert(/resampled from 22050 Hz to 16000 Hz/.test(got.notice), got.notice);
      },
    );

    await check('speech: fits a 390-px-wide phone screen without sideways scrolling', async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForTimeout(150);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      await page.screenshot({ path: join(shots, 'demo-speech-phone.png'), fullPage: true });
      const [pane, map] = [
        await page.locator('#pane-speech').boundingBox(),
        await page.locator('#map-pane').boundingBox(),
      ];
      await page.setViewportSize({ width: 1400, height: 900 });
      assert(width <= 390, `the page is ${width} px wide at a 390 px viewport`);
      assert(pane.y + pane.height <= map.y + 1, `the speech pane (${JSON.stringify(pane)}) is not above the map`);
    });

    await check('speech: the embedded model after it gives the text mode back', async () => {
      await page.click('#load-default');
      await page.waitForFunction(
        () => window.__attnscope.state().model?.input === 'text' && !!window.__attnscope.state().result?.tokens,
      );
      const shown = await page.evaluate(() => ({
        audio: !document.getElementById('audio-input').hidden,
        speechTab: !document.getElementById('tab-speech').hidden,
        texts: document.getElementById('texts').getClientRects().length > 0,
        main: window.__attnscope.state().main,
      }));
      assert(!shown.audio && !shown.speechTab && shown.texts && shown.main !== 'speech', JSON.stringify(shown));
    });

    await check('speech: no console errors', async () => {
      assert(errors.length === 0, errors.join('\n'));
    });
  } finally {
    model.dispose();
    await context.close();
    server.close();
  }
}
