// The models the picker offers by name, by family: their Hub ids, what they download and the heap they need once
// loaded. The safetensors language models' sizes are written here (the weights in BF16, as the Hub ships them, and the
// tokenizer), so the picker says them offline; the other models' (GGUF files among them, `org/name-GGUF/file.gguf`)
// the Hub's file list gives when one is chosen (engine.hubPlan; a GGUF's weights, its header). Weights stay in their file's type in the heap (16-bit
// or quantized), and the engine keeps room beside them for running
// (EngineInfo.runningRoomBytes), so a model needs its weights plus that room; one that would not fit the heap is
// refused here, before anything downloads.
export interface Entry {
  id: string;
  name: string;
  family: 'Language models' | 'Encoder-decoders' | 'Vision' | 'Speech';
  /** Bytes of model.safetensors as the Hub lists it; absent: asked of the Hub when chosen. */
  weights?: number;
  /** Bytes of the rest: config.json, tokenizer.json and its companions. */
  other?: number;
  /** What it is, in a few words. */
  about: string;
}

export const MODELS: Entry[] = [
  {
    id: 'HuggingFaceTB/SmolLM2-135M',
    name: 'SmolLM2-135M',
    family: 'Language models',
    weights: 269_060_552,
    other: 3_600_000,
    about: 'Llama · 30 layers × 9 heads, 3 KV',
  },
  {
    id: 'HuggingFaceTB/SmolLM2-360M',
    name: 'SmolLM2-360M',
    family: 'Language models',
    weights: 723_674_912,
    other: 3_600_000,
    about: 'Llama · 32 layers × 15 heads, 5 KV',
  },
  {
    id: 'Qwen/Qwen2.5-0.5B',
    name: 'Qwen2.5-0.5B',
    family: 'Language models',
    weights: 988_097_824,
    other: 11_400_000,
    about: 'Qwen2 · 24 layers × 14 heads, 2 KV',
  },
  {
    id: 'unsloth/gemma-3-270m',
    name: 'Gemma 3 270M',
    family: 'Language models',
    weights: 536_223_056,
    other: 38_000_000,
    about: 'Gemma 3 · 18 layers × 4 heads, 1 KV; local windows',
  },
  {
    id: 'TinyLlama/TinyLlama-1.1B-Chat-v1.0',
    name: 'TinyLlama 1.1B',
    family: 'Language models',
    weights: 2_200_119_864,
    other: 2_100_000,
    about: 'Llama · 22 layers × 32 heads, 4 KV',
  },
  {
    id: 'bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q8_0.gguf',
    name: 'Llama 3.2 1B Instruct (GGUF Q8_0)',
    family: 'Language models',
    about: 'Llama 3 · 16 layers × 32 heads, 8 KV',
  },
  {
    id: 'Qwen/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q8_0.gguf',
    name: 'Qwen3 1.7B (GGUF Q8_0)',
    family: 'Language models',
    about: 'Qwen3 · 28 layers × 16 heads, 8 KV; QK-norm',
  },
  {
    id: 'bartowski/gemma-2-2b-it-GGUF/gemma-2-2b-it-Q4_K_M.gguf',
    name: 'Gemma 2 2B it (GGUF Q4_K_M)',
    family: 'Language models',
    about: 'Gemma 2 · 26 layers × 8 heads, 4 KV; soft-caps, local windows',
  },
  { id: 'facebook/bart-base', name: 'BART base', family: 'Encoder-decoders', about: 'BART · 6 + 6 layers × 12 heads' },
  {
    id: 'Helsinki-NLP/opus-mt-en-de',
    name: 'opus-mt English → German',
    family: 'Encoder-decoders',
    about: 'Marian · 6 + 6 layers × 8 heads',
  },
  { id: 'google-t5/t5-small', name: 'T5 small', family: 'Encoder-decoders', about: 'T5 · 6 + 6 layers × 8 heads' },
  {
    id: 'google/vit-base-patch16-224',
    name: 'ViT-B/16',
    family: 'Vision',
    about: 'ViT · 12 layers × 12 heads, 224², ImageNet labels',
  },
  {
    id: 'facebook/deit-small-distilled-patch16-224',
    name: 'DeiT-S distilled',
    family: 'Vision',
    about: 'DeiT · 12 layers × 6 heads, a distillation token',
  },
  { id: 'facebook/dinov2-small', name: 'DINOv2-S', family: 'Vision', about: 'DINOv2 · 12 layers × 6 heads, 224²' },
  {
    id: 'facebook/dinov2-with-registers-small',
    name: 'DINOv2-S with registers',
    family: 'Vision',
    about: 'DINOv2 · 12 layers × 6 heads, 4 registers',
  },
  {
    id: 'openai/clip-vit-base-patch32',
    name: 'CLIP ViT-B/32 (vision tower)',
    family: 'Vision',
    about: 'CLIP · 12 layers × 12 heads, patch 32',
  },
  { id: 'openai/whisper-tiny', name: 'Whisper tiny', family: 'Speech', about: 'Whisper · 4 + 4 layers × 6 heads' },
  { id: 'openai/whisper-base', name: 'Whisper base', family: 'Speech', about: 'Whisper · 6 + 6 layers × 8 heads' },
  {
    id: 'openai/whisper-small.en',
    name: 'Whisper small (English)',
    family: 'Speech',
    about: 'Whisper · 12 + 12 layers × 12 heads',
  },
];

/** The families in the order the picker groups them. */
export const FAMILIES: ReadonlyArray<Entry['family']> = ['Language models', 'Encoder-decoders', 'Vision', 'Speech'];

/**
 * What a model downloads and what its weights take: as written here, or as the Hub's file list says (`plan`); null
 * while neither is known.
 */
export function sizesOf(
  entry: Entry,
  plan: { downloadBytes: number; weightBytes: number } | { error: string } | undefined,
): { download: number; weights: number } | null {
  if (entry.weights !== undefined) return { download: entry.weights + (entry.other ?? 0), weights: entry.weights };
  return plan && 'weightBytes' in plan ? { download: plan.downloadBytes, weights: plan.weightBytes } : null;
}

/** The heap a model needs for its weights, and whether it fits beside what the engine holds. */
export function heapNeeds(
  weights: number,
  engine: { maxHeapBytes: number; runningRoomBytes: number; heapInUse: number },
): { needs: number; free: number; fits: boolean } {
  const needs = weights + engine.runningRoomBytes;
  const free = engine.maxHeapBytes - engine.heapInUse;
  return { needs, free, fits: needs <= free };
}

/** Bytes as people read them: 270 MB, 2.2 GB. */
export function size(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.round(bytes / 1e6)} MB`;
}

/** Heap bytes in the engine's units: 0.50 GiB, 2.30 GiB. */
export const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;
