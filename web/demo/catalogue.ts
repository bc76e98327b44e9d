// The language models the picker offers by name: their Hub ids, what they download (the weights in BF16, as the
// Hub ships them, and the tokenizer) and the heap they need once loaded. 16-bit weights stay 16-bit in the heap,
// and the engine keeps room beside them for running (EngineInfo.runningRoomBytes), so a model needs its weights
// plus that room; one that would not fit the heap is refused here, before anything downloads.
export interface Entry {
  id: string;
  name: string;
  /** Bytes of model.safetensors as the Hub lists it. */
  weights: number;
  /** Bytes of the rest: config.json, tokenizer.json and its companions. */
  other: number;
  /** What it is, in a few words. */
  about: string;
}

export const LANGUAGE_MODELS: Entry[] = [
  {
    id: 'HuggingFaceTB/SmolLM2-135M',
    name: 'SmolLM2-135M',
    weights: 269_060_552,
    other: 3_600_000,
    about: 'Llama · 30 layers × 9 heads, 3 KV',
  },
  {
    id: 'HuggingFaceTB/SmolLM2-360M',
    name: 'SmolLM2-360M',
    weights: 723_674_912,
    other: 3_600_000,
    about: 'Llama · 32 layers × 15 heads, 5 KV',
  },
  {
    id: 'Qwen/Qwen2.5-0.5B',
    name: 'Qwen2.5-0.5B',
    weights: 988_097_824,
    other: 11_400_000,
    about: 'Qwen2 · 24 layers × 14 heads, 2 KV',
  },
  {
    id: 'unsloth/gemma-3-270m',
    name: 'Gemma 3 270M',
    weights: 536_223_056,
    other: 38_000_000,
    about: 'Gemma 3 · 18 layers × 4 heads, 1 KV; local windows',
  },
  {
    id: 'TinyLlama/TinyLlama-1.1B-Chat-v1.0',
    name: 'TinyLlama 1.1B',
    weights: 2_200_119_864,
    other: 2_100_000,
    about: 'Llama · 22 layers × 32 heads, 4 KV',
  },
];

/** The heap a model needs, and whether it fits beside what the engine holds. */
export function heapNeeds(
  entry: Pick<Entry, 'weights'>,
  engine: { maxHeapBytes: number; runningRoomBytes: number; heapInUse: number },
): { needs: number; free: number; fits: boolean } {
  const needs = entry.weights + engine.runningRoomBytes;
  const free = engine.maxHeapBytes - engine.heapInUse;
  return { needs, free, fits: needs <= free };
}

/** Bytes as people read them: 270 MB, 2.2 GB. */
export function size(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.round(bytes / 1e6)} MB`;
}

/** Heap bytes in the engine's units: 0.50 GiB, 2.30 GiB. */
export const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;
