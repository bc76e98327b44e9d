// Taps (attnscope/taps.hpp) on every kind of model: what each layer's view holds adds up to the layer's output, the
// heads' outputs through W_O are the attention sublayer's, the norms' frozen scales rebuild what the norms made,
// the stack's end is the run's hidden state, and a run with a tap is the run without one.
#include <gtest/gtest.h>

#include "attnscope/model.hpp"
#include "decoder_checkpoints.hpp"
#include "goldens.hpp"
#include "io/json.hpp"
#include "models/transformer_model.hpp"
#include "test_util.hpp"

namespace attnscope {
namespace {

// Copies of every view a run showed.
struct Seen {
  std::int64_t stack, layer, p0;
  Matrix input, normed, attention, mlp, output;
  std::optional<Matrix> cross;
  Tensor q, k, v, heads;
  LayerScales scales;
};

class Recorder final : public LayerTap {
 public:
  explicit Recorder(bool scales) : scales_(scales) {}
  void layer(const LayerView& v) override {
    Seen s{v.stack,   v.layer,      v.p0, *v.input, *v.normed, *v.attention, *v.mlp,
           *v.output, std::nullopt, *v.q, *v.k,     *v.v,      *v.heads,     {}};
    if (v.cross) s.cross = *v.cross;
    if (v.scales) s.scales = *v.scales;
    layers.push_back(std::move(s));
  }
  void end(const StackEnd& e) override { ends.push_back({*e.output, *e.normed, *e.scales}); }
  bool scales() const override { return scales_; }

  std::vector<Seen> layers;
  struct End {
    Matrix output, normed;
    NormScales scales;
  };
  std::vector<End> ends;

