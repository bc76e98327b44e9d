// Reading a checkpoint's tensors, in its own names, into the canonical ModelWeights (spec.hpp: the front end's,
// each stack's, the heads'): one reader per naming family. The Llama family's (Llama, Mistral, Qwen, Gemma, and Phi-3,
// which stacks q, k, v in one tensor and gate, up in another), GPT-2's, BERT's and DistilBERT's (with or without a task
// model's prefix), and USE-lite's as web/models/convert-default.mjs writes them, and BART's (both stacks). The x·W
// layout throughout: Linear weights [out, in] are read transposed.
#include <cmath>

#include "attnscope/error.hpp"
#include "models/spec.hpp"
#include "models/weights.hpp"

namespace attnscope::transformer {

namespace {

// A norm's weight [d] as the forward pass multiplies by it: (1 + w) for Gemma's.
Tensor norm_weight(const Spec& s, const WeightStore& w, const std::string& name, std::int64_t width) {
  Tensor t = w.read(name, {width});
  if (s.checkpoint.norm_plus_one)
    for (float& x : t.data) x += 1.0f;
  return t;
}

// Where a text model's tensors live, and its LM head's: a causal LM's "model." (or a bare model's ""), or Gemma 3's
// image-text checkpoints' text model, in their older and newer layouts.
struct Layout {
  const char *prefix, *head;
};
constexpr Layout kCausalLm[] = {{"model.", "lm_head.weight"}, {"", "lm_head.weight"}};
constexpr Layout kImageText[] = {{"language_model.model.", "language_model.lm_head.weight"},
                                 {"model.language_model.", "lm_head.weight"}};

template <std::size_t N>
Layout layout_of(const WeightStore& w, const Layout (&layouts)[N]) {
  for (const Layout& l : layouts)
    if (w.contains(std::string(l.prefix) + "embed_tokens.weight")) return l;
  throw Error("loadModel: tensor " + quote(std::string(layouts[0].prefix) + "embed_tokens.weight") +
              " is missing from the model's weights");
}

ModelWeights read_llama_weights(const Spec& s, const WeightStore& w) {
  const Config& k = s.stacks[0];
  ModelWeights out;
  Weights& m = out.stacks.emplace_back();
  const Layout layout = s.checkpoint.image_text ? layout_of(w, kImageText) : layout_of(w, kCausalLm);
  const std::string p = layout.prefix;
  const std::int64_t d = k.d_model, q = k.heads * k.head_dim, kv = k.kv_heads * k.head_dim, vocab = s.tokens.vocab;
  out.tokens.embed = w.matrix(p + "embed_tokens.weight", vocab, d, /*transposed=*/true);
  out.dtype = w.dtype(p + "embed_tokens.weight");
  m.final_norm = norm_weight(s, w, p + "norm.weight", d);
  if (w.contains(layout.head))  // present even when tied (Qwen3-0.6B): transformers v5 then uses it
    out.head.lm_head = w.matrix(layout.head, vocab, d, /*transposed=*/true);
  else if (!s.head.tied)
    throw Error("loadModel: tensor \"lm_head.weight\" is missing, and config.json's tie_word_embeddings is false");
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::string b = p + "layers." + std::to_string(l) + ".";
    Block B;
    B.attn_norm = norm_weight(s, w, b + "input_layernorm.weight", d);
    if (k.placement == Placement::sandwich) {
      B.post_attn_norm = norm_weight(s, w, b + "post_attention_layernorm.weight", d);
      B.ffn_norm = norm_weight(s, w, b + "pre_feedforward_layernorm.weight", d);
      B.post_ffn_norm = norm_weight(s, w, b + "post_feedforward_layernorm.weight", d);
    } else {
      B.ffn_norm = norm_weight(s, w, b + "post_attention_layernorm.weight", d);
    }
    if (s.checkpoint.stacked) {
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
    if (s.checkpoint.qkv_bias) {
      B.bq = w.read(b + "self_attn.q_proj.bias", {q});
      B.bk = w.read(b + "self_attn.k_proj.bias", {kv});
      B.bv = w.read(b + "self_attn.v_proj.bias", {kv});
    }
    if (s.checkpoint.o_bias) B.bo = w.read(b + "self_attn.o_proj.bias", {d});
    if (k.qk_norm) {
      B.q_norm = norm_weight(s, w, b + "self_attn.q_norm.weight", k.head_dim);
      B.k_norm = norm_weight(s, w, b + "self_attn.k_norm.weight", k.head_dim);
    }
    if (s.checkpoint.stacked) {
      B.w_gate = w.linear_rows(b + "mlp.gate_up_proj.weight", d, 2 * k.ffn, 0, k.ffn);
      B.w_up = w.linear_rows(b + "mlp.gate_up_proj.weight", d, 2 * k.ffn, k.ffn, k.ffn);
    } else {
      B.w_gate = w.linear(b + "mlp.gate_proj.weight", d, k.ffn);
      B.w_up = w.linear(b + "mlp.up_proj.weight", d, k.ffn);
    }
    B.w_down = w.linear(b + "mlp.down_proj.weight", k.ffn, d);
    if (s.checkpoint.mlp_bias) {
      B.b_gate = w.read(b + "mlp.gate_proj.bias", {k.ffn});
      B.b_up = w.read(b + "mlp.up_proj.bias", {k.ffn});
      B.b_down = w.read(b + "mlp.down_proj.bias", {d});
    }
    m.blocks.push_back(std::move(B));
  }
  return out;
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

ModelWeights read_gpt2_weights(const Spec& s, const WeightStore& w) {
  const Config& k = s.stacks[0];
  ModelWeights out;
  Weights& m = out.stacks.emplace_back();
  const std::string p = w.contains("transformer.wte.weight") ? "transformer." : "";
  const std::int64_t d = k.d_model;
  out.tokens.embed = w.matrix(p + "wte.weight", s.tokens.vocab, d, /*transposed=*/true);
  out.dtype = w.dtype(p + "wte.weight");
  out.tokens.position = w.read(p + "wpe.weight", {k.max_tokens, d});
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
  return out;
}

// "bert." when the checkpoint comes from a task model (BertForMaskedLM, ...), else "".
std::string task_prefix(const WeightStore& w, const std::string& prefix) {
  return w.contains(prefix + "embeddings.word_embeddings.weight") ? prefix : "";
}

// The embeddings BERT and DistilBERT share: words, positions, a LayerNorm (old checkpoints name its parameters gamma
// and beta, as they do every LayerNorm's).
TokenWeights read_bert_embeddings(const Spec& s, const WeightStore& w, const std::string& p) {
  TokenWeights m;
  const std::int64_t d = s.tokens.width;
  m.embed = w.matrix(p + "embeddings.word_embeddings.weight", s.tokens.vocab, d, /*transposed=*/true);
  m.position = w.read(p + "embeddings.position_embeddings.weight", {s.tokens.max_tokens, d});
  // Every token is of type 0 (one segment): its embedding is a constant, added to each position's.
  if (w.contains(p + "embeddings.token_type_embeddings.weight")) {
    const Tensor types = w.read(p + "embeddings.token_type_embeddings.weight", {-1, d});
    if (types.rows() < 1) throw Error("loadModel: embeddings.token_type_embeddings.weight has no rows");
    m.position.head(0).rowwise() += types.head(0).row(0);
  }
  return m;
}

void read_layer_norm(const WeightStore& w, const std::string& base, std::int64_t d, Tensor& g, Tensor& b) {
  const bool old = !w.contains(base + ".weight") && w.contains(base + ".gamma");
  g = w.read(base + (old ? ".gamma" : ".weight"), {d});
  b = w.read(base + (old ? ".beta" : ".bias"), {d});
}

// A Linear's weight and bias, [out, in] and [out], as the GEMM's B [in, out] and a bias.
void read_linear(const WeightStore& w, const std::string& base, std::int64_t in, std::int64_t out, Weight& W,
                 Tensor& b) {
  W = w.linear(base + ".weight", in, out);
  b = w.read(base + ".bias", {out});
}

// What BERT and DistilBERT call the same tensors: their blocks differ only in names.
struct BertNames {
  const char* prefix;  // a task model's ("bert.", "distilbert."), when the checkpoint has it
  const char* layer;   // "encoder.layer.", "transformer.layer."
  const char *q, *k, *v, *o, *attn_norm, *up, *down, *ffn_norm;
};
const BertNames kBert{"bert.",
                      "encoder.layer.",
                      "attention.self.query",
                      "attention.self.key",
                      "attention.self.value",
                      "attention.output.dense",
                      "attention.output.LayerNorm",
                      "intermediate.dense",
                      "output.dense",
                      "output.LayerNorm"};
const BertNames kDistilBert{"distilbert.",     "transformer.layer.", "attention.q_lin", "attention.k_lin",
                            "attention.v_lin", "attention.out_lin",  "sa_layer_norm",   "ffn.lin1",
                            "ffn.lin2",        "output_layer_norm"};

// BERT and DistilBERT: post-LN blocks, the embeddings' LayerNorm, and BERT's pooler where the checkpoint has one.
ModelWeights read_bert_family(const Spec& s, const WeightStore& w, const BertNames& names) {
  const Config& k = s.stacks[0];
  const std::string p = task_prefix(w, names.prefix);
  const std::int64_t d = k.d_model;
  ModelWeights out;
  out.tokens = read_bert_embeddings(s, w, p);
  out.dtype = w.dtype(p + "embeddings.word_embeddings.weight");
  read_layer_norm(w, p + "embeddings.LayerNorm", d, out.tokens.norm, out.tokens.norm_bias);
  Weights& m = out.stacks.emplace_back();
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::string b = p + names.layer + std::to_string(l) + ".";
    Block B;
    read_linear(w, b + names.q, d, d, B.wq, B.bq);
    read_linear(w, b + names.k, d, d, B.wk, B.bk);
    read_linear(w, b + names.v, d, d, B.wv, B.bv);
    read_linear(w, b + names.o, d, d, B.wo, B.bo);
    read_layer_norm(w, b + names.attn_norm, d, B.attn_norm, B.attn_norm_bias);
    read_linear(w, b + names.up, d, k.ffn, B.w_up, B.b_up);
    read_linear(w, b + names.down, k.ffn, d, B.w_down, B.b_down);
    read_layer_norm(w, b + names.ffn_norm, d, B.ffn_norm, B.ffn_norm_bias);
    m.blocks.push_back(std::move(B));
  }
  if (s.head.pooler != Pooler::none && w.contains(p + "pooler.dense.weight"))
    read_linear(w, p + "pooler.dense", d, d, out.head.pool, out.head.pool_bias);
  return out;
}

// USE-lite in the names web/models/convert-default.mjs writes, every matrix already [in, out].
ModelWeights read_use_lite_weights(const Spec& s, const WeightStore& w) {
  const Config& k = s.stacks[0];
  ModelWeights out;
  Weights& m = out.stacks.emplace_back();
  const std::int64_t hidden = k.d_model;
  out.tokens.embed = w.matrix("embeddings.word", s.tokens.vocab, k.width_of(0), /*transposed=*/true);
  out.dtype = w.dtype("embeddings.word");
  out.tokens.inv_timescales = w.read("embeddings.inv_timescales", {k.width_of(0) / 2});
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::string b = "layers." + std::to_string(l) + ".";
    const std::int64_t width = k.width_of(l);
    Block B;
    B.attn_norm = w.read(b + "attention.norm.scale", {width});
    B.attn_norm_bias = w.read(b + "attention.norm.bias", {width});
    const Tensor qkv = w.read(b + "attention.qkv.weight", {width, 3 * width});
    const Tensor qkv_b = w.read(b + "attention.qkv.bias", {3 * width});
    B.wq = packed(columns(qkv, 0, width)), B.wk = packed(columns(qkv, width, width));
    B.wv = packed(columns(qkv, 2 * width, width));
    B.bq = columns(qkv_b, 0, width), B.bk = columns(qkv_b, width, width), B.bv = columns(qkv_b, 2 * width, width);
    B.wo = w.matrix(b + "attention.output.weight", width, hidden, /*transposed=*/false);
    B.bo = w.read(b + "attention.output.bias", {hidden});
    if (width != hidden) {
      B.w_residual = w.matrix(b + "residual.weight", width, hidden, /*transposed=*/false);
      B.b_residual = w.read(b + "residual.bias", {hidden});
    }
    B.ffn_norm = w.read(b + "ffn.norm.scale", {hidden});
    B.ffn_norm_bias = w.read(b + "ffn.norm.bias", {hidden});
    B.w_up = w.matrix(b + "ffn.up.weight", hidden, k.ffn, /*transposed=*/false);
    B.b_up = w.read(b + "ffn.up.bias", {k.ffn});
    B.w_down = w.matrix(b + "ffn.down.weight", k.ffn, hidden, /*transposed=*/false);
    B.b_down = w.read(b + "ffn.down.bias", {hidden});
    m.blocks.push_back(std::move(B));
  }
  out.head.pool = w.matrix("pooler.weight", hidden, hidden, /*transposed=*/false);
  out.head.pool_bias = w.read("pooler.bias", {hidden});
  return out;
}

// BART's q, k, v and out projections of one attention (self_attn, encoder_attn).
void read_bart_attention(const WeightStore& w, const std::string& base, std::int64_t d, std::int64_t width, Weight& q,
                         Weight& k, Weight& v, Weight& o, Tensor& bq, Tensor& bk, Tensor& bv, Tensor& bo) {
  read_linear(w, base + ".q_proj", d, width, q, bq);
  read_linear(w, base + ".k_proj", d, width, k, bk);
  read_linear(w, base + ".v_proj", d, width, v, bv);
  read_linear(w, base + ".out_proj", width, d, o, bo);
}

// Marian's static positions as transformers makes them: row p holds sin(p · f_i) in its first half and cos(p · f_i)
// in its second, f_i = 10000^(-2i/d), computed in double and stored in float32.
Tensor sinusoids(std::int64_t n, std::int64_t d) {
  Tensor t({n, d});
  const std::int64_t half = (d + 1) / 2;
  for (std::int64_t p = 0; p < n; ++p)
    for (std::int64_t j = 0; j < d; ++j) {
      const std::int64_t i = j < half ? j : j - half;  // the pair (2i, 2i + 1) of transformers' interleaved angles
      const double angle =
          static_cast<double>(p) / std::pow(10000.0, static_cast<double>(2 * i) / static_cast<double>(d));
      t.data[static_cast<std::size_t>(p * d + j)] = static_cast<float>(j < half ? std::sin(angle) : std::cos(angle));
    }
  return t;
}

// One stack of BART or Marian ("encoder" or "decoder") and its token front end, whose embedding is the shared one.
Weights read_bart_stack(const Spec& s, const Config& k, const WeightStore& w, const std::string& p,
                        TokenWeights& tokens) {
  Weights m;
  const std::int64_t d = k.d_model, width = k.heads * k.head_dim;
  if (s.family == Family::marian) {
    // Marian's checkpoints leave the table out (transformers computes it); where one holds it, it is used.
    tokens.position = w.contains(p + ".embed_positions.weight")
                          ? w.read(p + ".embed_positions.weight", {k.max_tokens, d})
                          : sinusoids(k.max_tokens, d);
  } else {
    // Position p is row p + 2 of the table (fairseq's offset, kept by transformers): the first two rows are never
    // read.
    const Tensor table = w.read(p + ".embed_positions.weight", {k.max_tokens + 2, d});
    tokens.position = Tensor({k.max_tokens, d});
    std::copy(table.data.begin() + 2 * d, table.data.end(), tokens.position.data.begin());
    read_layer_norm(w, p + ".layernorm_embedding", d, tokens.norm, tokens.norm_bias);
  }
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::string b = p + ".layers." + std::to_string(l) + ".";
    Block B;
    read_bart_attention(w, b + "self_attn", d, width, B.wq, B.wk, B.wv, B.wo, B.bq, B.bk, B.bv, B.bo);
    read_layer_norm(w, b + "self_attn_layer_norm", d, B.attn_norm, B.attn_norm_bias);
    if (k.cross_attention) {
      read_bart_attention(w, b + "encoder_attn", d, width, B.wcq, B.wck, B.wcv, B.wco, B.bcq, B.bck, B.bcv, B.bco);
      read_layer_norm(w, b + "encoder_attn_layer_norm", d, B.cross_norm, B.cross_norm_bias);
    }
    read_linear(w, b + "fc1", d, k.ffn, B.w_up, B.b_up);
    read_linear(w, b + "fc2", k.ffn, d, B.w_down, B.b_down);
    read_layer_norm(w, b + "final_layer_norm", d, B.ffn_norm, B.ffn_norm_bias);
    m.blocks.push_back(std::move(B));
  }
  return m;
}

