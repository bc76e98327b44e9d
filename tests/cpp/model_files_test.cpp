// The JSON and safetensors readers on crafted, hostile files: each is a clear
// Error naming the file and what is wrong, before any large allocation.
#include <cmath>
#include <cstring>

#include "io/json.hpp"
#include "io/safetensors.hpp"
#include "test_util.hpp"

namespace attnscope {
namespace {

using testing::expect_error;

// A safetensors file: u64 header length, the header, then `data`.
std::string safetensors(const std::string& header, const std::string& data = "", std::uint64_t length = UINT64_MAX) {
  const std::uint64_t n = length == UINT64_MAX ? header.size() : length;
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return file + header + data;
}

SafeTensors parse(const std::string& file) {
  return SafeTensors(reinterpret_cast<const std::uint8_t*>(file.data()), file.size(), "model.safetensors");
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

TEST(Json, ParsesValuesEscapesAndSurrogatePairs) {
  const Json j = Json::parse(R"({"a": [1, -2.5e3, true, false, null], "s": "x\n\u00e9\ud83d\ude00\"", "o": {}})", "t");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.find("a")->array()[1].number(), -2500);
  EXPECT_TRUE(j.find("a")->array()[2].boolean());
  EXPECT_FALSE(j.find("a")->array()[3].boolean());
  EXPECT_TRUE(j.find("a")->array()[4].is_null());
  EXPECT_EQ(j.find("s")->string(), "x\n\xC3\xA9\xF0\x9F\x98\x80\"");
  EXPECT_EQ(j.find("missing"), nullptr);
}

TEST(Json, RefusesMalformedInput) {
  expect_error([] { Json::parse("{\"a\": 1,}", "config.json"); }, "config.json: invalid JSON at byte 8");
  expect_error([] { Json::parse("[1, 2", "config.json"); }, "expected ']'");
  expect_error([] { Json::parse("{\"a\": 1, \"a\": 2}", "config.json"); }, "duplicate key \"a\"");
  expect_error([] { Json::parse("\"abc", "f"); }, "unterminated string");
  expect_error([] { Json::parse("01x", "f"); }, "unexpected text after the JSON value");
  expect_error([] { Json::parse(std::string(100, '['), "f"); }, "nested deeper than 64 levels");
  expect_error([] { Json::parse("\"\\u12G4\"", "f"); }, "bad hex digit");
  expect_error([] { Json::parse("", "f"); }, "unexpected end");
}

TEST(Quote, EscapesControlCharactersAndElidesLongNames) {
  EXPECT_EQ(quote(std::string("a\0b\"c", 5)), "\"a\\u0000b\\\"c\"");
  EXPECT_EQ(quote(std::string(100, 'x')), "\"" + std::string(80, 'x') + "…\"");
}

TEST(Json, RefusesInvalidUtf8AndHugeFiles) {
  expect_error([] { Json::parse("[\"ok\", \"bad \xff byte\"]", "vocab.json"); }, "invalid UTF-8 in a string");
  expect_error([] { Json::parse("\"\xc0\xaf\"", "f"); }, "invalid UTF-8");      // overlong '/'
  expect_error([] { Json::parse("\"\xed\xa0\x80\"", "f"); }, "invalid UTF-8");  // raw surrogate
  EXPECT_EQ(Json::parse("\"\xc3\xa9\xe2\x96\x81\xf0\x9f\x98\x80\"", "f").string(),
            "\xc3\xa9\xe2\x96\x81\xf0\x9f\x98\x80");
  std::string huge = "[";
  for (int i = 0; i < 5'000'000; ++i) huge += "0,";
  huge += "0]";
  expect_error([&] { Json::parse(huge, "vocab.json"); },
               "vocab.json: invalid JSON at byte 7999999: more than 4,000,000 values");
}

TEST(SafeTensors, ReadsF32F16AndBF16) {
  std::string data = floats({1.5f, -2.0f});
  const std::uint16_t half[2] = {0x3C00, 0xC500};  // 1.0, -5.0 in F16
  const std::uint16_t bf16[2] = {0x3F80, 0x4049};  // 1.0, 3.140625 in BF16
  data.append(reinterpret_cast<const char*>(half), 4);
  data.append(reinterpret_cast<const char*>(bf16), 4);
  const std::string file =
      safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                  R"( "h": {"dtype": "F16", "shape": [1, 2], "data_offsets": [8, 12]},)"
                  R"( "b": {"dtype": "BF16", "shape": [2], "data_offsets": [12, 16]}, "__metadata__": {"x": "y"}})",
                  data);
  const SafeTensors st = parse(file);  // views `file`, which outlives it
  EXPECT_EQ(st.tensors().size(), 3u);
  EXPECT_EQ(st.read("a", {2}).data, (TensorData{1.5f, -2.0f}));
  EXPECT_EQ(st.read("h", {1, -1}).data, (TensorData{1.0f, -5.0f}));
  EXPECT_EQ(st.read("b", {2}).data, (TensorData{1.0f, 3.140625f}));
}

TEST(SafeTensors, RefusesHostileFiles) {
  const std::string ok = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  expect_error([] { parse("abc"); }, "model.safetensors: the file is 3 bytes, too short for a safetensors header");
  expect_error(
      [&] {
        parse(safetensors(ok, floats({1, 2}), std::uint64_t{1} << 63));
      },
      "header length 9223372036854775808 is beyond the end of the file");
  expect_error([&] { parse(safetensors(ok, floats({1}))); }, "outside the data section (4 bytes)");
  expect_error([&] { parse(safetensors("{not json", floats({1, 2}))); }, "model.safetensors header: invalid JSON");
  expect_error([&] { parse(safetensors("[]", "")); }, "the header is not a JSON object");
  expect_error(
      [&] {
        parse(safetensors(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", floats({1, 2})));
      },
      "tensor \"a\" has 8 bytes but F32 [3] needs 12");
  expect_error(
      [&] {
        parse(safetensors(R"({"a": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 8]}})", floats({1, 2})));
      },
      "has dtype Q7, which safetensors does not define");
  // An int64 buffer beside the weights (older CLIP and BERT checkpoints' position_ids) loads; reading it is an error.
  const std::string ids_file =
      safetensors(R"({"ids": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", floats({1, 2}));
  const SafeTensors with_ids = parse(ids_file);
  expect_error([&] { with_ids.read("ids", {1}); }, "has dtype I64; AttnScope reads weights in F32, F16 and BF16");
  expect_error(
      [&] {
        parse(safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                          R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}})",
                          floats({1, 2})));
      },
      "tensors overlap");
  expect_error(
      [&] {
        parse(safetensors(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 4], "data_offsets": [0, 8]}})",
                          floats({1, 2})));
      },
      "the shape's size overflows");
  expect_error(
      [&] {
        parse(safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", floats({1, 2})));
      },
      "data_offsets [8, 0] outside the data section");
  expect_error(
      [&] {
        parse(safetensors(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 8]}})", floats({1, 2})));
      },
      "a shape dimension must be a whole number");
  expect_error(
      [&] {
        parse(safetensors(R"({"a": {"dtype": "F32", "shape": [2]}})", floats({1, 2})));
      },
      "needs data_offsets [begin, end]");
  const std::string with_nan = safetensors(ok, floats({1, NAN}));  // must outlive the view
  const SafeTensors st = parse(with_nan);
  expect_error([&] { st.read("missing", {1}); }, "model.safetensors: tensor \"missing\" is missing");
  expect_error([&] { st.read("a", {3}); }, "tensor \"a\" has shape [2] but the config needs [3]");
  expect_error([&] { st.read("a", {2}); }, "has a non-finite value (NaN) at index 1");
}

}  // namespace
}  // namespace attnscope
