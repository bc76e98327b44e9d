// Vision transformers loaded from random checkpoints in the Hub's names and layout (ViT, DeiT with its distillation
// token, DINOv2 with and without registers, CLIP's vision tower), held to torchvision's own VisionTransformer in
// float64 (tests/golden/make_vision_goldens.py writes vision.json): every map, the last hidden state, each token's
// norm per layer, the pooler, the classifier and CLIP's projection. DINOv2's position table interpolated to a grid
// it was not trained on is held to torch.nn.functional.interpolate as Hugging Face's two DINOv2 embeddings call it
// (size=, bicubic, align_corners=False; antialias=True with registers).
#include <gtest/gtest.h>

#include "attnscope/model.hpp"
#include "goldens.hpp"
#include "io/json.hpp"
#include "test_util.hpp"
#include "vision/interpolate.hpp"

namespace attnscope {
namespace {

using testing::expect_error;
using testing::files_of;
using testing::max_difference;

const Json& goldens() {
  static const Json json = testing::read_golden("vision.json");
  return json;
}

Tensor tensor(const Json& j) { return testing::golden_tensor(j); }

// A golden vector [n] or matrix as a tensor of the shape `like` has.
Tensor vector_of(const Json& j) {
  Tensor t = tensor(j);
  t.shape = {static_cast<std::int64_t>(t.data.size())};
  return t;
}

const Json* case_named(const std::string& name) {
  for (const Json& g : goldens().find("cases")->array())
    if (g.find("name")->string() == name) return &g;
  ADD_FAILURE() << "vision.json has no case " << name;
  return nullptr;
}

TEST(Vision, EveryMapAndOutputMatchesTorchvision) {
  for (int threads : {1, 2}) {
    Runtime rt(threads);
    for (const Json& g : goldens().find("cases")->array()) {
      const auto model = Model::load(files_of(g));
      ASSERT_TRUE(model->info().vision);
      for (const Json& run : g.find("runs")->array()) {
        const Tensor pixels = tensor(*run.find("pixels"));
        SCOPED_TRACE(g.find("name")->string() + " at " + format_shape(pixels.shape) + ", " + std::to_string(threads) +
                     " thread(s)");
        RunOptions norms;
        norms.token_norms = true;
        const RunResult r = model->run(rt, Input::pixels(pixels), norms);
        std::vector<std::string> tokens;
        for (const Json& t : run.find("tokens")->array()) tokens.push_back(t.string());
        const Sequence& image = r.sequence("image");
        EXPECT_EQ(image.tokens, tokens);
        const auto& grid = run.find("grid")->array();
        EXPECT_EQ(image.rows, static_cast<std::int64_t>(grid[0].number()));
        EXPECT_EQ(image.cols, static_cast<std::int64_t>(grid[1].number()));
        EXPECT_LE(max_difference(r.map("self").attentions, tensor(*run.find("attentions"))), 1e-5);
        EXPECT_LE(max_difference(r.hidden(), tensor(*run.find("hidden"))), 1e-4);
        EXPECT_LE(max_difference(r.stacks[0].token_norms, tensor(*run.find("token_norms"))), 1e-4);
        EXPECT_EQ(r.pixels.data, pixels.data);
        if (const Json* pooled = run.find("pooled"))
          EXPECT_LE(max_difference(r.embedding, vector_of(*pooled)), 1e-4);
        else
          EXPECT_TRUE(r.embedding.empty());
        if (const Json* e = run.find("image_embeds")) EXPECT_LE(max_difference(r.image_embedding, vector_of(*e)), 1e-4);
        if (const Json* logits = run.find("logits")) {
          const Tensor want = vector_of(*logits);
          EXPECT_LE(max_difference(r.label_logits, want), 1e-4);
          ASSERT_EQ(r.labels.size(), std::min<std::size_t>(5, want.data.size()));
          const auto best = std::max_element(want.data.begin(), want.data.end()) - want.data.begin();
          EXPECT_EQ(r.labels[0].id, best);
          EXPECT_EQ(r.labels[0].label, model->info().labels[best]);
          for (std::size_t i = 1; i < r.labels.size(); ++i)
            EXPECT_GE(r.labels[i - 1].probability, r.labels[i].probability);
        } else {
          EXPECT_TRUE(r.labels.empty());
        }
      }
    }
  }
}

TEST(Vision, MapLayersAndAblationActOnPatchTokens) {
  const Json* g = case_named("Dinov2WithRegistersModel");
  ASSERT_NE(g, nullptr);
  Runtime rt(1);
  const auto model = Model::load(files_of(*g));
  const Tensor pixels = tensor(*g->find("runs")->array().back().find("pixels"));
  const RunResult all = model->run(rt, Input::pixels(pixels));
  RunOptions o;
  o.map_layers = std::vector<std::int64_t>{1};
  const RunResult one = model->run(rt, Input::pixels(pixels), o);
  ASSERT_EQ(one.map("self").map_layers, std::vector<std::int64_t>{1});
  const Tensor &one_maps = one.map("self").attentions, &all_maps = all.map("self").attentions;
  const std::int64_t block = static_cast<std::int64_t>(all_maps.data.size()) / model->info().layers;
  EXPECT_TRUE(std::equal(one_maps.data.begin(), one_maps.data.end(), all_maps.data.begin() + block));
  EXPECT_EQ(max_difference(one.hidden(), all.hidden()), 0.0);  // the other layers ran fused, to the same output
  RunOptions ablate;
  ablate.ablate_heads = {{0, 1}};
  const RunResult ablated = model->run(rt, Input::pixels(pixels), ablate);
  EXPECT_GT(max_difference(ablated.hidden(), all.hidden()), 1e-4);  // head 1 of layer 0 mattered
  ablate.ablate_heads = {{9, 0}};
  expect_error([&] { model->run(rt, Input::pixels(pixels), ablate); }, "ablateHeads names layer 9");
}

TEST(Vision, PositionTableInterpolationMatchesTorch) {
  for (const Json& e : goldens().find("interpolations")->array()) {
    const Tensor in = tensor(*e.find("input")), want = tensor(*e.find("output"));
    SCOPED_TRACE(testing::dump(*e.find("call")) + " " + format_shape(in.shape) + " → " + format_shape(want.shape));
    const std::int64_t side = in.shape[0], d = in.shape[2], rows = want.shape[0], cols = want.shape[1];
    vision::BicubicCall call;
    call.scale_y = double(side) / double(rows);
    call.scale_x = double(side) / double(cols);
    call.antialias = e.find("call")->string() == "dinov2_with_registers";
    Tensor got({rows, cols, d});
    const std::vector<float> out = vision::bicubic(in.data.data(), side, side, d, rows, cols, call);
    std::copy(out.begin(), out.end(), got.data.begin());
    EXPECT_LE(max_difference(got, want), 1e-5);
  }
}

TEST(Vision, TextAndImagesGoToTheirOwnModels) {
  Runtime rt(1);
  const auto vit = Model::load(files_of(goldens().find("cases")->array().front()));
  expect_error([&] { vit->run(rt, Input::ids({1, 2, 3})); }, "is a vision model: run it on an image");
  expect_error([&] { vit->run(rt, Input::text("a cat")); }, "is a vision model: run it on an image");
  expect_error(
      [&] {
        vit->run(rt, Input::pixels(Tensor({3, 4, 4})));
      },
      "pixels must be [3, H, W] with H and W at least");
  Tensor nan({3, 32, 32});
  nan.data[7] = std::nanf("");
  expect_error([&] { vit->run(rt, Input::pixels(nan)); }, "at index 7");
  RunOptions lens;
  lens.top_k = 3;
  expect_error([&] { vit->run(rt, Input::pixels(Tensor({3, 32, 32})), lens); }, "topK, logitLens");
  expect_error([&] { vit->generate(rt, Input::pixels(Tensor({3, 32, 32})), 0); }, "is not a language model");
  // The model is still usable after each error.
  EXPECT_EQ(vit->run(rt, Input::pixels(Tensor({3, 32, 32}))).sequence("image").rows, 4);
}

TEST(Vision, BrokenConfigsAndCheckpointsAreNamed) {
  const Json& g = goldens().find("cases")->array().front();
  ModelFiles files = files_of(g);
  const auto with = [&](const std::string& from, const std::string& to) {
    ModelFiles f = files;
    const std::size_t at = f["config.json"].find(from);
    EXPECT_NE(at, std::string::npos) << from;
    f["config.json"].replace(at, from.size(), to);
    return f;
  };
  expect_error([&] { Model::load(with("\"id2label\":{", "\"id2label\":{\"7\":\"x\",")); }, "id2label must map");
  expect_error([&] { Model::load(with("\"patch_size\":", "\"patch_size\":0,\"x\":")); }, "patch_size");
  ModelFiles no_classifier = files;
  no_classifier["config.json"] = testing::dump(*g.find("config"));
  std::vector<std::pair<std::string, Tensor>> named;
  for (const auto& [name, t] : g.find("state")->object())
    if (name != "classifier.weight") named.emplace_back(name, tensor(t));
  no_classifier["model.safetensors"] = testing::decoders::safetensors(named, "F32");
  expect_error([&] { Model::load(no_classifier); }, "\"classifier.weight\" is missing");
}

}  // namespace
}  // namespace attnscope