// BART: "model." before every name in BartForConditionalGeneration's checkpoints, none in BartModel's. The shared
// embedding is model.shared (or, where a checkpoint kept only the tied copies, encoder.embed_tokens); the LM head is
// tied to it, and final_logits_bias (zeros when absent, as transformers starts it) is added to the logits.
ModelWeights read_bart_weights(const Spec& s, const WeightStore& w) {
  const std::string p =
      w.contains("model.shared.weight") || w.contains("model.encoder.embed_tokens.weight") ? "model." : "";
  const std::string shared = w.contains(p + "shared.weight") ? p + "shared.weight" : p + "encoder.embed_tokens.weight";
  const std::int64_t vocab = s.tokens.vocab;
  ModelWeights out;
  out.tokens.embed = out.target_tokens.embed = w.matrix(shared, vocab, s.tokens.width, /*transposed=*/true);
  out.stacks.push_back(read_bart_stack(s, s.stacks[0], w, p + "encoder", out.tokens));
  out.stacks.push_back(read_bart_stack(s, s.stacks[1], w, p + "decoder", out.target_tokens));
  out.dtype = w.dtype(shared);
  if (s.head.language_model && w.contains("final_logits_bias")) {
    out.head.logits_bias = w.read("final_logits_bias", {1, vocab});
    out.head.logits_bias.shape = {vocab};
  }
  return out;
}

