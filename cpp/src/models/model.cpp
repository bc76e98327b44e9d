// Model::load reads config.json's architecture from the table (architectures.cpp); Model::run tokenizes,
// truncates to the model's limit and hands over to the architecture.
#include "attnscope/model.hpp"

#include <algorithm>
#include <numeric>

#include "attnscope/error.hpp"
#include "io/json.hpp"
#include "models/transformer.hpp"

namespace attnscope {

std::unique_ptr<Model> Model::load(const ModelFiles& files, const LargeFiles& large) {
  const auto config_file = files.find("config.json");
  if (config_file == files.end()) throw Error("loadModel: config.json is missing from the model's files");
  const Json config = Json::parse(config_file->second, "config.json");
  if (!config.is_object()) throw Error("config.json: expected a JSON object");
  const Json* archs = config.find("architectures");
  if (!archs || !archs->is_array() || archs->array().empty() || !archs->array()[0].is_string())
    throw Error("config.json: architectures must name the model's architecture, e.g. [\"BertModel\"]");
  const std::string& arch = archs->array()[0].string();
  if (transformer::is_supported(arch)) {
    std::unique_ptr<Model> model = transformer::make_model(arch, config, files, large, make_tokenizer(files));
    // The embedding table may have spare rows (USE lite: 8002 rows for 8000 pieces), never fewer.
    const Tokenizer* t = model->tokenizer();
    if (t && t->vocab_size() > model->info().vocab_size)
      throw Error("loadModel: the tokenizer has " + std::to_string(t->vocab_size()) +
                  " entries, more than config.json's vocab_size=" + std::to_string(model->info().vocab_size));
    return model;
  }
  throw Error("loadModel: architecture " + quote(arch) +
              " is not supported (supported: " + transformer::supported_architectures() + ")");
}

namespace {

// Truncates to `max_tokens`, visibly, and checks every id; `what` names the text in errors ("the text", "the
// source").
ModelRun prepare(const ModelInfo& info, Encoding e, std::int64_t max_tokens, const std::string& what) {
  ModelRun r;
  r.total_tokens = static_cast<std::int64_t>(e.ids.size());
  if (e.ids.empty()) throw Error("run: " + what + " has no tokens; give it some text");
  if (r.total_tokens > max_tokens) {
    r.truncated = true;
    e.ids.resize(static_cast<std::size_t>(max_tokens));
    e.tokens.resize(static_cast<std::size_t>(max_tokens));
  }
  for (std::size_t i = 0; i < e.ids.size(); ++i)
    if (e.ids[i] < 0 || e.ids[i] >= info.vocab_size)
      throw Error("run: id " + std::to_string(e.ids[i]) + " at position " + std::to_string(i) +
                  (what == "the text" ? "" : " of " + what) + " is outside the vocabulary [0, " +
                  std::to_string(info.vocab_size) + ")");
  r.ids = std::move(e.ids);
  r.tokens = std::move(e.tokens);
  return r;
}

}  // namespace

// The [n, n] keep mask that hides padding keys from every query, or an empty one.
std::vector<std::uint8_t> padding_mask(const RunOptions& o, std::size_t n) {
  if (o.attention_mask.empty()) return {};
  if (o.attention_mask.size() < n)
    throw Error("run: attentionMask has " + std::to_string(o.attention_mask.size()) + " entries but there are " +
                std::to_string(n) + " tokens");
  std::vector<std::uint8_t> keep(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) keep[i * n + j] = o.attention_mask[j] ? 1 : 0;
  return keep;
}

bool ablate_heads(const RunOptions& o, std::int64_t layer, std::int64_t heads, Tensor& concatenated) {
  bool any = false;
  const std::int64_t n = concatenated.rows(), width = concatenated.cols(), d = width / heads;
  for (const auto& [l, h] : o.ablate_heads) {
    if (l != layer) continue;
    any = true;
    for (std::int64_t i = 0; i < n; ++i) std::fill_n(concatenated.data.begin() + i * width + h * d, d, 0.0f);
  }
  return any;
}

void Model::check_layers(const RunOptions& options) const {
  for (const auto& [l, h] : options.ablate_heads)
    if (l < 0 || l >= info_.layers || h < 0 || h >= info_.heads)
      throw Error("run: ablateHeads names layer " + std::to_string(l) + ", head " + std::to_string(h) +
                  ", outside the model's " + std::to_string(info_.layers) + " layers × " + std::to_string(info_.heads) +
                  " heads (both count from 0)");
  if (options.map_layers)
    for (std::size_t i = 0; i < options.map_layers->size(); ++i) {
      const std::int64_t l = (*options.map_layers)[i];
      if (l < 0 || l >= info_.layers)
        throw Error("run: mapLayers[" + std::to_string(i) + "] = " + std::to_string(l) + " is outside the model's " +
                    std::to_string(info_.layers) + " layers (counting from 0)");
      if (std::find(options.map_layers->begin(), options.map_layers->begin() + i, l) != options.map_layers->begin() + i)
        throw Error("run: mapLayers names layer " + std::to_string(l) + " twice");
    }
}

void Model::keep_layers(ModelRun& r, const RunOptions& options) const {
  r.map_layers.resize(static_cast<std::size_t>(info_.layers));
  std::iota(r.map_layers.begin(), r.map_layers.end(), 0);
  if (!options.map_layers || r.attentions.empty()) return;
  const std::int64_t block = static_cast<std::int64_t>(r.attentions.data.size()) / info_.layers;
  Tensor kept = Tensor::unfilled({static_cast<std::int64_t>(options.map_layers->size()), r.attentions.shape[1],
                                  r.attentions.shape[2], r.attentions.shape[3]});
  for (std::size_t i = 0; i < options.map_layers->size(); ++i)
    std::copy_n(r.attentions.data.begin() + (*options.map_layers)[i] * block, block,
                kept.data.begin() + static_cast<std::int64_t>(i) * block);
  r.attentions = std::move(kept);
  r.map_layers = *options.map_layers;
}

void Model::finish_and_forward(const Runtime& runtime, ModelRun& r, const RunOptions& options) const {
  check_layers(options);
  for (std::int32_t id : r.ids) r.special.push_back(tokenizer_ && tokenizer_->is_special(id) ? 1 : 0);
  forward(runtime, r, options);
  if (!selects_map_layers()) keep_layers(r, options);
}

void Model::refuse_text() const {
  if (info_.vision)
    throw Error("run: " + info_.name + " (" + info_.architecture +
                ") is a vision model: run it on an image, run({ image })");
}

ImageRun Model::run_image(const Runtime&, const ImageInput&, const RunOptions&) const {
  throw Error("run: " + info_.name + " (" + info_.architecture +
              ") is not a vision model; an image needs one such as ViT, DeiT, DINOv2 or CLIP");
}

ImageRun Model::run_pixels(const Runtime& runtime, Tensor, const RunOptions& options) const {
  return run_image(runtime, {}, options);
}

ModelRun Model::run(const Runtime& runtime, std::string_view text, const RunOptions& options) const {
  refuse_text();
  if (!tokenizer_)
    throw Error("run: this model's files hold no tokenizer AttnScope reads; run it on token ids instead");
  ModelRun r = prepare(info_, tokenizer_->encode(text), info_.max_tokens, "the text");
  finish_and_forward(runtime, r, options);
  return r;
}

std::unique_ptr<Generation> Model::generate(const Runtime&, const std::vector<std::int32_t>&, std::uint64_t,
                                            GenerationMaps) const {
  throw Error("generate: " + info_.name + " (" + info_.architecture +
              ") is not a language model; generate needs a decoder such as GPT-2, Llama, Qwen or Gemma");
}

std::unique_ptr<Generation> Model::generate_pair(const Runtime&, std::vector<std::int32_t>,
                                                 const std::vector<std::int32_t>&, std::uint64_t,
                                                 GenerationMaps) const {
  throw Error("generate: " + info_.name + " (" + info_.architecture +
              ") is not an encoder-decoder model; a source to generate from needs one such as BART");
}

Tensor Model::logits(const Runtime&, const Tensor&) const {
  throw Error("logits: " + info_.name + " (" + info_.architecture +
              ") is not a language model; logits needs a decoder such as GPT-2, Llama, Qwen or Gemma");
}

ModelRun Model::prepare_ids(std::vector<std::int32_t> ids, std::int64_t max_tokens, const char* what) const {
  Encoding e;
  e.ids = std::move(ids);
  for (auto id : e.ids) {
    const bool known = tokenizer_ && id >= 0 && id < tokenizer_->vocab_size();
    e.tokens.push_back(known ? tokenizer_->token(id) : "#" + std::to_string(id));
  }
  return prepare(info_, std::move(e), max_tokens, what);
}

ModelRun Model::run_ids(const Runtime& runtime, std::vector<std::int32_t> ids, const RunOptions& options) const {
  refuse_text();
  ModelRun r = prepare_ids(std::move(ids), info_.max_tokens, "the text");
  finish_and_forward(runtime, r, options);
  return r;
}

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

PairRun Model::run_pair(const Runtime& runtime, std::string_view source, std::string_view target,
                        const RunOptions& options) const {
  std::vector<std::int32_t> decoder = decoder_input(target);
  return run_pair(runtime, tokenizer_->encode(source).ids, std::move(decoder), options);
}

PairRun Model::run_pair(const Runtime&, std::vector<std::int32_t>, std::vector<std::int32_t>, const RunOptions&) const {
  throw Error("run: " + info_.name + " (" + info_.architecture +
              ") is not an encoder-decoder model; a source and a target need one such as BART");
}

}  // namespace attnscope
