// Vision transformers (section 12): the base models of google/vit-base-patch16-224 at 224² (197 tokens) and
// facebook/dinov2-small at 518² (1,370 tokens), random float32 weights in the Hub's names (bench/workloads.mjs), run on
// the same pixels [3, H, W] with every layer's and head's map returned: AttnScope's model.run({ pixels }) against
// onnxruntime-web on ONNX graphs of the same weights laid out as a transformers.js "-with-attentions" export
// (bench/peers/onnx_graphs.py --vit, --dinov2).
import { existsSync, readFileSync, readdirSync } from 'node:fs';

import { faster, fmt, vsOrt } from './harness.mjs';
import { median } from './stats.mjs';
import {
  ATTNSCOPE_BUILDS as VARIANTS,
  EngineProcess,
  attnscopeEngines,
  nodeEngine,
  prepareVision,
} from './processes.mjs';
import { VISION_MODELS, visionMapFloats, visionTokens } from './workloads.mjs';

const REFERENCE = 'AttnScope wasm ×1';
/** Interleaved rounds per model: a DINOv2 call returns 540 MB of maps and takes seconds on one thread. */
const ROUNDS = { vit: 7, dinov2: 5 };
/**
 * Warm-up calls per engine before the rounds: ViT-B's first rows ran onnxruntime-web on one thread at half its later
 * speed after a single warm-up call (its wasm still tiering up); a DINOv2 call is long enough for that.
 */
const WARMUP = { vit: 4, dinov2: 1 };

/**
 * On Linux in a virtual machine: how the guest reports free memory to its hypervisor, which then takes it back, or
 * null when it does not (no balloon device offers free page reporting, or reporting is switched off).
 */
function freePageReporting() {
  const REPORTING = 5; // VIRTIO_BALLOON_F_REPORTING, a bit of the device's features
  const order = Number(readIfThere('/sys/module/page_reporting/parameters/page_reporting_order'));
  const balloon = '/sys/bus/virtio/drivers/virtio_balloon';
  const devices = existsSync(balloon) ? readdirSync(balloon).filter((d) => d.startsWith('virtio')) : [];
  const reports = devices.some((d) => readIfThere(`${balloon}/${d}/features`)?.[REPORTING] === '1');
  return reports && order <= 10 ? `virtio-balloon free page reporting, blocks of 2^${order} pages` : null;
}
const readIfThere = (path) => (existsSync(path) ? readFileSync(path, 'utf8').trim() : null);

/**
 * Section 12 and its target: at least 1.5× onnxruntime-web at the same thread count, on both models. AttnScope runs
 * twice: writing the maps into new arrays each call, as onnxruntime-web's CPU outputs always are, and into the
 * caller's array reused from call to call (options.into), which onnxruntime-web's CPU outputs cannot do.
 */
export async function vision({ measure }) {
  prepareVision();
  const ours = VARIANTS.flatMap(({ name }) => [1, 2].map((t) => `AttnScope ${name} ×${t}`));
  const shown = [...ours, 'ORT-web ×1', 'ORT-web ×2'];
  const ARRAYS = ['new', 'into'];
  /** `${model} ${arrays}` → every engine's result; the reference's sample, which the two-thread engines must match. */
  const results = {};
  const reference = {};
  // One thread count at a time, in processes started for it and quit after: the ratios pair engines of the same
  // thread count, and six processes holding a DINOv2 call's 1.4 GB each would keep 9 GB resident. A virtual machine
  // whose host takes back memory the guest freed seconds earlier then charges a new array's first touch several
  // times over, to whichever engine cannot reuse pages it has just freed itself.
  for (const threads of [1, 2]) {
    const among = [
      ...attnscopeEngines([threads]),
      new EngineProcess(`ORT-web ×${threads}`, ...nodeEngine('ort.mjs', threads)),
    ];
    for (const [key, model] of Object.entries(VISION_MODELS)) {
      const floats = visionMapFloats(model);
      // After the reference engine's calls in the `new` rows: a new array of the maps' size, written once.
      const touch = (e) => (e.name === REFERENCE ? e.ask({ op: 'touch', floats }).then((r) => r.ms) : undefined);
      for (const arrays of ARRAYS) {
        const row = `${key} ${arrays}`;
        const r = await measure(
          `vision ${key} n=${visionTokens(model)}, ${arrays} arrays`,
          { work: 'vision', model: key, into: arrays === 'into' },
          { rounds: ROUNDS[key], warmup: WARMUP[key], alongside: arrays === 'new' ? touch : null },
          among,
          reference[row] ? { sample: reference[row] } : REFERENCE,
        );
        reference[row] ??= r[REFERENCE].sample;
        results[row] = { ...results[row], ...r };
      }
    }
    await Promise.all(among.map((e) => e.quit()));
  }
  console.log(
    `\n12. Vision transformers, random float32 weights: the pixels [3, H, W] through the model, every layer's ` +
      `and head's map returned (median ms). arrays: AttnScope's maps in a new array each call, or into the ` +
      `caller's array, reused (options.into); onnxruntime-web's are new arrays either way`,
  );
  const rows = {};
  for (const [key, model] of Object.entries(VISION_MODELS))
    for (const arrays of ARRAYS) {
      const r = results[`${key} ${arrays}`];
      const { num_hidden_layers: layers, num_attention_heads: heads } = model.config;
      rows[`${model.name}, ${layers} × ${heads} heads, n = ${visionTokens(model)}, ${arrays}`] = {
        ...Object.fromEntries(shown.map((name) => [name, fmt(r[name]?.ms)])),
        ...vsOrt(r, VARIANTS),
      };
    }
  console.table(rows);
  for (const [key, model] of Object.entries(VISION_MODELS)) {
    const touched = results[`${key} new`][REFERENCE]?.alongside ?? [];
    if (!touched.length) continue;
    const mb = (4 * visionMapFloats(model)) / 1e6;
    console.log(
      `${model.name}: a new array of its maps' size (${mb.toFixed(0)} MB), written once right after ${REFERENCE}'s ` +
        `calls, took ${fmt(median(touched))} ms (median; ${fmt(Math.min(...touched))} to ` +
        `${fmt(Math.max(...touched))}): the first touch of its pages, which a new-array call of either engine pays ` +
        `on top of the arithmetic.`,
    );
  }
  const reporting = freePageReporting();
  if (reporting)
    console.log(
      `This machine's hypervisor takes back the memory its guest frees (${reporting}): a page it has taken back costs ` +
        `several times more to touch again, and a new array's share of it moves from run to run ` +
        `(docs/performance.md, "Vision transformers").`,
    );
  console.log('Targets:');
  for (const [key, model] of Object.entries(VISION_MODELS))
    for (const arrays of ARRAYS)
      for (const { name } of VARIANTS)
        for (const t of [1, 2])
          faster(
            `${model.name}, ${arrays} arrays: ${name} ×${t} vs ORT-web ×${t}`,
            results[`${key} ${arrays}`][`AttnScope ${name} ×${t}`],
            results[`${key} ${arrays}`][`ORT-web ×${t}`],
            1.5,
          );
}