// One stack of T5 ("encoder" or "decoder"): blocks of sublayers layer.0 (self-attention), layer.1 (cross-attention,
// the decoder's) and the FFN after them, each with the RMS norm before it; block 0's relative_attention_bias serves
// the stack's every layer.
Weights read_t5_stack(const Config& k, const WeightStore& w, const std::string& p) {
  Weights m;
  const std::int64_t d = k.d_model, width = k.heads * k.head_dim;
  m.relative_bias =
      w.read(p + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight", {k.relative_buckets, k.heads});
  m.final_norm = w.read(p + ".final_layer_norm.weight", {d});
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::string b = p + ".block." + std::to_string(l) + ".layer.";
    Block B;
    B.attn_norm = w.read(b + "0.layer_norm.weight", {d});
    B.wq = w.linear(b + "0.SelfAttention.q.weight", d, width);
    B.wk = w.linear(b + "0.SelfAttention.k.weight", d, width);
    B.wv = w.linear(b + "0.SelfAttention.v.weight", d, width);
    B.wo = w.linear(b + "0.SelfAttention.o.weight", width, d);
    const std::string ffn = b + (k.cross_attention ? "2." : "1.");
    if (k.cross_attention) {
      B.cross_norm = w.read(b + "1.layer_norm.weight", {d});
      B.wcq = w.linear(b + "1.EncDecAttention.q.weight", d, width);
      B.wck = w.linear(b + "1.EncDecAttention.k.weight", d, width);
      B.wcv = w.linear(b + "1.EncDecAttention.v.weight", d, width);
      B.wco = w.linear(b + "1.EncDecAttention.o.weight", width, d);
    }
    B.ffn_norm = w.read(ffn + "layer_norm.weight", {d});
    if (k.gated) {
      B.w_gate = w.linear(ffn + "DenseReluDense.wi_0.weight", d, k.ffn);
      B.w_up = w.linear(ffn + "DenseReluDense.wi_1.weight", d, k.ffn);
    } else {
      B.w_up = w.linear(ffn + "DenseReluDense.wi.weight", d, k.ffn);
    }
    B.w_down = w.linear(ffn + "DenseReluDense.wo.weight", k.ffn, d);
    m.blocks.push_back(std::move(B));
  }
  return m;
}

