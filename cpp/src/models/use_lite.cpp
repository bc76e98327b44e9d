// Universal Sentence Encoder lite: a tensor2tensor-style pre-LayerNorm encoder.
//
//   x = 2·word[ids] + timing(positions)                [n, 256]  sin ‖ cos of position · inv_timescales
//       (the graph adds the embedding to AddTimingSignal's output, which already holds it)
//   layer l:  y = LN(x)
//             a = MHA(y)                                heads 4, d_k = width / 4, no mask (one sentence)
//             x = (l has a residual projection ? x·R + r : x) + a     [n, 512]
//             x = x + relu(LN(x)·W1 + b1)·W2 + b2
//   embedding = l2_normalize(tanh(mean_rows(x)·P + p))
//
// Tensor names are those web/models/convert-default.mjs writes.
#include "models/use_lite.hpp"

#include <cmath>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "kernels/gemm.hpp"
#include "models/config.hpp"
#include "models/layers.hpp"
#include "models/weights.hpp"

namespace attnscope {

namespace {

struct Layer {
  Tensor norm1_scale, norm1_bias, wq, wk, wv, bq, bk, bv, wo, bo;
  Tensor residual_w, residual_b;  // empty where the width does not change
  Tensor norm2_scale, norm2_bias, up_w, up_b, down_w, down_b;
};

// Columns [begin, begin + width) of a row-major [rows, cols] tensor, as its own tensor.
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

class UseLite final : public Model {
 public:
  UseLite(const Json& config, const WeightStore& w, std::unique_ptr<Tokenizer> tokenizer) {
    tokenizer_ = std::move(tokenizer);
    const std::int64_t layers = config_int(config, "num_hidden_layers", 1, 64);
    heads_ = config_int(config, "num_attention_heads", 1, 256);
    const std::int64_t vocab = config_int(config, "vocab_size", 1, 1'000'000);
    const std::int64_t embed = config_int(config, "embedding_size", 2, 16384);
    const std::int64_t hidden = config_int(config, "hidden_size", 1, 16384);
    const std::int64_t ffn = config_int(config, "intermediate_size", 1, 65536);
    eps_ = static_cast<float>(config_number(config, "layer_norm_eps", 0, 1));
    const std::int64_t max_tokens = config_int(config, "max_position_embeddings", 1, 100000);
    if (embed % 2) throw Error("config.json: embedding_size must be even (sin and cos halves)");

    word_ = w.read("embeddings.word", {vocab, embed});
    inv_timescales_ = w.read("embeddings.inv_timescales", {embed / 2});
    pool_w_ = w.read("pooler.weight", {hidden, hidden});
    pool_b_ = w.read("pooler.bias", {hidden});
    std::int64_t width = embed;
    for (std::int64_t l = 0; l < layers; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".";
      Layer L;
      L.norm1_scale = w.read(p + "attention.norm.scale", {width});
      L.norm1_bias = w.read(p + "attention.norm.bias", {width});
      const Tensor qkv = w.read(p + "attention.qkv.weight", {width, 3 * width});
      const Tensor qkv_b = w.read(p + "attention.qkv.bias", {3 * width});
      if (width % heads_)
        throw Error("config.json: num_attention_heads=" + std::to_string(heads_) + " does not divide layer " +
                    std::to_string(l) + "'s width " + std::to_string(width));
      L.wq = columns(qkv, 0, width), L.wk = columns(qkv, width, width), L.wv = columns(qkv, 2 * width, width);
      L.bq = columns(qkv_b, 0, width), L.bk = columns(qkv_b, width, width), L.bv = columns(qkv_b, 2 * width, width);
      L.wo = w.read(p + "attention.output.weight", {width, hidden});
      L.bo = w.read(p + "attention.output.bias", {hidden});
      if (width != hidden) {
        L.residual_w = w.read(p + "residual.weight", {width, hidden});
        L.residual_b = w.read(p + "residual.bias", {hidden});
      }
      L.norm2_scale = w.read(p + "ffn.norm.scale", {hidden});
      L.norm2_bias = w.read(p + "ffn.norm.bias", {hidden});
      L.up_w = w.read(p + "ffn.up.weight", {hidden, ffn});
      L.up_b = w.read(p + "ffn.up.bias", {ffn});
      L.down_w = w.read(p + "ffn.down.weight", {ffn, hidden});
      L.down_b = w.read(p + "ffn.down.bias", {hidden});
      layers_.push_back(std::move(L));
      width = hidden;
    }
    // Packed for the GEMM once, on first use; checked by the weight reader, not again per call.
    for (Layer& L : layers_)
      for (Tensor* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.residual_w, &L.up_w, &L.down_w}) kernels::prepare_weight(*t);
    kernels::prepare_weight(pool_w_);
    const Json* name = config.find("name");
    info_.name = name && name->is_string() ? name->string() : "Universal Sentence Encoder lite";
    info_.architecture = "UniversalSentenceEncoderLite";
    info_.layers = layers;
    info_.heads = heads_;
    info_.d_model = hidden;
    info_.max_tokens = max_tokens;
    info_.vocab_size = vocab;
  }

