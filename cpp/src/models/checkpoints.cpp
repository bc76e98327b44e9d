// Reading a decoder's weights in its checkpoint's own tensor names into the canonical
// decoder::Weights: one reader for the Llama family's names (Llama, Mistral, Qwen, Gemma, and Phi-3, which
// stacks q, k, v in one tensor and gate, up in another) and one for GPT-2's. The x·W layout throughout: Linear weights
// [out, in] are read transposed.
#include "attnscope/error.hpp"
#include "models/decoder.hpp"
#include "models/weights.hpp"

namespace attnscope::decoder {

namespace {

// A norm's weight [d] as the forward pass multiplies by it: (1 + w) for Gemma's.
Tensor norm_weight(const Config& k, const WeightStore& w, const std::string& name, std::int64_t width) {
  Tensor t = w.read(name, {width});
  if (k.norm_plus_one)
    for (float& x : t.data) x += 1.0f;
  return t;
}

// Where the text model's tensors live: "model." (a causal LM), "" (a bare model), or Gemma 3
// image-text checkpoints' "language_model.model." / "model.language_model.".
std::string llama_prefix(const WeightStore& w) {
  for (const char* p : {"model.", "language_model.model.", "model.language_model.", ""})
    if (w.contains(std::string(p) + "embed_tokens.weight")) return p;
  throw Error("loadModel: tensor \"model.embed_tokens.weight\" is missing from the model's weights");
}

Weights read_llama_weights(const Config& k, const WeightStore& w) {
  Weights m;
  const std::string p = llama_prefix(w);
  const std::int64_t d = k.d_model, q = k.heads * k.head_dim, kv = k.kv_heads * k.head_dim;
  m.embed = w.matrix(p + "embed_tokens.weight", k.vocab, d, /*transposed=*/true);
  m.dtype = w.dtype(p + "embed_tokens.weight");
  m.final_norm = norm_weight(k, w, p + "norm.weight", d);
  const std::string head = p == "language_model.model." ? "language_model.lm_head.weight" : "lm_head.weight";
  if (w.contains(head))  // present even when tied (Qwen3-0.6B): transformers v5 then uses it
    m.lm_head = w.matrix(head, k.vocab, d, /*transposed=*/true);
  else if (!k.tied)
    throw Error("loadModel: tensor \"lm_head.weight\" is missing, and config.json's tie_word_embeddings is false");
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::string b = p + "layers." + std::to_string(l) + ".";
    Block B;
    B.attn_norm = norm_weight(k, w, b + "input_layernorm.weight", d);
    if (k.sandwich) {
      B.post_attn_norm = norm_weight(k, w, b + "post_attention_layernorm.weight", d);
      B.ffn_norm = norm_weight(k, w, b + "pre_feedforward_layernorm.weight", d);
      B.post_ffn_norm = norm_weight(k, w, b + "post_feedforward_layernorm.weight", d);
    } else {
      B.ffn_norm = norm_weight(k, w, b + "post_attention_layernorm.weight", d);
    }
    if (k.stacked) {
      const std::string qkv = b + "self_attn.qkv_proj.weight";
      B.wq = w.linear_rows(qkv, d, q + 2 * kv, 0, q);
      B.wk = w.linear_rows(qkv, d, q + 2 * kv, q, kv);
      B.wv = w.linear_rows(qkv, d, q + 2 * kv, q + kv, kv);
    } else {
      B.wq = w.linear(b + "self_attn.q_proj.weight", d, q);
      B.wk = w.linear(b + "self_attn.k_proj.weight", d, kv);
      B.wv = w.linear(b + "self_attn.v_proj.weight", d, kv);
    }
    B.wo = w.linear(b + "self_attn.o_proj.weight", q, d);
    if (k.qkv_bias) {
      B.bq = w.read(b + "self_attn.q_proj.bias", {q});
      B.bk = w.read(b + "self_attn.k_proj.bias", {kv});
      B.bv = w.read(b + "self_attn.v_proj.bias", {kv});
    }
    if (k.o_bias) B.bo = w.read(b + "self_attn.o_proj.bias", {d});
    if (k.qk_norm) {
      B.q_norm = norm_weight(k, w, b + "self_attn.q_norm.weight", k.head_dim);
      B.k_norm = norm_weight(k, w, b + "self_attn.k_norm.weight", k.head_dim);
    }
    if (k.stacked) {
      B.w_gate = w.linear_rows(b + "mlp.gate_up_proj.weight", d, 2 * k.ffn, 0, k.ffn);
      B.w_up = w.linear_rows(b + "mlp.gate_up_proj.weight", d, 2 * k.ffn, k.ffn, k.ffn);
    } else {
      B.w_gate = w.linear(b + "mlp.gate_proj.weight", d, k.ffn);
      B.w_up = w.linear(b + "mlp.up_proj.weight", d, k.ffn);
    }
    B.w_down = w.linear(b + "mlp.down_proj.weight", k.ffn, d);
    if (k.mlp_bias) {
      B.b_gate = w.read(b + "mlp.gate_proj.bias", {k.ffn});
      B.b_up = w.read(b + "mlp.up_proj.bias", {k.ffn});
      B.b_down = w.read(b + "mlp.down_proj.bias", {d});
    }
    m.blocks.push_back(std::move(B));
  }
  return m;
}

// A float32 matrix packed for the GEMM (GPT-2's q, k and v, cut from c_attn as float32).
Weight packed(const Tensor& t) {
  return std::make_shared<kernels::PackedWeight>(
      kernels::MatrixSource{t.data.data(), kernels::Precision::f32, t.rows(), t.cols(), false});
}

// Columns [begin, begin + width) of a row-major [rows, cols] tensor (GPT-2's c_attn holds q, k, v side by side).
Tensor columns(const Tensor& t, std::int64_t begin, std::int64_t width) {
  if (t.rank() == 1) {
    Tensor out({width});
    std::copy(t.data.begin() + begin, t.data.begin() + begin + width, out.data.begin());
    return out;
  }
  Tensor out({t.rows(), width});
  out.head(0) = t.head(0).middleCols(begin, width);
  return out;
}

Weights read_gpt2_weights(const Config& k, const WeightStore& w) {
  Weights m;
  const std::string p = w.contains("transformer.wte.weight") ? "transformer." : "";
  const std::int64_t d = k.d_model;
  m.embed = w.matrix(p + "wte.weight", k.vocab, d, /*transposed=*/true);
  m.dtype = w.dtype(p + "wte.weight");
  m.position = w.read(p + "wpe.weight", {k.max_tokens, d});
  m.final_norm = w.read(p + "ln_f.weight", {d});
  m.final_norm_bias = w.read(p + "ln_f.bias", {d});
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::string b = p + "h." + std::to_string(l) + ".";
    Block B;
    B.attn_norm = w.read(b + "ln_1.weight", {d});
    B.attn_norm_bias = w.read(b + "ln_1.bias", {d});
    // Conv1D stores [in, out]: already the x·W layout.
    const Tensor qkv = w.read(b + "attn.c_attn.weight", {d, 3 * d}), qkv_b = w.read(b + "attn.c_attn.bias", {3 * d});
    B.wq = packed(columns(qkv, 0, d)), B.wk = packed(columns(qkv, d, d)), B.wv = packed(columns(qkv, 2 * d, d));
    B.bq = columns(qkv_b, 0, d), B.bk = columns(qkv_b, d, d), B.bv = columns(qkv_b, 2 * d, d);
    B.wo = w.matrix(b + "attn.c_proj.weight", d, d, /*transposed=*/false);
    B.bo = w.read(b + "attn.c_proj.bias", {d});
    B.ffn_norm = w.read(b + "ln_2.weight", {d});
    B.ffn_norm_bias = w.read(b + "ln_2.bias", {d});
    B.w_up = w.matrix(b + "mlp.c_fc.weight", d, k.ffn, /*transposed=*/false);
    B.b_up = w.read(b + "mlp.c_fc.bias", {k.ffn});
    B.w_down = w.matrix(b + "mlp.c_proj.weight", k.ffn, d, /*transposed=*/false);
    B.b_down = w.read(b + "mlp.c_proj.bias", {d});
    m.blocks.push_back(std::move(B));
  }
  return m;
}

}  // namespace

Weights read_weights(const Config& config, const WeightStore& store) {
  return config.learned_positions ? read_gpt2_weights(config, store) : read_llama_weights(config, store);
}

}  // namespace attnscope::decoder