// T5: the shared embedding (or its tied copy), both stacks, and lm_head where the head is not tied.
ModelWeights read_t5_weights(const Spec& s, const WeightStore& w) {
  const std::string shared = w.contains("shared.weight") ? "shared.weight" : "encoder.embed_tokens.weight";
  const std::int64_t vocab = s.tokens.vocab, d = s.tokens.width;
  ModelWeights out;
  out.tokens.embed = out.target_tokens.embed = w.matrix(shared, vocab, d, /*transposed=*/true);
  out.stacks.push_back(read_t5_stack(s.stacks[0], w, "encoder"));
  out.stacks.push_back(read_t5_stack(s.stacks[1], w, "decoder"));
  out.dtype = w.dtype(shared);
  if (!s.head.tied) out.head.lm_head = w.matrix("lm_head.weight", vocab, d, /*transposed=*/true);
  return out;
}

// A patch embedding's Conv2d weight [d, channels, patch, patch] as the GEMM's B [channels · patch², d]: a patch's
// values flattened in the same (channel, row, column) order multiply it.
Weight patch_weight(const Spec& s, const WeightStore& w, const std::string& name) {
  const std::int64_t d = s.stacks[0].d_model, c = s.vision.channels, p = s.vision.patch;
  const Tensor conv = w.read(name, {d, c, p, p});
  Tensor t({c * p * p, d});
  t.head(0) = ConstMatrixMap(conv.data.data(), d, c * p * p).transpose();
  return packed(t);
}

