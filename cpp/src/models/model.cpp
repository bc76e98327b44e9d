// Model::load dispatches on config.json's architecture; Model::run tokenizes,
// truncates to the model's limit and hands over to the architecture.
#include "attnscope/model.hpp"

#include "attnscope/error.hpp"
#include "attnscope/json.hpp"
#include "use_lite.hpp"

namespace attnscope {

std::unique_ptr<Model> Model::load(const ModelFiles& files) {
  const auto config_file = files.find("config.json");
  if (config_file == files.end()) throw Error("loadModel: config.json is missing from the model's files");
  const Json config = Json::parse(config_file->second, "config.json");
  if (!config.is_object()) throw Error("config.json: expected a JSON object");
  const Json* archs = config.find("architectures");
  if (!archs || !archs->is_array() || archs->array().empty() || !archs->array()[0].is_string())
    throw Error("config.json: architectures must name the model's architecture, e.g. [\"BertModel\"]");
  const std::string& arch = archs->array()[0].string();
  if (arch == "UniversalSentenceEncoderLite") return make_use_lite(config, files);
  throw Error("loadModel: architecture \"" + arch + "\" is not supported (supported: UniversalSentenceEncoderLite)");
}

ModelRun Model::run(const Runtime& runtime, std::string_view text, const RunOptions& options) const {
  Encoding e = tokenizer_->encode(text);
  ModelRun r;
  r.total_tokens = static_cast<std::int64_t>(e.ids.size());
  if (e.ids.empty()) throw Error("run: the text has no tokens; give it some text");
  if (r.total_tokens > info_.max_tokens) {
    r.truncated = true;
    e.ids.resize(static_cast<std::size_t>(info_.max_tokens));
    e.tokens.resize(static_cast<std::size_t>(info_.max_tokens));
  }
  for (auto id : e.ids)
    if (id < 0 || id >= info_.vocab_size)
      throw Error("run: the tokenizer produced id " + std::to_string(id) + ", outside the vocabulary of " +
                  std::to_string(info_.vocab_size));
  r.ids = std::move(e.ids);
  r.tokens = std::move(e.tokens);
  forward(runtime, r, options);
  return r;
}

}  // namespace attnscope
