// A tokenizer on its own, from a model's tokenizer files: the handle JS holds. Same rules as embind.cpp: inputs
// checked before they are copied, results copied out, every failure returned as { error }.
#include <emscripten/bind.h>

#include "attnscope/tokenizer.hpp"
#include "convert.hpp"
#include "model_files.hpp"
#include "tokens.hpp"

namespace attnscope {
namespace {

using namespace bindings;

class TokenizerHandle {
 public:
  val load(val files) {
    return guard("loadTokenizer", [&] {
      tokenizer_ = make_tokenizer(copy_files("loadTokenizer", files));
      if (!tokenizer_)
        throw Error(
            "loadTokenizer: no tokenizer files AttnScope reads (vocab.json + merges.txt, or a SentencePiece "
            "vocab.json)");
      return val::object();
    });
  }
  val info() const {
    val i = val::object();
    i.set("vocabSize", static_cast<double>(tokenizer_ ? tokenizer_->vocab_size() : 0));
    i.set("normalization", tokenizer_ ? tokenizer_->normalization() : std::string());
    return i;
  }
  // ids (Int32Array) → { utf8: Uint8Array }
  val decode(val ids, bool skip_special) const {
    return guard("decode", [&] {
      if (!tokenizer_) throw Error("decode: no tokenizer is loaded");
      return decoded(*tokenizer_, ids_arg(ids), skip_special);
    });
  }
  // ids (Int32Array) → string[]
  val labels(val ids) const {
    return guard("labels", [&] {
      if (!tokenizer_) throw Error("labels: no tokenizer is loaded");
      return labelled(*tokenizer_, ids_arg(ids));
    });
  }
  val tokenize(const std::string& text, bool target) const {
    return guard("tokenize", [&] {
      if (!tokenizer_) throw Error("tokenize: no tokenizer is loaded");
      return encoding_to_js(target ? tokenizer_->encode_target(text) : tokenizer_->encode(text));
    });
  }

 private:
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace
}  // namespace attnscope

EMSCRIPTEN_BINDINGS(attnscope_tokenizer) {
  using attnscope::TokenizerHandle;
  emscripten::class_<TokenizerHandle>("TokenizerHandle")
      .constructor<>()
      .function("load", &TokenizerHandle::load)
      .function("info", &TokenizerHandle::info)
      .function("tokenize", &TokenizerHandle::tokenize)
      .function("decode", &TokenizerHandle::decode)
      .function("labels", &TokenizerHandle::labels);
}