 public:
  MultiHeadParams attention_weights(std::int64_t layer) const override {
    const Layer& L = layers_.at(static_cast<std::size_t>(layer));
    return {L.wq.view(), L.wk.view(), L.wv.view(), L.wo.view(), L.bq.view(), L.bk.view(), L.bv.view(), L.bo.view()};
  }

 protected:
  void forward(const Runtime& rt, ModelRun& r, const RunOptions& o) const override {
    const std::int64_t n = static_cast<std::int64_t>(r.ids.size());
    const std::int64_t embed = word_.cols(), half = embed / 2;
    Matrix x(n, embed);
    for (std::int64_t i = 0; i < n; ++i) {
      x.row(i) = 2.0f * word_.head(0).row(r.ids[i]);
      for (std::int64_t j = 0; j < half; ++j) {
        const float t = static_cast<float>(i) * inv_timescales_.data[j];
        x(i, j) += std::sin(t);
        x(i, half + j) += std::cos(t);
      }
    }
    // Each layer's kernels write its maps in place.
    r.attentions = Tensor::unfilled({static_cast<std::int64_t>(layers_.size()), heads_, n, n});
    MultiHeadOptions mo;
    mo.heads = heads_;
    mo.return_projections = o.return_projections;
    const std::vector<std::uint8_t> padding = padding_mask(o, static_cast<std::size_t>(n));
    if (!padding.empty()) mo.mask = Mask::keep_mask(padding.data(), {n, n});
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Layer& L = layers_[l];
      const Matrix y = layers::layer_norm(x, L.norm1_scale, L.norm1_bias, eps_);
      if (o.return_projections) r.inputs.push_back(layers::to_tensor(y));
      // Heads concatenated [n, width]; the output projection may change the width.
      mo.weights_out = r.attentions.data.data() + static_cast<std::int64_t>(l) * heads_ * n * n;
      MultiHeadResult a = rt.multi_head_attention(
          y, {L.wq.view(), L.wk.view(), L.wv.view(), {}, L.bq.view(), L.bk.view(), L.bv.view(), {}}, mo);
      ablate_heads(o, static_cast<std::int64_t>(l), heads_, a.output);
      Matrix h = L.residual_w.empty() ? x : rt.linear(x, L.residual_w.view(), L.residual_b.view());
      h += rt.linear(a.output.view(), L.wo.view(), L.bo.view());
      Matrix f = rt.linear(layers::layer_norm(h, L.norm2_scale, L.norm2_bias, eps_), L.up_w.view(), L.up_b.view());
      layers::relu(f);
      x = h + rt.linear(f, L.down_w.view(), L.down_b.view());
      if (o.return_projections) {
        r.q.push_back(std::move(a.q));
        r.k.push_back(std::move(a.k));
        r.v.push_back(std::move(a.v));
      }
    }
    r.hidden = layers::to_tensor(x);
    const Matrix pooled = x.colwise().mean();
    Matrix e = rt.linear(pooled, pool_w_.view(), pool_b_.view()).array().tanh().matrix();
    e /= std::sqrt(std::max(e.squaredNorm(), 1e-12f));
    r.embedding = Tensor({e.cols()});
    std::copy(e.data(), e.data() + e.size(), r.embedding.data.begin());
  }

 private:
  std::int64_t heads_ = 0;
  float eps_ = 1e-6f;
  Tensor word_, inv_timescales_, pool_w_, pool_b_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Model> make_use_lite(const Json& config, const ModelFiles& files, const LargeFiles& large) {
  auto tokenizer = make_tokenizer(files);  // its SentencePiece vocab.json: [[piece, score], ...]
  if (!tokenizer) throw Error("loadModel: vocab.json is missing from the model's files");
  return std::make_unique<UseLite>(config, WeightStore(files, large), std::move(tokenizer));
}

}  // namespace attnscope
