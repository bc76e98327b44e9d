#include "io/gguf.hpp"

#include <algorithm>
#include <cstring>

#include "attnscope/error.hpp"
#include "io/text.hpp"

namespace attnscope {

namespace {

// ggml.c's type traits: block size and bytes per block. The ids ggml retired (4, 5: Q4_2, Q4_3; 31-33) are absent.
constexpr GgmlType kTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},
};

// Bounds: ggml's own for names and dims; for the rest, far above any real file and far below what would exhaust
// the heap.
constexpr std::uint64_t kMaxName = 64;           // GGML_MAX_NAME, with its NUL
constexpr std::uint64_t kMaxKey = 1 << 16;       // a metadata key's bytes
constexpr std::uint64_t kMaxString = 16u << 20;  // one metadata string (a chat template is a few KiB)
constexpr std::uint64_t kMaxText = 256u << 20;   // all metadata strings (a 262k-token vocabulary is ~4 MiB)
constexpr std::uint32_t kMaxDims = 4;            // GGML_MAX_DIMS

const char* type_name(GgufValue::Type t) {
  static const char* const names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                      "bool", "string", "array", "u64", "i64", "f64"};
  return names[static_cast<std::uint32_t>(t)];
}

// The header's bytes, read from the file a megabyte at a time.
class Cursor {
 public:
  Cursor(const FileBytes& file, const std::string& what) : file_(file), what_(what), size_(file.size()) {}
  std::uint64_t at() const { return at_; }
  std::uint64_t left() const { return size_ - at_; }

  void bytes(void* out, std::uint64_t n, const char* what_for) {
    if (n > left())
      fail({what_, ": ", what_for, " at byte ", Num(double(at_)), " needs ", Num(double(n)),
            " bytes, past the end of the file (", Num(double(size_)), " bytes)"});
    auto* dest = static_cast<std::uint8_t*>(out);
    while (n > 0) {
      if (at_ < buffer_at_ || at_ >= buffer_at_ + buffer_.size()) fill();
      const std::uint64_t from = at_ - buffer_at_;
      const std::uint64_t take = std::min<std::uint64_t>(n, buffer_.size() - from);
      std::memcpy(dest, buffer_.data() + from, static_cast<std::size_t>(take));
      dest += take;
      at_ += take;
      n -= take;
    }
  }
  template <typename T>
  T number(const char* what_for) {
    std::uint8_t b[sizeof(T)];
    bytes(b, sizeof(T), what_for);
    T v;
    std::memcpy(&v, b, sizeof(T));  // little-endian, as wasm and the x86 and Arm hosts are
    return v;
  }
  std::string string(std::uint64_t max, const char* what_for) {
    const std::uint64_t n = number<std::uint64_t>(what_for);
    if (n > max)
      fail({what_, ": ", what_for, " at byte ", Num(double(at_ - 8)), " is ", Num(double(n)),
            " bytes long, above the limit of ", Num(double(max))});
    std::string s(static_cast<std::size_t>(n), '\0');
    bytes(s.data(), n, what_for);
    return s;
  }

 private:
  void fill() {
    constexpr std::uint64_t kChunk = 1 << 20;
    buffer_at_ = at_;
    buffer_.resize(static_cast<std::size_t>(std::min(kChunk, size_ - at_)));
    file_.read(at_, buffer_.size(), buffer_.data());
  }

  const FileBytes& file_;
  const std::string& what_;
  std::uint64_t size_, at_ = 0, buffer_at_ = 0;
  std::vector<std::uint8_t> buffer_;
};

// The smallest encoding of a value of type t: a bound on how many the rest of the file can hold.
std::uint64_t least_bytes(GgufValue::Type t) {
  switch (t) {
    case GgufValue::Type::u8:
    case GgufValue::Type::i8:
    case GgufValue::Type::boolean:
      return 1;
    case GgufValue::Type::u16:
    case GgufValue::Type::i16:
      return 2;
    case GgufValue::Type::u32:
    case GgufValue::Type::i32:
    case GgufValue::Type::f32:
      return 4;
    default:
      return 8;  // u64, i64, f64, and a string's length
  }
}