// A [1, n, d] token or table (or CLIP's [d], [n, d]) as [n, d].
Tensor rows_of(const WeightStore& w, const std::string& name, std::int64_t n, std::int64_t d, bool batched) {
  Tensor t = w.read(name, batched ? Shape{1, n, d} : n == 1 ? Shape{d} : Shape{n, d});
  t.shape = {n, d};
  return t;
}

// What ViT, DeiT and DINOv2 call their blocks' tensors; CLIP's are BART's.
struct VisionNames {
  const char *q, *k, *v, *o, *attn_norm, *ffn_norm, *up, *down;
};
const VisionNames kViT{
    "attention.attention.query", "attention.attention.key", "attention.attention.value", "attention.output.dense",
    "layernorm_before",          "layernorm_after",         "intermediate.dense",        "output.dense"};
const VisionNames kDinov2{"attention.attention.query",
                          "attention.attention.key",
                          "attention.attention.value",
                          "attention.output.dense",
                          "norm1",
                          "norm2",
                          "mlp.fc1",
                          "mlp.fc2"};
const VisionNames kClip{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
                        "layer_norm1",      "layer_norm2",      "mlp.fc1",          "mlp.fc2"};

// A Linear's weight and its bias when the checkpoint has one (ViT's qkv_bias false leaves q, k, v without).
void read_linear_maybe_biased(const WeightStore& w, const std::string& base, std::int64_t in, std::int64_t out,
                              bool bias, Weight& W, Tensor& b) {
  W = w.linear(base + ".weight", in, out);
  if (bias) b = w.read(base + ".bias", {out});
}

