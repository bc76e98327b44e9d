// libFuzzer: every tokenizer on arbitrary text, and on vocabularies built from the
// input. The first byte picks the case; the rest is text or a vocabulary file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/error.hpp"
#include "attnscope/model.hpp"
#include "attnscope/tokenizer.hpp"
#include "io/json.hpp"

namespace {

using attnscope::ModelFiles;

// Small fixed vocabularies, so that encoding explores the algorithms, not the loaders.
const ModelFiles& bert() {
  static const ModelFiles f{
      {"vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n##s\n,\n.\n\xe4\xb8\xad\na\n##a\n"}};
  return f;
}
const ModelFiles& gpt2() {
  static const ModelFiles f{{"vocab.json", R"({"a": 0, "b": 1, "c": 2, "\u0120": 3, "\u0120a": 4, "ab": 5, "!": 6})"},
                            {"merges.txt", "#version: 0.2\n\xc4\xa0 a\na b\n"}};
  return f;
}
const ModelFiles& use() {
  static const ModelFiles f{
      {"vocab.json",
       "[[\"<unk>\",0],[\"<s>\",0],[\"</s>\",0],[\"x\",0],[\"y\",0],[\"z\",0],[\"\\u2581the\",-1],"
       "[\"a\",-2],[\"b\",null],[\"\\u2581\",-3]]"}};
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 6) {
      case 0:
        attnscope::make_tokenizer(bert())->encode(rest);
        break;
      case 1:
        attnscope::make_tokenizer(gpt2())->encode(rest);
        break;
      case 2:
        attnscope::make_tokenizer(use())->encode(rest);
        break;
      case 3:
        attnscope::make_tokenizer({{"vocab.txt", rest}})->encode("the cats, a\xe4\xb8\xad.");
        break;
      case 4:
        attnscope::make_tokenizer({{"tokenizer.json", rest}});
        break;
      default: {
        auto t = attnscope::make_tokenizer({{"vocab.json", rest}});
        if (t) t->encode("the a b");
      }
    }
  } catch (const attnscope::Error&) {
  }
  return 0;
}