double read_number(Cursor& in, GgufValue::Type t, const char* what_for) {
  switch (t) {
    case GgufValue::Type::u8:
      return in.number<std::uint8_t>(what_for);
    case GgufValue::Type::i8:
      return in.number<std::int8_t>(what_for);
    case GgufValue::Type::u16:
      return in.number<std::uint16_t>(what_for);
    case GgufValue::Type::i16:
      return in.number<std::int16_t>(what_for);
    case GgufValue::Type::u32:
      return in.number<std::uint32_t>(what_for);
    case GgufValue::Type::i32:
      return in.number<std::int32_t>(what_for);
    case GgufValue::Type::f32:
      return in.number<float>(what_for);
    case GgufValue::Type::boolean:
      return in.number<std::uint8_t>(what_for) != 0;
    case GgufValue::Type::u64:
      return static_cast<double>(in.number<std::uint64_t>(what_for));
    case GgufValue::Type::i64:
      return static_cast<double>(in.number<std::int64_t>(what_for));
    default:
      return in.number<double>(what_for);
  }
}

GgufValue::Type value_type(std::uint32_t raw, const std::string& where) {
  if (raw > static_cast<std::uint32_t>(GgufValue::Type::f64))
    fail({where, " has value type ", Num(double(raw)), ", which GGUF does not define (0 to 12)"});
  return static_cast<GgufValue::Type>(raw);
}

}  // namespace