// ViT and DeiT ("vit." / "deit." before a task model's names), DINOv2 and CLIP's vision tower ("vision_model."):
// the patch embedding, the prefix tokens, registers and position table, pre-LN blocks (with DINOv2's layer scale),
// the final LayerNorm (CLIP's post_layernorm is the pooler's), and the pooler, projection and classifiers their task
// models add.
ModelWeights read_vision_weights(const Spec& s, const WeightStore& w) {
  const Config& k = s.stacks[0];
  const VisionConfig& v = s.vision;
  const std::int64_t d = k.d_model;
  const std::int64_t table = k.max_tokens - v.registers;  // prefix + the trained grid's patches
  ModelWeights out;
  PatchWeights& f = out.patches;
  HeadWeights& h = out.head;
  Weights& m = out.stacks.emplace_back();
  std::string p;
  const VisionNames* names = &kViT;
  if (s.family == Family::clip) {
    p = "vision_model.";
    names = &kClip;
    f.patch = patch_weight(s, w, p + "embeddings.patch_embedding.weight");
    out.dtype = w.dtype(p + "embeddings.patch_embedding.weight");
    f.prefix = rows_of(w, p + "embeddings.class_embedding", 1, d, false);
    f.position = rows_of(w, p + "embeddings.position_embedding.weight", table, d, false);
    read_layer_norm(w, p + "pre_layrnorm", d, f.norm, f.norm_bias);
    read_layer_norm(w, p + "post_layernorm", d, h.pool_norm, h.pool_norm_bias);
    if (s.head.projection) h.projection = w.linear("visual_projection.weight", d, s.head.projection);
  } else {
    for (const char* task : {"vit.", "deit.", "dinov2."})
      if (w.contains(std::string(task) + "embeddings.cls_token")) p = task;
    if (s.family == Family::dinov2) names = &kDinov2;
    const std::string e = p + "embeddings.";
    f.patch = patch_weight(s, w, e + "patch_embeddings.projection.weight");
    f.patch_bias = w.read(e + "patch_embeddings.projection.bias", {d});
    out.dtype = w.dtype(e + "patch_embeddings.projection.weight");
    f.prefix = rows_of(w, e + "cls_token", 1, d, true);
    if (v.prefix == 2) {  // DeiT: [CLS] then the distillation token
      const Tensor distillation = rows_of(w, e + "distillation_token", 1, d, true);
      f.prefix.data.append(distillation.data.begin(), distillation.data.end());
      f.prefix.shape = {2, d};
    }
    if (v.registers) f.registers = rows_of(w, e + "register_tokens", v.registers, d, true);
    f.position = rows_of(w, e + "position_embeddings", table, d, true);
    read_layer_norm(w, p + "layernorm", d, m.final_norm, m.final_norm_bias);
  }
  const std::string layers = p + (s.family == Family::clip ? "encoder.layers." : "encoder.layer.");
  for (std::int64_t l = 0; l < k.layers; ++l) {
    const std::string b = layers + std::to_string(l) + ".";
    Block B;
    read_layer_norm(w, b + names->attn_norm, d, B.attn_norm, B.attn_norm_bias);
    read_linear_maybe_biased(w, b + names->q, d, d, s.checkpoint.qkv_bias, B.wq, B.bq);
    read_linear_maybe_biased(w, b + names->k, d, d, s.checkpoint.qkv_bias, B.wk, B.bk);
    read_linear_maybe_biased(w, b + names->v, d, d, s.checkpoint.qkv_bias, B.wv, B.bv);
    read_linear(w, b + names->o, d, d, B.wo, B.bo);
    read_layer_norm(w, b + names->ffn_norm, d, B.ffn_norm, B.ffn_norm_bias);
    read_linear(w, b + names->up, d, k.ffn, B.w_up, B.b_up);
    read_linear(w, b + names->down, k.ffn, d, B.w_down, B.b_down);
    if (k.layer_scale) {
      B.attn_scale = w.read(b + "layer_scale1.lambda1", {d});
      B.ffn_scale = w.read(b + "layer_scale2.lambda1", {d});
    }
    m.blocks.push_back(std::move(B));
  }
  if (s.head.pooler == Pooler::first_tanh && w.contains(p + "pooler.dense.weight"))
    read_linear(w, p + "pooler.dense", d, d, h.pool, h.pool_bias);
  const std::int64_t labels = static_cast<std::int64_t>(s.head.labels.size());
  if (s.head.classifier == Classifier::cls) read_linear(w, "classifier", d, labels, h.classifier, h.classifier_bias);
  if (s.head.classifier == Classifier::cls_distillation) {
    read_linear(w, "cls_classifier", d, labels, h.classifier, h.classifier_bias);
    read_linear(w, "distillation_classifier", d, labels, h.distillation_classifier, h.distillation_classifier_bias);
  }
  return out;
}

