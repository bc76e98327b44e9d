// Model::load reads config.json's architecture from the table (architectures.cpp) and makes the one TransformerModel
// its row describes; the inputs' factories and a run's lookups by name.
#include "attnscope/model.hpp"

#include <algorithm>
#include <optional>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "models/gguf_checkpoint.hpp"
#include "models/spec.hpp"
#include "models/weights.hpp"

namespace attnscope {

std::unique_ptr<Model> Model::load(const ModelFiles& files, const LargeFiles& large) {
  // A GGUF (llama.cpp's file, or the parts of a split one) is read as the checkpoint it was converted from.
  std::vector<std::pair<std::string, std::shared_ptr<const FileBytes>>> ggufs;
  for (const auto& [name, bytes] : files)
    if (is_gguf_name(name))
      ggufs.emplace_back(
          name, std::make_shared<MemoryBytes>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  for (const auto& [name, bytes] : large)
    if (is_gguf_name(name)) ggufs.emplace_back(name, bytes);
  const auto config_file = files.find("config.json");
  std::optional<GgufCheckpoint> gguf;
  if (config_file == files.end() && !ggufs.empty()) gguf = read_gguf_checkpoint(ggufs);
  if (config_file == files.end() && !gguf)
    throw Error("loadModel: config.json (or a .gguf file) is missing from the model's files");
  const Json config = Json::parse(gguf ? gguf->config : config_file->second, "config.json");
  if (!config.is_object()) throw Error("config.json: expected a JSON object");
  const Json* archs = config.find("architectures");
  if (!archs || !archs->is_array() || archs->array().empty() || !archs->array()[0].is_string())
    throw Error("config.json: architectures must name the model's architecture, e.g. [\"BertModel\"]");
  const std::string& arch = archs->array()[0].string();
  if (transformer::is_supported(arch)) {
    const WeightStore store = gguf ? WeightStore(std::move(gguf->tensors)) : WeightStore(files, large);
    std::unique_ptr<Model> model =
        transformer::make_model(arch, config, files, store, make_tokenizer(gguf ? gguf->tokenizer : files));
    std::string& weights = model->info_.weights;
    weights = gguf ? gguf->file_type : "";
    if (weights.empty())  // as the files name the embedding's type: F32, BF16, Q8_0, ...
      for (char ch : model->info_.weights_dtype) weights += static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
    // The embedding table may have spare rows (USE lite: 8002 rows for 8000 pieces), never fewer.
    const Tokenizer* t = model->tokenizer();
    if (t && t->vocab_size() > model->info().vocab_size && model->info().input == InputKind::text)
      throw Error("loadModel: the tokenizer has " + std::to_string(t->vocab_size()) +
                  " entries, more than config.json's vocab_size=" + std::to_string(model->info().vocab_size));
    return model;
  }
  throw Error("loadModel: architecture " + quote(arch) +
              " is not supported (supported: " + transformer::supported_architectures() + ")");
}

std::uint64_t Model::gguf_weight_bytes(const LargeFiles& ggufs) {
  return attnscope::gguf_weight_bytes({ggufs.begin(), ggufs.end()});
}

SequenceInput SequenceInput::of_text(std::string_view text) {
  SequenceInput s;
  s.form = Form::text;
  s.text = std::string(text);
  return s;
}

SequenceInput SequenceInput::of_ids(std::vector<std::int32_t> ids) {
  SequenceInput s;
  s.form = Form::ids;
  s.ids = std::move(ids);
  return s;
}

SequenceInput SequenceInput::of_image(const ImageInput& image) {
  SequenceInput s;
  s.form = Form::image;
  s.image = image;
  return s;
}

SequenceInput SequenceInput::of_pixels(Tensor pixels) {
  SequenceInput s;
  s.form = Form::pixels;
  s.pixels = std::move(pixels);
  return s;
}

SequenceInput SequenceInput::of_audio(const AudioInput& audio) {
  SequenceInput s;
  s.form = Form::audio;
  s.audio = audio;
  return s;
}

SequenceInput SequenceInput::of_features(Tensor features) {
  SequenceInput s;
  s.form = Form::features;
  s.features = std::move(features);
  return s;
}

namespace {

template <typename T>
const T& named(const std::vector<T>& items, std::string_view name, const char* what) {
  for (const T& item : items)
    if (item.name == name) return item;
  std::string there;
  for (const T& item : items) there += (there.empty() ? "" : ", ") + item.name;
  throw Error(std::string("run: this run has no ") + what + " " + quote(name) + " (it has " + there + ")");
}

}  // namespace

const Sequence& RunResult::sequence(std::string_view name) const { return named(sequences, name, "sequence"); }
const MapSet& RunResult::map(std::string_view name) const { return named(maps, name, "map set"); }

std::vector<std::int32_t> Model::decoder_input(std::string_view target) const {
  if (!tokenizer_)
    throw Error("run: this model's files hold no tokenizer AttnScope reads; run it on token ids instead");
  if (!info_.encoder_decoder) throw Error("run: " + info_.name + " is not an encoder-decoder model");
  std::vector<std::int32_t> ids{info_.decoder_start};
  const Encoding e = tokenizer_->encode_target(target);
  ids.insert(ids.end(), e.ids.begin(), e.ids.end());
  if (ids.size() > 1 && std::find(info_.eos.begin(), info_.eos.end(), ids.back()) != info_.eos.end()) ids.pop_back();
  return ids;
}

}  // namespace attnscope
