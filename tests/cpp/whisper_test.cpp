// Whisper loaded from random checkpoints in the Hub's names and layout, held to PyTorch's own layers
// (tests/golden/make_whisper_goldens.py writes whisper.json): every encoder, decoder and cross-attention map, the
// logits and greedy generation, from a window's log-mel features; and the audio front end's own checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "attnscope/model.hpp"
#include "goldens.hpp"
#include "io/json.hpp"
#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::expect_error;
using testing::max_difference;

const Json& goldens() {
  static const Json json = testing::read_golden("whisper.json");
  return json;
}

Tensor tensor(const Json& j) { return testing::golden_tensor(j); }

std::vector<std::int32_t> ids(const Json& j) {
  std::vector<std::int32_t> out;
  for (const Json& x : j.array()) out.push_back(static_cast<std::int32_t>(x.number()));
  return out;
}

ModelFiles files_of(const Json& g) {
  ModelFiles files = testing::files_of(g);
  files["preprocessor_config.json"] = testing::dump(*g.find("preprocessor"));
  return files;
}

Input heard(const Json& g, std::vector<std::int32_t> target) {
  return Input::pair(SequenceInput::of_features(tensor(*g.find("features"))), SequenceInput::of_ids(std::move(target)));
}

TEST(Whisper, EveryMapAndTheLogitsMatchPyTorch) {
  for (int threads : {1, 2}) {
    Runtime rt(threads);
    for (const Json& g : goldens().find("cases")->array()) {
      SCOPED_TRACE(g.find("name")->string() + ", " + std::to_string(threads) + " thread(s)");
      const auto model = Model::load(files_of(g));
      const ModelInfo& info = model->info();
      const Json& config = *g.find("config");
      EXPECT_EQ(info.input, InputKind::audio);
      EXPECT_TRUE(info.encoder_decoder);
      EXPECT_TRUE(info.language_model);
      EXPECT_EQ(info.layers, config.find("decoder_layers")->number());
      EXPECT_EQ(info.audio.mel_bins, config.find("num_mel_bins")->number());
      EXPECT_EQ(info.audio.frames, 100);
      EXPECT_EQ(info.audio.positions, 50);
      EXPECT_EQ(info.audio.window_samples, 16000);
      EXPECT_EQ(info.decoder_start, 60);
      RunOptions o;
      o.return_logits = true;
      const RunResult r = model->run(rt, heard(g, ids(*g.find("target"))), o);
      EXPECT_LE(max_difference(r.map("encoder").attentions, tensor(*g.find("encoder"))), 1e-5);
      EXPECT_LE(max_difference(r.map("decoder").attentions, tensor(*g.find("decoder"))), 1e-5);
      EXPECT_LE(max_difference(r.map("cross").attentions, tensor(*g.find("cross"))), 1e-5);
      EXPECT_LE(max_difference(r.logits, tensor(*g.find("logits"))), 1e-4);
      // The keys of the cross maps are the audio's positions, named by their time: 20 ms apart.
      const Sequence& audio = r.sequences[r.map("cross").keys];
      EXPECT_EQ(audio.name, "audio");
      ASSERT_EQ(audio.tokens.size(), 50u);
      EXPECT_EQ(audio.tokens[0], "0.00 s");
      EXPECT_EQ(audio.tokens[49], "0.98 s");
      EXPECT_EQ(r.features.data, tensor(*g.find("features")).data);
    }
  }
}

TEST(Whisper, GreedyGenerationIsPyTorchs) {
  Runtime rt(2);
  for (const Json& g : goldens().find("cases")->array()) {
    SCOPED_TRACE(g.find("name")->string());
    const auto model = Model::load(files_of(g));
    const std::vector<std::int32_t> greedy = ids(*g.find("greedy"));
    const auto generation =
        model->generate(rt, heard(g, std::vector<std::int32_t>(greedy.begin(), greedy.begin() + 4)), 0);
    SamplingOptions argmax;
    argmax.temperature = 0;
    while (generation->ids().size() < greedy.size()) generation->step(rt, argmax);
    EXPECT_EQ(generation->ids(), greedy);
  }
}