// A Conv1d's weight [out, in, 3] as the GEMM's B [in · 3, out]: a frame's window of the input in (channel, tap) order.
Weight conv_weight(const WeightStore& w, const std::string& name, std::int64_t in, std::int64_t out) {
  const Tensor conv = w.read(name, {out, in, 3});
  Tensor t({in * 3, out});
  t.head(0) = ConstMatrixMap(conv.data.data(), out, in * 3).transpose();
  return packed(t);
}

// Whisper's q, v and out projections with their biases, and k_proj with none (WhisperAttention's k_proj has bias=False;
// a checkpoint that holds one anyway has it read).
void read_whisper_attention(const WeightStore& w, const std::string& base, std::int64_t d, Weight& q, Weight& k,
                            Weight& v, Weight& o, Tensor& bq, Tensor& bk, Tensor& bv, Tensor& bo) {
  read_linear(w, base + ".q_proj", d, d, q, bq);
  read_linear_maybe_biased(w, base + ".k_proj", d, d, w.contains(base + ".k_proj.bias"), k, bk);
  read_linear(w, base + ".v_proj", d, d, v, bv);
  read_linear(w, base + ".out_proj", d, d, o, bo);
}

// WhisperForConditionalGeneration: "model." before the encoder's and decoder's names; the encoder's two convolutions
// and its position table, pre-LN blocks (BART's names), each stack's final layer_norm, and proj_out, which
// checkpoints leave out as the tie to the decoder's embedding (read when one holds it).
ModelWeights read_whisper_weights(const Spec& s, const WeightStore& w) {
  const std::int64_t d = s.stacks[0].d_model, mels = s.audio.mel_bins, vocab = s.target_tokens.vocab;
  ModelWeights out;
  AudioWeights& a = out.audio;
  a.conv1 = conv_weight(w, "model.encoder.conv1.weight", mels, d);
  a.conv1_bias = w.read("model.encoder.conv1.bias", {d});
  a.conv2 = conv_weight(w, "model.encoder.conv2.weight", d, d);
  a.conv2_bias = w.read("model.encoder.conv2.bias", {d});
  a.position = w.read("model.encoder.embed_positions.weight", {s.audio.positions, d});
  out.dtype = w.dtype("model.encoder.conv1.weight");
  out.target_tokens.embed = w.matrix("model.decoder.embed_tokens.weight", vocab, d, /*transposed=*/true);
  out.target_tokens.position = w.read("model.decoder.embed_positions.weight", {s.stacks[1].max_tokens, d});
  for (std::size_t stack = 0; stack < 2; ++stack) {
    const Config& k = s.stacks[stack];
    const std::string p = stack ? "model.decoder" : "model.encoder";
    Weights& m = out.stacks.emplace_back();
    for (std::int64_t l = 0; l < k.layers; ++l) {
      const std::string b = p + ".layers." + std::to_string(l) + ".";
      Block B;
      read_whisper_attention(w, b + "self_attn", d, B.wq, B.wk, B.wv, B.wo, B.bq, B.bk, B.bv, B.bo);
      read_layer_norm(w, b + "self_attn_layer_norm", d, B.attn_norm, B.attn_norm_bias);
      if (k.cross_attention) {
        read_whisper_attention(w, b + "encoder_attn", d, B.wcq, B.wck, B.wcv, B.wco, B.bcq, B.bck, B.bcv, B.bco);
        read_layer_norm(w, b + "encoder_attn_layer_norm", d, B.cross_norm, B.cross_norm_bias);
      }
      read_linear(w, b + "fc1", d, k.ffn, B.w_up, B.b_up);
      read_linear(w, b + "fc2", k.ffn, d, B.w_down, B.b_down);
      read_layer_norm(w, b + "final_layer_norm", d, B.ffn_norm, B.ffn_norm_bias);
      m.blocks.push_back(std::move(B));
    }
    read_layer_norm(w, p + ".layer_norm", d, m.final_norm, m.final_norm_bias);
  }
  if (w.contains("proj_out.weight")) out.head.lm_head = w.linear("proj_out.weight", d, vocab);
  return out;
}

}  // namespace

ModelWeights read_weights(const Spec& spec, const WeightStore& store) {
  switch (spec.family) {
    case Family::gpt2:
      return read_gpt2_weights(spec, store);
    case Family::bert:
      return read_bert_family(spec, store, kBert);
    case Family::distilbert:
      return read_bert_family(spec, store, kDistilBert);
    case Family::use_lite:
      return read_use_lite_weights(spec, store);
    case Family::bart:
    case Family::marian:
      return read_bart_weights(spec, store);
    case Family::t5:
      return read_t5_weights(spec, store);
    case Family::whisper:
      return read_whisper_weights(spec, store);
    case Family::vit:
    case Family::dinov2:
    case Family::clip:
      return read_vision_weights(spec, store);
    case Family::llama:
    case Family::phi3:
      break;
  }
  return read_llama_weights(spec, store);
}

}  // namespace attnscope::transformer
