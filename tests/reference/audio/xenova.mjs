// transformers.js 2.x (@xenova/transformers) as a child process: Whisper's feature extractor, and its median filter
// and dynamic time warping, run as that library runs them. Reads a JSON request on stdin,
//   { features: [{ file, melBins }] }  file: little-endian float32 samples at 16 kHz
// and writes { features: [{ file }] }, each file the extractor's input_features [melBins, 3000] as float32.
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
for (const { file, melBins } of request.features ?? []) {
  const bytes = readFileSync(file);
  const samples = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  // openai/whisper-tiny's preprocessor_config.json (large-v3's with 128 mel bins), without its stored mel_filters:
  // the extractor then builds Slaney's, as transformers does.
  const extractor = new WhisperFeatureExtractor({
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
  const { input_features } = await extractor(samples);
  const out = `${file}.features`;
  writeFileSync(
    out,
    Buffer.from(input_features.data.buffer, input_features.data.byteOffset, input_features.data.byteLength),
  );
  answer.features.push({ file: out, shape: input_features.dims.slice(1) });
}
process.stdout.write(JSON.stringify(answer));
