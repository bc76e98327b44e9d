// transformers.js 2.x (@xenova/transformers) as a child process: Whisper's feature extractor, its token timestamps
// (median filter and dynamic time warping) and its tokenizer's words, run as that library runs them. Reads a JSON
// request on stdin,
//   { features: [{ file, melBins }],  file: little-endian float32 samples at 16 kHz
//     timestamps: [{ file, shape, heads, frames }],  file: cross-attention [layers, heads, rows, keys] as float32
//     words: [{ tokenizer, tokens, times }],  tokenizer: a tokenizer.json's path; times: each token's seconds
//     warps: [{ file, rows, columns }],  file: a cost matrix [rows, columns] as float32
//     segments: [{ tokenizer, tokens }],  a generated sequence with timestamp tokens
//     prompts: [{ tokenizer, language, task, noTimestamps }],  WhisperTokenizer.get_decoder_prompt_ids
//     filters: [{ melBins }] }  the extractor's mel filters
// and writes { features: [{ file }], timestamps: [seconds per token (rows + 1)], words: [{ text, chunks }],
// warps: [[rows, columns] of the path], segments: [{ text, chunks }], prompts: [[[position, id]]],
// filters: [[melBins][201]] }, each features file the extractor's input_features [melBins, 3000].
//
// transformers.js imports sharp (for images) and onnxruntime-node (for models) at load; neither is installed whole
// (sharp without its binary, --ignore-scripts; onnxruntime-node is optional and omitted). A loader hook gives sharp a
// stand-in that throws if called (nothing here reads an image) and resolves onnxruntime-node to onnxruntime-web,
// whose Tensor class (onnxruntime-common's) is the one transformers.js's tensors wrap in Node too.
import { readFileSync, writeFileSync } from 'node:fs';
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(
      `export async function resolve(spec, context, next) {
        if (spec === 'sharp')
          return { url: 'data:text/javascript,export default function sharp() { throw new Error("sharp is stubbed"); }', shortCircuit: true };
        if (spec === 'onnxruntime-node') return next('onnxruntime-web', context);
        return next(spec, context);
      }`,
    ),
);
// The processors alone: the package's index would load onnxruntime, which is neither installed nor needed here.
const { WhisperFeatureExtractor } = await import('@xenova/transformers/src/processors.js');

const request = JSON.parse(readFileSync(0, 'utf8'));
const answer = { features: [] };
/**
 * openai/whisper-tiny's preprocessor_config.json (large-v3's with 128 mel bins), without its stored mel_filters: the
 * extractor then builds Slaney's, as transformers does.
 */
const extractorFor = (melBins) =>
  new WhisperFeatureExtractor({
    feature_extractor_type: 'WhisperFeatureExtractor',
    feature_size: melBins,
    sampling_rate: 16000,
    hop_length: 160,
    chunk_length: 30,
    n_fft: 400,
    n_samples: 480000,
    nb_max_frames: 3000,
    padding_side: 'right',
    padding_value: 0,
    return_attention_mask: false,
  });
for (const { file, melBins } of request.features ?? []) {
  const bytes = readFileSync(file);
  const samples = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const extractor = extractorFor(melBins);
  const { input_features } = await extractor(samples);
  const out = `${file}.features`;
  writeFileSync(
    out,
    Buffer.from(input_features.data.buffer, input_features.data.byteOffset, input_features.data.byteLength),
  );
  answer.features.push({ file: out, shape: input_features.dims.slice(1) });
}
// WhisperForConditionalGeneration._extract_token_timestamps reads only config.decoder_layers and
// median_filter_width of its model: it runs here on a stand-in holding those, over cross-attention given as one
// generation step of every row.
const timestamps = request.timestamps ?? [];
const words = request.words ?? [];
const warps = request.warps ?? [];
const segments = request.segments ?? [];
const prompts = request.prompts ?? [];
if (timestamps.length || words.length || warps.length || segments.length || prompts.length) {
  // The package's index: its modules import each other in a cycle that only the index's order resolves.
  const { WhisperForConditionalGeneration, WhisperTokenizer, Tensor, dynamicTimeWarping } =
    await import('@xenova/transformers');
  const floats = (/** @type {string} */ file) => {
    const bytes = readFileSync(file);
    return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  };
  answer.warps = warps.map(({ file, rows, columns }) =>
    dynamicTimeWarping(new Tensor('float32', floats(file), [rows, columns])),
  );
  answer.timestamps = timestamps.map(({ file, shape, heads, frames }) => {
    const bytes = readFileSync(file);
    const cross = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    const [layers, perLayer, rows, keys] = shape;
    const step = Array.from(
      { length: layers },
      (_, l) =>
        new Tensor('float32', cross.slice(l * perLayer * rows * keys, (l + 1) * perLayer * rows * keys), [
          1,
          perLayer,
          rows,
          keys,
        ]),
    );
    const model = { config: { decoder_layers: layers, median_filter_width: 7 } };
    const outputs = { cross_attentions: [[step]], sequences: [new Array(rows + 1).fill(0)] };
    const times = WhisperForConditionalGeneration.prototype._extract_token_timestamps.call(
      model,
      outputs,
      heads,
      frames,
    );
    return Array.from(times.data);
  });
  answer.words = words.map(({ tokenizer, tokens, times }) => {
    const t = new WhisperTokenizer(JSON.parse(readFileSync(tokenizer, 'utf8')), {});
    const [text, { chunks }] = t._decode_asr([{ tokens, token_timestamps: times }], {
      return_timestamps: 'word',
      time_precision: 0.02,
      force_full_sequences: false,
    });
    return { text, chunks };
  });
  answer.prompts = prompts.map(({ tokenizer, language, task, noTimestamps }) =>
    new WhisperTokenizer(JSON.parse(readFileSync(tokenizer, 'utf8')), {}).get_decoder_prompt_ids({
      language,
      task,
      no_timestamps: noTimestamps,
    }),
  );
  answer.segments = segments.map(({ tokenizer, tokens }) => {
    const t = new WhisperTokenizer(JSON.parse(readFileSync(tokenizer, 'utf8')), {});
    const [text, { chunks }] = t._decode_asr([{ tokens }], {
      return_timestamps: true,
      time_precision: 0.02,
      force_full_sequences: false,
    });
    return { text, chunks };
  });
}
// Slaney's mel filters as the extractor builds them: a row of 201 frequency bins per mel bin.
answer.filters = (request.filters ?? []).map(({ melBins }) =>
  extractorFor(melBins).config.mel_filters.map((row) => Array.from(row)),
);
process.stdout.write(JSON.stringify(answer));
