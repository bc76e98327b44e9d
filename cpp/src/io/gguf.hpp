// GGUF, llama.cpp's model file (ggml's gguf.h), read from a file's bytes, in memory or on demand:
//   "GGUF" · u32 version (2 or 3) · u64 tensor count · u64 key count
//   keys: string key · u32 value type · value (an array: u32 element type · u64 count · elements)
//   tensor infos: string name · u32 dims · u64 dims innermost first · u32 ggml type · u64 offset
//   padding to general.alignment (32 when absent), then the data section, each tensor at its offset.
// Strings are a u64 byte length and UTF-8. Everything is bounds-checked before use: counts and lengths that the
// rest of the file cannot hold, unknown value or tensor types, dims whose product overflows or does not fill whole
// blocks, offsets past the end or overlapping, duplicate names are all Errors naming the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/files.hpp"

namespace attnscope {

// A metadata value. Numbers of every width are held as double (the metadata read from them are far below 2^53);
// arrays of numbers or booleans in `numbers`, of strings in `strings`.
struct GgufValue {
  enum class Type : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };
  Type type = Type::u32;
  Type element = Type::u32;  // an array's
  double number = 0;
  std::string text;
  std::vector<double> numbers;
  std::vector<std::string> strings;
};

// ggml's tensor types that a GGUF may hold (ggml.h's ggml_type), and the bytes of a block of `block` values.
struct GgmlType {
  std::uint32_t id;
  const char* name;
  std::uint32_t block, bytes;
};
inline constexpr std::uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ8_0 = 8, kGgmlBF16 = 30;
// The type of id `id`, or null for one ggml does not define.
const GgmlType* ggml_type(std::uint32_t id);

struct GgufTensor {
  std::vector<std::uint64_t> dims;  // innermost first (ggml's ne): a Linear's [out, in] is dims {in, out}
  std::uint32_t type = 0;
  std::uint64_t offset = 0, bytes = 0;  // within the file
};

class Gguf {
 public:
  // Reads the header of `file` (in pieces: it stays where it is); tensors are read when asked for. `what` names it
  // in errors.
  Gguf(std::shared_ptr<const FileBytes> file, std::string what);

  const std::string& what() const { return what_; }
  const std::shared_ptr<const FileBytes>& file() const { return file_; }
  std::uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const std::map<std::string, GgufTensor>& tensors() const { return tensors_; }
  // The value of `key`, or null.
  const GgufValue* find(const std::string& key) const;

 private:
  std::shared_ptr<const FileBytes> file_;
  std::string what_;
  std::uint32_t version_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::map<std::string, GgufTensor> tensors_;
};

// Whether `bytes` start as a GGUF does.
bool is_gguf(const FileBytes& bytes);

}  // namespace attnscope
