// BERT and DistilBERT: post-LayerNorm encoders. (Decoders, GPT-2 among them, are decoder.hpp's.)
//
//   x = LN(word[ids] + position[0..n) (+ token_type[0]))
//   per layer:  x = LN1(x + MHA(x));     x = LN2(x + FFN(x))
//   FFN(x) = act(x·W1 + b1)·W2 + b2, act = GELU (exact or tanh) or ReLU
//
// Each loader reads the Hugging Face Hub's own tensor names, with or without the
// task model's prefix ("bert.", "distilbert.").
#include "models/encoder.hpp"

#include <algorithm>
#include <cmath>

#include "attnscope/error.hpp"
#include "kernels/gemm.hpp"
#include "models/config.hpp"
#include "models/layers.hpp"
#include "models/weights.hpp"

namespace attnscope {

namespace {

enum class Activation { gelu, gelu_tanh, relu };

Activation activation_of(const std::string& name) {
  if (name == "gelu") return Activation::gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::gelu_tanh;
  if (name == "relu") return Activation::relu;
  throw Error("config.json: activation " + quote(name) + " is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

std::string string_field(const Json& config, const char* key, const std::string& fallback) {
  const Json* v = config.find(key);
  return v && v->is_string() ? v->string() : fallback;
}

struct Block {
  Tensor ln1_g, ln1_b, wq, wk, wv, bq, bk, bv, wo, bo, ln2_g, ln2_b, w1, b1, w2, b2;
};

struct Spec {
  std::string architecture;
  Activation act = Activation::gelu;
  float eps = 1e-12f;
  std::int64_t layers = 0, heads = 0, d_model = 0, ffn = 0, vocab = 0, positions = 0;
};

class Encoder final : public Model {
 public:
  Encoder(Spec spec, std::unique_ptr<Tokenizer> tokenizer) : spec_(std::move(spec)) {
    tokenizer_ = std::move(tokenizer);
    info_.name = info_.architecture = spec_.architecture;
    info_.layers = spec_.layers;
    info_.heads = spec_.heads;
    info_.d_model = spec_.d_model;
    info_.max_tokens = spec_.positions;
    info_.vocab_size = spec_.vocab;
  }

  void set_name(const std::string& name) { info_.name = name; }
  void set_dtype(const std::string& dtype) { info_.weights_dtype = dtype; }

  MultiHeadParams attention_weights(std::int64_t layer) const override {
    const Block& b = blocks.at(static_cast<std::size_t>(layer));
    return {b.wq.view(), b.wk.view(), b.wv.view(), b.wo.view(), b.bq.view(), b.bk.view(), b.bv.view(), b.bo.view()};
  }

  Spec spec_;
  Tensor word, position, token_type, emb_ln_g, emb_ln_b, pool_w, pool_b;
  std::vector<Block> blocks;

 protected:
  void forward(const Runtime& rt, ModelRun& r, const RunOptions& o) const override {
    const std::int64_t n = static_cast<std::int64_t>(r.ids.size()), d = spec_.d_model;
    Matrix x(n, d);
    for (std::int64_t i = 0; i < n; ++i) {
      x.row(i) = word.head(0).row(r.ids[i]) + position.head(0).row(i);
      if (!token_type.empty()) x.row(i) += token_type.head(0).row(0);
    }
    x = layers::layer_norm(x, emb_ln_g, emb_ln_b, spec_.eps);
    r.attentions = Tensor::unfilled({spec_.layers, spec_.heads, n, n});  // each layer's kernels write its maps
    MultiHeadOptions mo;
    mo.heads = spec_.heads;
    mo.return_projections = o.return_projections;
    const std::vector<std::uint8_t> padding = padding_mask(o, static_cast<std::size_t>(n));
    if (!padding.empty()) mo.mask = Mask::keep_mask(padding.data(), {n, n});
    for (std::size_t l = 0; l < blocks.size(); ++l) {
      const Block& b = blocks[l];
      const MultiHeadParams p{b.wq.view(), b.wk.view(), b.wv.view(), b.wo.view(),
                              b.bq.view(), b.bk.view(), b.bv.view(), b.bo.view()};
      if (o.return_projections) r.inputs.push_back(layers::to_tensor(x));
      mo.weights_out = r.attentions.data.data() + static_cast<std::int64_t>(l) * spec_.heads * n * n;
      MultiHeadResult a = attend(rt, x, p, mo, o, l);
      x = layers::layer_norm(x + a.output.head(0), b.ln1_g, b.ln1_b, spec_.eps);
      x = layers::layer_norm(x + ffn(rt, b, x), b.ln2_g, b.ln2_b, spec_.eps);
      keep(r, std::move(a), o);
    }
    r.hidden = layers::to_tensor(x);
    if (!pool_w.empty()) {  // BERT's pooler: tanh(x[CLS]·W + b)
      const Matrix first = x.topRows(1);
      const Matrix e = rt.linear(first, pool_w.view(), pool_b.view()).array().tanh().matrix();
      r.embedding = Tensor({d});
      std::copy(e.data(), e.data() + d, r.embedding.data.begin());
    }
  }

 private:
  // Multi-head attention; with heads to ablate in this layer, their outputs are zeroed before W_O.
  static MultiHeadResult attend(const Runtime& rt, const Matrix& x, MultiHeadParams p, const MultiHeadOptions& mo,
                                const RunOptions& o, std::size_t layer) {
    const bool ablating = std::any_of(o.ablate_heads.begin(), o.ablate_heads.end(),
                                      [&](const auto& lh) { return lh.first == static_cast<std::int64_t>(layer); });
    if (!ablating) return rt.multi_head_attention(x, p, mo);
    const TensorView wo = p.wo, bo = p.bo;
    p.wo = p.bo = TensorView();
    MultiHeadResult a = rt.multi_head_attention(x, p, mo);
    ablate_heads(o, static_cast<std::int64_t>(layer), mo.heads, a.output);
    a.output = layers::to_tensor(rt.linear(a.output.view(), wo, bo));
    return a;
  }

  Matrix ffn(const Runtime& rt, const Block& b, const Matrix& x) const {
    Matrix h = rt.linear(x, b.w1.view(), b.b1.view());
    rt.parallel_rows(h.rows(), [&](std::int64_t begin, std::int64_t end) {
      Eigen::Ref<Matrix> rows = h.middleRows(begin, end - begin);
      switch (spec_.act) {
        case Activation::gelu:
          layers::gelu(rows);
          break;
        case Activation::gelu_tanh:
          layers::gelu_tanh(rows);
          break;
        case Activation::relu:
          layers::relu(rows);
          break;
      }
    });
    return rt.linear(h, b.w2.view(), b.b2.view());
  }

  static void keep(ModelRun& r, MultiHeadResult&& a, const RunOptions& o) {
    if (o.return_projections) {
      r.q.push_back(std::move(a.q));
      r.k.push_back(std::move(a.k));
      r.v.push_back(std::move(a.v));
    }
  }
};

// "bert." when the checkpoint comes from a task model (BertForMaskedLM, ...), else "".
std::string prefix_of(const WeightStore& w, const std::string& prefix, const std::string& probe) {
  return w.contains(prefix + probe) ? prefix : "";
}

void check_heads(const Spec& s) {
  if (s.d_model % s.heads)
    throw Error("config.json: the number of heads (" + std::to_string(s.heads) + ") does not divide the width " +
                std::to_string(s.d_model));
}

// The matrices every run multiplies by: packed for the GEMM once, on first use, and
// not checked again on every call (the weight reader checked them).
void prepare_weights(Encoder& m) {
  for (auto& b : m.blocks)
    for (Tensor* t : {&b.wq, &b.wk, &b.wv, &b.wo, &b.w1, &b.w2}) kernels::prepare_weight(*t);
  kernels::prepare_weight(m.pool_w);
}

std::unique_ptr<Model> load_bert(const Json& c, const WeightStore& w, std::unique_ptr<Tokenizer> tok) {
  Spec s{"BertModel",
         activation_of(string_field(c, "hidden_act", "gelu")),
         static_cast<float>(c.find("layer_norm_eps") ? config_number(c, "layer_norm_eps", 0, 1) : 1e-12),
         config_int(c, "num_hidden_layers", 1, 256),
         config_int(c, "num_attention_heads", 1, 1024),
         config_int(c, "hidden_size", 1, 65536),
         config_int(c, "intermediate_size", 1, 262144),
         config_int(c, "vocab_size", 1, 1'000'000),
         config_int(c, "max_position_embeddings", 1, 1'000'000)};
  check_heads(s);
  const std::string pe = string_field(c, "position_embedding_type", "absolute");
  if (pe != "absolute")
    throw Error("config.json: position_embedding_type " + quote(pe) + " is not supported (absolute)");
  auto m = std::make_unique<Encoder>(s, std::move(tok));
  const std::string p = prefix_of(w, "bert.", "embeddings.word_embeddings.weight");
  const std::int64_t d = s.d_model;
  m->word = w.read(p + "embeddings.word_embeddings.weight", {s.vocab, d});
  m->set_dtype(w.dtype(p + "embeddings.word_embeddings.weight"));
  m->position = w.read(p + "embeddings.position_embeddings.weight", {s.positions, d});
  m->token_type = w.read(p + "embeddings.token_type_embeddings.weight", {-1, d});
  // Old checkpoints name LayerNorm parameters gamma and beta.
  const auto ln = [&](const std::string& base, Tensor& g, Tensor& b) {
    const bool old = !w.contains(base + ".weight") && w.contains(base + ".gamma");
    g = w.read(base + (old ? ".gamma" : ".weight"), {d});
    b = w.read(base + (old ? ".beta" : ".bias"), {d});
  };
  ln(p + "embeddings.LayerNorm", m->emb_ln_g, m->emb_ln_b);
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const std::string q = p + "encoder.layer." + std::to_string(l) + ".";
    Block b;
    b.wq = w.read_linear(q + "attention.self.query.weight", d, d);
    b.bq = w.read(q + "attention.self.query.bias", {d});
    b.wk = w.read_linear(q + "attention.self.key.weight", d, d);
    b.bk = w.read(q + "attention.self.key.bias", {d});
    b.wv = w.read_linear(q + "attention.self.value.weight", d, d);
    b.bv = w.read(q + "attention.self.value.bias", {d});
    b.wo = w.read_linear(q + "attention.output.dense.weight", d, d);
    b.bo = w.read(q + "attention.output.dense.bias", {d});
    ln(q + "attention.output.LayerNorm", b.ln1_g, b.ln1_b);
    b.w1 = w.read_linear(q + "intermediate.dense.weight", d, s.ffn);
    b.b1 = w.read(q + "intermediate.dense.bias", {s.ffn});
    b.w2 = w.read_linear(q + "output.dense.weight", s.ffn, d);
    b.b2 = w.read(q + "output.dense.bias", {d});
    ln(q + "output.LayerNorm", b.ln2_g, b.ln2_b);
    m->blocks.push_back(std::move(b));
  }
  if (w.contains(p + "pooler.dense.weight")) {
    m->pool_w = w.read_linear(p + "pooler.dense.weight", d, d);
    m->pool_b = w.read(p + "pooler.dense.bias", {d});
  }
  prepare_weights(*m);
  return m;
}

std::unique_ptr<Model> load_distilbert(const Json& c, const WeightStore& w, std::unique_ptr<Tokenizer> tok) {
  Spec s{"DistilBertModel",
         activation_of(string_field(c, "activation", "gelu")),
         1e-12f,
         config_int(c, "n_layers", 1, 256),
         config_int(c, "n_heads", 1, 1024),
         config_int(c, "dim", 1, 65536),
         config_int(c, "hidden_dim", 1, 262144),
         config_int(c, "vocab_size", 1, 1'000'000),
         config_int(c, "max_position_embeddings", 1, 1'000'000)};
  check_heads(s);
  auto m = std::make_unique<Encoder>(s, std::move(tok));
  const std::string p = prefix_of(w, "distilbert.", "embeddings.word_embeddings.weight");
  const std::int64_t d = s.d_model;
  m->word = w.read(p + "embeddings.word_embeddings.weight", {s.vocab, d});
  m->set_dtype(w.dtype(p + "embeddings.word_embeddings.weight"));
  m->position = w.read(p + "embeddings.position_embeddings.weight", {s.positions, d});
  m->emb_ln_g = w.read(p + "embeddings.LayerNorm.weight", {d});
  m->emb_ln_b = w.read(p + "embeddings.LayerNorm.bias", {d});
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const std::string q = p + "transformer.layer." + std::to_string(l) + ".";
    Block b;
    for (auto [name, W, B] : {std::tuple{"q_lin", &b.wq, &b.bq},
                              {"k_lin", &b.wk, &b.bk},
                              {"v_lin", &b.wv, &b.bv},
                              {"out_lin", &b.wo, &b.bo}}) {
      *W = w.read_linear(q + "attention." + name + ".weight", d, d);
      *B = w.read(q + "attention." + name + ".bias", {d});
    }
    b.ln1_g = w.read(q + "sa_layer_norm.weight", {d});
    b.ln1_b = w.read(q + "sa_layer_norm.bias", {d});
    b.w1 = w.read_linear(q + "ffn.lin1.weight", d, s.ffn);
    b.b1 = w.read(q + "ffn.lin1.bias", {s.ffn});
    b.w2 = w.read_linear(q + "ffn.lin2.weight", s.ffn, d);
    b.b2 = w.read(q + "ffn.lin2.bias", {d});
    b.ln2_g = w.read(q + "output_layer_norm.weight", {d});
    b.ln2_b = w.read(q + "output_layer_norm.bias", {d});
    m->blocks.push_back(std::move(b));
  }
  prepare_weights(*m);
  return m;
}

}  // namespace

std::unique_ptr<Model> make_encoder(const std::string& arch, const Json& config, const ModelFiles& files,
                                    const LargeFiles& large, std::unique_ptr<Tokenizer> tokenizer) {
  const WeightStore weights(files, large);
  std::unique_ptr<Model> model;
  if (arch == "BertModel" || arch.rfind("BertFor", 0) == 0) {
    model = load_bert(config, weights, std::move(tokenizer));
  } else {
    model = load_distilbert(config, weights, std::move(tokenizer));
  }
  // The Hub writes the model's id into config.json as _name_or_path.
  const std::string name = string_field(config, "_name_or_path", "");
  if (!name.empty() && name.size() <= 200) static_cast<Encoder&>(*model).set_name(name);
  return model;
}

bool is_encoder(const std::string& arch) {
  return arch == "BertModel" || arch.rfind("BertFor", 0) == 0 || arch == "DistilBertModel" ||
         arch.rfind("DistilBertFor", 0) == 0;
}

}  // namespace attnscope
