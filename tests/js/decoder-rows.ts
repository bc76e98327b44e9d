// Each decoder architecture row as a small random checkpoint, with what makes it itself: held to llama.cpp
// (llama-cpp.test.ts) and read from its GGUF twin (gguf.test.ts).
import type { DecoderSpec } from '../llm/checkpoints.mjs';

/** Each architecture row, with what makes it itself. */
export const ROWS: Record<string, DecoderSpec> = {
  'llama: grouped-query attention, tied head': { arch: 'llama', tied: true },
  'llama: untied head, llama3 RoPE scaling': {
    arch: 'llama',
    theta: 500000,
    ropeScaling: {
      rope_type: 'llama3',
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 16,
    },
  },
  'llama: linear RoPE scaling, head_dim apart from d / heads': {
    arch: 'llama',
    headDim: 16,
    ropeScaling: { type: 'linear', factor: 2 },
  },
  // llama.cpp runs Mistral as llama and ignores its window, so this twin's window spans the sequence; the
  // window itself is held to the float64 reference in tests/cpp/decoder_test.cpp, and below on Gemma.
  'mistral: sliding window as wide as the context': { arch: 'mistral', window: 128 },
  'qwen2: q, k, v biases, multi-query, untied': { arch: 'qwen2', kvHeads: 1, theta: 1e6 },
  'qwen3: QK-norm, head_dim apart from d / heads, tied': { arch: 'qwen3', headDim: 16, tied: true },
  'gemma2: soft-caps, windows of 5 on even layers, query_pre_attn_scalar': {
    arch: 'gemma2',
    layers: 3,
    window: 5,
    queryPreAttnScalar: 24,
    attnSoftcap: 20,
    finalSoftcap: 15,
  },
  'gemma3: QK-norm, local and global RoPE, linear scaling, windows of 5': {
    arch: 'gemma3',
    layers: 3,
    window: 5,
    queryPreAttnScalar: 24,
    layerTypes: ['sliding_attention', 'full_attention', 'sliding_attention'],
    ropeScaling: { rope_type: 'linear', factor: 8 },
  },
  // Phi-4-mini's RoPE: 6 of each head's 8 dims turn; longrope's short factors and its attention factor
  // √(1 + ln 2 / ln 256), as llama.cpp reads them from rope_factors_short and rope.scaling.attn_factor.
  'phi3: stacked q, k, v and gate, up; partial rotary 0.75; longrope': {
    arch: 'phi3',
    kvHeads: 4,
    partialRotary: 0.75,
    maxPositions: 512,
    longrope: { short: [1, 1.5, 3], long: [2, 4, 8], original: 256 },
  },
};
