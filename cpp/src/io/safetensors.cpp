#include "io/safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attnscope/error.hpp"
#include "io/json.hpp"

namespace attnscope {

namespace {

std::uint64_t dtype_size(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      std::uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while (!(m & 0x400));
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint64_t whole_number(const Json& j, const std::string& what) {
  if (!j.is_number() || j.number() < 0 || j.number() > 9.0e15 || std::floor(j.number()) != j.number())
    throw Error(what + " must be a whole number from 0 to 9e15");
  return static_cast<std::uint64_t>(j.number());
}

}  // namespace

SafeTensors::SafeTensors(const std::uint8_t* data, std::uint64_t size, std::string what) : what_(std::move(what)) {
  if (size < 8)
    throw Error(what_ + ": the file is " + std::to_string(size) + " bytes, too short for a safetensors header");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > size - 8)
    throw Error(what_ + ": header length " + std::to_string(n) + " is beyond the end of the file (" +
                std::to_string(size) + " bytes)");
  if (n > kMaxSafetensorsHeader)
    throw Error(what_ + ": header length " + std::to_string(n) + " is above the limit of 100 MiB");
  data_ = data + 8 + n;
  data_size_ = size - 8 - n;

  const Json header = Json::parse(std::string_view(reinterpret_cast<const char*>(data + 8), n), what_ + " header");
  if (!header.is_object()) throw Error(what_ + ": the header is not a JSON object");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : header.object()) {
    if (name == "__metadata__") continue;
    const std::string where = what_ + ": tensor " + quote(name);
    if (!entry.is_object()) throw Error(where + " is not an object");
    const Json* dtype = entry.find("dtype");
    const Json* shape = entry.find("shape");
    const Json* offsets = entry.find("data_offsets");
    if (!dtype || !dtype->is_string()) throw Error(where + " has no dtype");
    if (!shape || !shape->is_array()) throw Error(where + " has no shape");
    if (!offsets || !offsets->is_array() || offsets->array().size() != 2)
      throw Error(where + " needs data_offsets [begin, end]");
    SafeTensorInfo info;
    info.dtype = dtype->string();
    const std::uint64_t bytes_per = dtype_size(info.dtype);
    if (!bytes_per) throw Error(where + " has dtype " + info.dtype + "; supported: F32, F16, BF16");
    if (shape->array().size() > 8) throw Error(where + " has more than 8 dimensions");
    std::uint64_t count = 1;
    for (const Json& d : shape->array()) {
      const std::uint64_t dim = whole_number(d, where + ": a shape dimension");
      // Refuse products that overflow before multiplying.
      if (dim != 0 && count > (std::uint64_t{1} << 62) / dim) throw Error(where + ": the shape's size overflows");
      count *= dim;
      info.shape.push_back(static_cast<std::int64_t>(dim));
    }
    info.begin = whole_number(offsets->array()[0], where + ": data_offsets[0]");
    info.end = whole_number(offsets->array()[1], where + ": data_offsets[1]");
    if (info.begin > info.end || info.end > data_size_)
      throw Error(where + " has data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                  "] outside the data section (" + std::to_string(data_size_) + " bytes)");
    if (info.end - info.begin != count * bytes_per)
      throw Error(where + " has " + std::to_string(info.end - info.begin) + " bytes but " + info.dtype + " " +
                  format_shape(info.shape) + " needs " + std::to_string(count * bytes_per));
    ranges.emplace_back(info.begin, info.end);
    tensors_.emplace(name, std::move(info));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second && ranges[i].first != ranges[i].second)
      throw Error(what_ + ": tensors overlap at bytes [" + std::to_string(ranges[i].first) + ", " +
                  std::to_string(ranges[i - 1].second) + ")");
}

Tensor SafeTensors::read(const std::string& name, const Shape& expected) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(what_ + ": tensor " + quote(name) + " is missing");
  const SafeTensorInfo& info = it->second;
  bool fits = info.shape.size() == expected.size();
  for (std::size_t i = 0; fits && i < expected.size(); ++i) fits = expected[i] < 0 || expected[i] == info.shape[i];
  if (!fits)
    throw Error(what_ + ": tensor " + quote(name) + " has shape " + format_shape(info.shape) +
                " but the config needs " + format_shape(expected));
  Tensor t(info.shape.empty() ? Shape{1} : info.shape);  // a scalar is one value
  const std::uint8_t* src = data_ + info.begin;
  if (info.dtype == "F32") {
    std::memcpy(t.data.data(), src, t.data.size() * 4);
  } else {
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      const std::uint16_t h = static_cast<std::uint16_t>(src[2 * i] | (src[2 * i + 1] << 8));
      if (info.dtype == "F16") {
        t.data[i] = half_to_float(h);
      } else {  // BF16: the top half of a float32
        const std::uint32_t bits = std::uint32_t{h} << 16;
        std::memcpy(&t.data[i], &bits, 4);
      }
    }
  }
  check_finite("loadModel", (what_ + ": tensor " + quote(name)).c_str(), t.data.data(),
               static_cast<std::int64_t>(t.data.size()));
  return t;
}

}  // namespace attnscope
