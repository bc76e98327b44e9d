// A model of bert-base-uncased's size (110M parameters, 440 MB in F32) loads and
// runs in the wasm heap, and its peak memory is what docs/models.md ("Memory") states.
import { expect, it } from 'vitest';

import { createEngine } from '../../dist/node.js';
import { bertCheckpoint } from '../safetensors.mjs';
import { realShapeCheckpoint } from '../llm/checkpoints.mjs';

it('loads and runs a bert-base-sized checkpoint within the heap limit', async () => {
  const { params, files } = bertCheckpoint();
  expect(params).toBeGreaterThan(109_000_000);
  const engine = await createEngine({ threads: 2 });
  const model = await engine.loadModel({ files });
  const loaded = engine.memory();
  const ids = Array.from({ length: 128 }, (_, i) => 1000 + i);
  const r = model.run(ids);
  expect(r.shape).toEqual([12, 12, 128, 128]);
  expect(r.attentions.every(Number.isFinite)).toBe(true);
  const peak = engine.memory().heapBytes;
  console.log(
    `bert-base-sized model: ${(params / 1e6).toFixed(1)}M parameters; wasm heap after load ${(loaded.heapBytes / 2 ** 20).toFixed(0)} MiB ` +
      `(${(loaded.allocatedBytes / 2 ** 20).toFixed(0)} MiB in use), after a 128-token run ${(peak / 2 ** 20).toFixed(0)} MiB`,
  );
  expect(peak).toBeLessThan(2 ** 31);
  engine.dispose();
}, 120_000);

// Language models in their real shapes, BF16 as the Hub ships them: the weights stay 16-bit in the heap, and the
// file is read tensor by tensor, never whole into the heap. docs/models.md's memory table comes from these lines.
it.each(['SmolLM2-135M', 'SmolLM2-360M', 'Qwen2.5-0.5B'] as const)(
  'loads and runs %s in its real shape within the heap limit',
  async (name) => {
    const { params, files } = realShapeCheckpoint(name);
    const engine = await createEngine({ threads: 2 });
    const model = await engine.loadModel({ files });
    const loaded = engine.memory();
    const r = model.run(
      Array.from({ length: 128 }, (_, i) => 1000 + i),
      { topK: 5 },
    );
    expect(r.shape).toEqual([model.info.layers, model.info.heads, 128, 128]);
    expect(r.predictions!.probs.every(Number.isFinite)).toBe(true);
    const peak = engine.memory().heapBytes;
    console.log(
      `${name}: ${(params / 1e6).toFixed(1)}M parameters in BF16; wasm heap after load ${(loaded.heapBytes / 2 ** 20).toFixed(0)} MiB ` +
        `(${(loaded.allocatedBytes / 2 ** 20).toFixed(0)} MiB in use), after a 128-token run ${(peak / 2 ** 20).toFixed(0)} MiB`,
    );
    expect(loaded.allocatedBytes).toBeLessThan(2.2 * params + 64 * 2 ** 20); // 2 bytes a weight, plus little
    expect(peak).toBeLessThan(2 ** 31);
    engine.dispose();
  },
  300_000,
);