const GgmlType* ggml_type(std::uint32_t id) {
  for (const GgmlType& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

bool is_gguf(const FileBytes& bytes) {
  if (bytes.size() < 4) return false;
  char magic[4];
  bytes.read(0, 4, reinterpret_cast<std::uint8_t*>(magic));
  return std::memcmp(magic, "GGUF", 4) == 0;
}

const GgufValue* Gguf::find(const std::string& key) const {
  const auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

Gguf::Gguf(std::shared_ptr<const FileBytes> file, std::string what) : file_(std::move(file)), what_(std::move(what)) {
  Cursor in(*file_, what_);
  char magic[4];
  in.bytes(magic, 4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) fail({what_, ": not a GGUF file (it does not start with \"GGUF\")"});
  version_ = in.number<std::uint32_t>("the version");
  if (version_ != 2 && version_ != 3)
    fail({what_, ": GGUF version ", Num(double(version_)), " is not supported (2 and 3 are)"});
  const std::uint64_t tensor_count = in.number<std::uint64_t>("the tensor count");
  const std::uint64_t key_count = in.number<std::uint64_t>("the key count");
  // Each key takes at least 8 + 4 + 1 bytes, each tensor info 8 + 4 + 8 + 4 + 8.
  if (key_count > in.left() / 13) fail({what_, ": ", Num(double(key_count)), " metadata keys cannot fit in the file"});
  if (tensor_count > in.left() / 32) fail({what_, ": ", Num(double(tensor_count)), " tensors cannot fit in the file"});

  std::uint64_t text = 0;  // bytes of strings held so far
  const auto string = [&](std::uint64_t max, const char* what_for) {
    std::string s = in.string(max, what_for);
    if ((text += s.size()) > kMaxText)
      fail({what_, ": the metadata's strings pass the limit of ", Num(double(kMaxText >> 20)), " MiB"});
    return s;
  };
  for (std::uint64_t i = 0; i < key_count; ++i) {
    std::string key = string(kMaxKey, "a metadata key");
    const std::string where = what_ + ": metadata " + quote(key);
    GgufValue v;
    v.type = value_type(in.number<std::uint32_t>("a value type"), where);
    if (v.type == GgufValue::Type::string) {
      v.text = string(kMaxString, "a metadata string");
    } else if (v.type == GgufValue::Type::array) {
      v.element = value_type(in.number<std::uint32_t>("an array's element type"), where);
      if (v.element == GgufValue::Type::array) fail({where, " is an array of arrays, which GGUF readers refuse"});
      const std::uint64_t count = in.number<std::uint64_t>("an array's length");
      if (count > in.left() / least_bytes(v.element))
        fail({where, " has ", Num(double(count)), " ", type_name(v.element),
              " elements, more than the rest of the file can hold"});
      if (v.element == GgufValue::Type::string) {
        v.strings.reserve(static_cast<std::size_t>(count));
        for (std::uint64_t k = 0; k < count; ++k) v.strings.push_back(string(kMaxString, "a metadata string"));
      } else {
        v.numbers.reserve(static_cast<std::size_t>(count));
        for (std::uint64_t k = 0; k < count; ++k) v.numbers.push_back(read_number(in, v.element, "an array element"));
      }
    } else {
      v.number = read_number(in, v.type, "a metadata value");
    }
    if (!metadata_.emplace(std::move(key), std::move(v)).second) fail({where, " appears twice"});
  }

  std::uint64_t alignment = 32;
  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufValue::Type::u32 || a->number < 1 || a->number > (1 << 30) ||
        (static_cast<std::uint64_t>(a->number) & (static_cast<std::uint64_t>(a->number) - 1)))
      fail({what_, ": general.alignment must be a u32 power of two"});
    alignment = static_cast<std::uint64_t>(a->number);
  }

  struct Pending {
    std::string name;
    GgufTensor tensor;
  };
  std::vector<Pending> infos;
  infos.reserve(static_cast<std::size_t>(tensor_count));
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    Pending p;
    p.name = string(kMaxName - 1, "a tensor name");
    const std::string where = what_ + ": tensor " + quote(p.name);
    const std::uint32_t dims = in.number<std::uint32_t>("a tensor's dimension count");
    if (dims < 1 || dims > kMaxDims) fail({where, " has ", Num(double(dims)), " dimensions (1 to 4)"});
    std::uint64_t count = 1;
    for (std::uint32_t d = 0; d < dims; ++d) {
      const std::uint64_t n = in.number<std::uint64_t>("a tensor dimension");
      if (n > (std::uint64_t{1} << 40) || (n != 0 && count > (std::uint64_t{1} << 50) / n))
        fail({where, ": its size overflows"});
      count *= n;
      p.tensor.dims.push_back(n);
    }
    p.tensor.type = in.number<std::uint32_t>("a tensor type");
    const GgmlType* type = ggml_type(p.tensor.type);
    if (!type) fail({where, " has ggml type ", Num(double(p.tensor.type)), ", which ggml does not define"});
    if (p.tensor.dims[0] % type->block)
      fail({where, " has rows of ", Num(double(p.tensor.dims[0])), " values, not whole blocks of ",
            Num(double(type->block)), " (", type->name, ")"});
    p.tensor.bytes = count / type->block * type->bytes;
    p.tensor.offset = in.number<std::uint64_t>("a tensor offset");
    if (p.tensor.offset % alignment)
      fail({where, " starts at offset ", Num(double(p.tensor.offset)), ", not a multiple of the alignment ",
            Num(double(alignment))});
    infos.push_back(std::move(p));
  }

  const std::uint64_t data = (in.at() + alignment - 1) / alignment * alignment;
  const std::uint64_t size = file_->size();
  if (data > size && tensor_count > 0) fail({what_, ": the file ends before its data section"});
  const std::uint64_t data_size = data > size ? 0 : size - data;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (Pending& p : infos) {
    const std::string where = what_ + ": tensor " + quote(p.name);
    if (p.tensor.offset > data_size || p.tensor.bytes > data_size - p.tensor.offset)
      fail({where, " holds bytes [", Num(double(p.tensor.offset)), ", ", Num(double(p.tensor.offset + p.tensor.bytes)),
            ") past the end of the data section (", Num(double(data_size)),
            " bytes): the file is truncated or not a GGUF"});
    ranges.emplace_back(p.tensor.offset, p.tensor.offset + p.tensor.bytes);
    p.tensor.offset += data;
    if (!tensors_.emplace(p.name, std::move(p.tensor)).second) fail({where, " appears twice"});
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second && ranges[i].first != ranges[i].second)
      fail({what_, ": tensors overlap at bytes [", Num(double(ranges[i].first)), ", ",
            Num(double(ranges[i - 1].second)), ") of the data section"});
}

}  // namespace attnscope
