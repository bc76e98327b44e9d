// Which tokenizer a model's files hold, and from which file.
#include "attnscope/error.hpp"
#include "attnscope/tokenizer.hpp"
#include "io/gguf.hpp"
#include "io/json.hpp"
#include "io/safetensors.hpp"
#include "tokenizers/gguf_vocab.hpp"
#include "tokenizers/pipeline.hpp"

namespace attnscope {

std::unique_ptr<Tokenizer> make_wordpiece_from_vocab_txt(std::string_view text, const Json* tokenizer_config);
std::unique_ptr<Tokenizer> make_wordpiece_from_tokenizer_json(const Json& j);

std::unique_ptr<Tokenizer> make_tokenizer(const std::map<std::string, std::string>& files) {
  // A GGUF's tokenizer, written out as the files below (its first part's, for a split one).
  for (const auto& [name, bytes] : files) {
    if (!ends_with(name, ".gguf")) continue;
    const Gguf g(std::make_shared<MemoryBytes>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                 name);
    const GgufValue* part = g.find("split.no");
    if (part && part->number != 0) continue;
    return make_tokenizer(tokenizers::tokenizer_files(g));
  }
  const auto config_file = files.find("tokenizer_config.json");
  const Json config = config_file == files.end() ? Json() : Json::parse(config_file->second, "tokenizer_config.json");
  const Json* c = config.is_object() ? &config : nullptr;
  const auto tokenizer_json = files.find("tokenizer.json");
  if (tokenizer_json != files.end()) {
    const Json j = Json::parse(tokenizer_json->second, "tokenizer.json");
    const Json* model = j.is_object() ? j.find("model") : nullptr;
    const Json* type = model ? model->find("type") : nullptr;
    const std::string kind = type && type->is_string() ? type->string() : "";
    if (kind == "WordPiece") return make_wordpiece_from_tokenizer_json(j);
    if (kind == "BPE" || kind == "Unigram") return tokenizers::make_pipeline(j, c);
    throw Error("tokenizer.json: model type " + quote(kind) + " is not supported (WordPiece, BPE, Unigram)");
  }
  const auto source = files.find("source.spm"), target = files.find("target.spm");
  if (source != files.end() || target != files.end()) {
    const auto vocab = files.find("vocab.json");
    if (source == files.end() || target == files.end() || vocab == files.end())
      throw Error("loadModel: a Marian tokenizer needs source.spm, target.spm and vocab.json together");
    return make_marian_tokenizer(source->second, target->second, Json::parse(vocab->second, "vocab.json"), c);
  }
  const auto vocab_txt = files.find("vocab.txt");
  if (vocab_txt != files.end()) return make_wordpiece_from_vocab_txt(vocab_txt->second, c);
  const auto vocab = files.find("vocab.json");
  const auto merges = files.find("merges.txt");
  if (vocab != files.end() && merges != files.end())
    return tokenizers::make_gpt2_bpe(Json::parse(vocab->second, "vocab.json"), merges->second);
  if (vocab != files.end()) {
    const Json j = Json::parse(vocab->second, "vocab.json");
    if (j.is_array()) return make_sentencepiece_use(j, "vocab.json");
    throw Error("loadModel: vocab.json is a token → id map, which needs merges.txt beside it");
  }
  return nullptr;
}

}  // namespace attnscope