 private:
  bool scales_;
};

double worst(const Matrix& a, const Matrix& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  return (a - b).cwiseAbs().maxCoeff() / std::max(1.0f, b.cwiseAbs().maxCoeff());
}

Matrix matrix_of(const Tensor& t) { return ConstMatrixMap(t.data.data(), t.rows(), t.cols()); }

TEST(Taps, EachDecoderLayersViewAddsUpAndItsScalesRebuildItsNorms) {
  Runtime rt(2);
  for (const testing::decoders::Case& c : testing::decoders::cases()) {
    SCOPED_TRACE(c.name);
    const auto model = Model::load(c.files), plain = Model::load(c.files);
    const auto* parts = transformer::transformer_of(*model);
    const transformer::Stack& stack = parts->last();
    const transformer::Config& k = stack.config();
    const std::vector<std::int32_t> ids = testing::decoders::some_ids(9, model->info().vocab_size, 5);
    Recorder tap(true);
    RunOptions o;
    o.tap = &tap;
    o.return_projections = true;
    const RunResult r = model->run(rt, Input::ids(ids), o);
    ASSERT_EQ(tap.layers.size(), static_cast<std::size_t>(k.layers));
    for (const Seen& s : tap.layers) {
      SCOPED_TRACE("layer " + std::to_string(s.layer));
      EXPECT_EQ(s.stack, 0);
      EXPECT_EQ(s.p0, 0);
      EXPECT_FALSE(s.cross);
      // The stream: this layer's input is the last one's output, and the output its input plus what it added.
      if (s.layer > 0) EXPECT_EQ(worst(s.input, tap.layers[s.layer - 1].output), 0.0);
      if (!stack.weights().blocks[s.layer].w_residual) EXPECT_LE(worst(s.output, s.input + s.attention + s.mlp), 1e-6);
      // The heads through W_O (+ b_O) are the attention sublayer's output, before a sandwich's post-norm.
      const MultiHeadParams p = model->attention_weights(s.layer);
      Matrix through = matrix_of(s.heads) * ConstMatrixMap(p.wo.data, p.wo.shape[0], p.wo.shape[1]);
      if (!p.bo.empty()) through.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(p.bo.data, p.bo.shape[0]);
      if (k.placement == transformer::Placement::pre) EXPECT_LE(worst(through, s.attention), 1e-5);
      // The pre-norm's frozen scale rebuilds what the projections multiply: x · scale ⊙ w.
      const Tensor& w = stack.weights().blocks[s.layer].attn_norm;
      ASSERT_EQ(s.scales.attn.scale.size(), static_cast<std::size_t>(ids.size()));
      Matrix rebuilt = s.input;
      for (Eigen::Index i = 0; i < rebuilt.rows(); ++i)
        rebuilt.row(i) =
            rebuilt.row(i).cwiseProduct(Eigen::Map<const Eigen::RowVectorXf>(w.data.data(), w.data.size())) *
            s.scales.attn.scale[i];
      EXPECT_LE(worst(rebuilt, s.normed), 1e-6);
      if (k.qk_norm) {
        EXPECT_EQ(s.scales.q.scale.size(), static_cast<std::size_t>(k.heads * ids.size()));
        EXPECT_EQ(s.scales.k.scale.size(), static_cast<std::size_t>(k.kv_heads * ids.size()));
      }
      // The run's projections are the tap's views.
      EXPECT_EQ(r.stacks[0].q[s.layer].data, s.q.data);
      EXPECT_EQ(worst(matrix_of(r.stacks[0].inputs[s.layer]), s.normed), 0.0);
    }
    // The end: the final norm over the last output, its frozen scale, and the run's hidden state.
    ASSERT_EQ(tap.ends.size(), 1u);
    EXPECT_EQ(worst(tap.ends[0].normed, matrix_of(r.hidden())), 0.0);
    EXPECT_EQ(worst(tap.ends[0].output, tap.layers.back().output), 0.0);
    EXPECT_EQ(tap.ends[0].scales.scale.size(), ids.size());
    // A tap changes nothing the run computes.
    const RunResult bare = plain->run(rt, Input::ids(ids));
    EXPECT_EQ(bare.hidden().data, r.hidden().data);
    EXPECT_EQ(bare.map("self").attentions.data, r.map("self").attentions.data);
  }
}

TEST(Taps, TheLensAndTheProjectionsAreTapsLikeACallersOwn) {
  Runtime rt(1);
  const std::vector<testing::decoders::Case> cases = testing::decoders::cases();
  const testing::decoders::Case& c = cases.front();
  const auto model = Model::load(c.files);
  const std::vector<std::int32_t> ids = testing::decoders::some_ids(7, model->info().vocab_size, 2);
  RunOptions lens;
  lens.logit_lens = true;
  lens.reuse_prefix = false;
  const RunResult alone = model->run(rt, Input::ids(ids), lens);
  Recorder tap(false);
  lens.tap = &tap;
  const RunResult tapped = model->run(rt, Input::ids(ids), lens);
  EXPECT_EQ(alone.logit_lens.ids, tapped.logit_lens.ids);
  EXPECT_EQ(alone.logit_lens.probs, tapped.logit_lens.probs);
  EXPECT_EQ(tap.layers.size(), static_cast<std::size_t>(model->info().layers));
  EXPECT_TRUE(tap.layers[0].scales.attn.empty());  // this tap did not ask for scales
}

TEST(Taps, AnEncoderDecoderShowsBothStacksAndTheDecodersCrossAttention) {
  Runtime rt(1);
  const Json json = testing::read_golden("seq2seq.json");
  for (const Json& g : json.find("cases")->array()) {
    SCOPED_TRACE(g.find("name")->string());
    const auto model = Model::load(testing::files_of(g));
    std::vector<std::int32_t> source, target;
    for (const Json& x : g.find("source")->array()) source.push_back(static_cast<std::int32_t>(x.number()));
    for (const Json& x : g.find("target")->array()) target.push_back(static_cast<std::int32_t>(x.number()));
    Recorder tap(true);
    RunOptions o;
    o.tap = &tap;
    o.token_norms = true;
    const RunResult r = model->run(rt, Input::pair(SequenceInput::of_ids(source), SequenceInput::of_ids(target)), o);
    const ModelInfo& info = model->info();
    ASSERT_EQ(tap.layers.size(), static_cast<std::size_t>(info.encoder_layers + info.layers));
    for (std::size_t i = 0; i < tap.layers.size(); ++i) {
      const Seen& s = tap.layers[i];
      EXPECT_EQ(s.stack, static_cast<std::int64_t>(i) < info.encoder_layers ? 0 : 1);
      EXPECT_EQ(s.cross.has_value(), s.stack == 1);
      EXPECT_EQ(s.input.rows(), static_cast<Eigen::Index>(s.stack ? target.size() : source.size()));
    }
    ASSERT_EQ(tap.ends.size(), 2u);
    EXPECT_EQ(worst(tap.ends[0].normed, matrix_of(r.stacks[0].hidden)), 0.0);
    EXPECT_EQ(worst(tap.ends[1].normed, matrix_of(r.stacks[1].hidden)), 0.0);
    // Token norms, a tap of the run's own, for both stacks.
    EXPECT_EQ(r.stacks[0].token_norms.shape,
              (Shape{info.encoder_layers + 1, static_cast<std::int64_t>(source.size())}));
    EXPECT_EQ(r.stacks[1].token_norms.shape, (Shape{info.layers + 1, static_cast<std::int64_t>(target.size())}));
    EXPECT_NEAR(r.stacks[1].token_norms.data.back(), tap.layers.back().output.row(target.size() - 1).norm(), 1e-5);
  }
}

TEST(Taps, AVisionModelsLayerScaledSublayersAddUpToItsStream) {
  Runtime rt(1);
  const Json json = testing::read_golden("vision.json");
  for (const Json& g : json.find("cases")->array()) {
    SCOPED_TRACE(g.find("name")->string());
    const auto model = Model::load(testing::files_of(g));
    const Tensor pixels = testing::golden_tensor(*g.find("runs")->array().front().find("pixels"));
    Recorder tap(false);
    RunOptions o;
    o.tap = &tap;
    const RunResult r = model->run(rt, Input::pixels(pixels), o);
    ASSERT_EQ(tap.layers.size(), static_cast<std::size_t>(model->info().layers));
    for (const Seen& s : tap.layers) EXPECT_LE(worst(s.output, s.input + s.attention + s.mlp), 1e-6);
    EXPECT_EQ(worst(tap.ends[0].normed, matrix_of(r.hidden())), 0.0);
  }
}

}  // namespace
}  // namespace attnscope