TEST(Whisper, AGenerationKeepsTheEncoderLayersAskedFor) {
  Runtime rt(1);
  const Json& g = goldens().find("cases")->array().front();
  const auto model = Model::load(files_of(g));
  const Input input = heard(g, {60});
  const Tensor encoder = tensor(*g.find("encoder"));  // [2, heads, 50, 50]
  const std::int64_t per_layer = element_count(encoder.shape) / 2;
  const auto one = model->generate(rt, input, 0, GenerationMaps::all, std::vector<std::int64_t>{1});
  const MapSet& kept = one->source()->map("encoder");
  EXPECT_EQ(kept.map_layers, (std::vector<std::int64_t>{1}));
  ASSERT_EQ(kept.attentions.shape, (Shape{1, encoder.shape[1], 50, 50}));
  double worst = 0;
  for (std::int64_t i = 0; i < per_layer; ++i)
    worst = std::max(worst, double(std::abs(kept.attentions.data[i] - encoder.data[per_layer + i])));
  EXPECT_LE(worst, 1e-5);
  // None asked: no encoder maps, and the decoder's still kept.
  const auto none = model->generate(rt, input, 0, GenerationMaps::all, std::vector<std::int64_t>{});
  EXPECT_TRUE(none->source()->maps.empty());
  SamplingOptions argmax;
  argmax.temperature = 0;
  none->step(rt, argmax);
  EXPECT_EQ(none->cross_attentions().shape[2], 2);
  expect_error([&] { model->generate(rt, input, 0, GenerationMaps::all, std::vector<std::int64_t>{2}); },
               "generate: encoderMapLayers[0] = 2 is outside the encoder's 2 layers (counting from 0)");
  expect_error(
      [&] {
        model->generate(rt, input, 0, GenerationMaps::all, std::vector<std::int64_t>{0, 0});
      },
      "generate: encoderMapLayers[1] = 0 names a layer twice");
}

TEST(Whisper, AudioIsReadIntoOneWindowAndBadAudioIsAnError) {
  Runtime rt(1);
  const Json& g = goldens().find("cases")->array().front();
  const auto model = Model::load(files_of(g));
  std::vector<float> tone(8000);  // half the 1 s window
  for (std::size_t i = 0; i < tone.size(); ++i) tone[i] = 0.3f * static_cast<float>(std::sin(0.2 * double(i)));
  const std::vector<std::int32_t> target{60, 61};
  RunResult r =
      model->run(rt, Input::pair(SequenceInput::of_audio({tone.data(), 8000}), SequenceInput::of_ids(target)));
  EXPECT_EQ(r.features.shape, (Shape{80, 100}));
  EXPECT_DOUBLE_EQ(r.sequence("audio").seconds, 0.5);
  EXPECT_FALSE(r.sequence("audio").truncated);
  std::vector<float> long_tone(40000, 0.1f);
  r = model->run(rt, Input::pair(SequenceInput::of_audio({long_tone.data(), 40000}), SequenceInput::of_ids(target)));
  EXPECT_TRUE(r.sequence("audio").truncated);
  EXPECT_DOUBLE_EQ(r.sequence("audio").seconds, 1.0);
  const auto run = [&](SequenceInput source) {
    model->run(rt, Input::pair(std::move(source), SequenceInput::of_ids(target)));
  };
  expect_error([&] { run(SequenceInput::of_audio({tone.data(), 0})); }, "run: the audio is empty");
  tone[17] = std::nanf("");
  expect_error([&] { run(SequenceInput::of_audio({tone.data(), 8000})); }, "run: the audio holds nan at sample 17");
  expect_error(
      [&] {
        run(SequenceInput::of_features(Tensor({80, 99})));
      },
      "run: features must be [80, 100] (mel bins × a window's frames), got [80, 99]");
  expect_error([&] { run(SequenceInput::of_text("hello")); }, "is a speech model: run it on audio (mono, 16000 Hz)");
  expect_error(
      [&] {
        model->run(rt, Input::pair(SequenceInput::of_features(Tensor({80, 100})), SequenceInput::of_ids({})));
      },
      "the target has no tokens");
  // A preprocessor whose window does not make the encoder's frames.
  ModelFiles files = files_of(g);
  files["preprocessor_config.json"] = R"({"feature_size": 80, "chunk_length": 30})";
  expect_error([&] { Model::load(files); },
               "loadModel: a window of 30 s makes 3000 frames, but the encoder reads 100 (2 × config.json's "
               "max_source_positions)");
  files["preprocessor_config.json"] = R"({"feature_size": 128, "chunk_length": 1})";
  expect_error([&] { Model::load(files); },
               "preprocessor_config.json: feature_size is 128 but config.json's num_mel_bins is 80");
}

}  // namespace
}  // namespace attnscope
