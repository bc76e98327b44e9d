// The JSON goldens in tests/golden (written by its make_*_goldens.py with PyTorch), for the native tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "attnscope/model.hpp"
#include "attnscope/tensor.hpp"
#include "decoder_checkpoints.hpp"
#include "io/json.hpp"

namespace attnscope::testing {

// tests/golden/<file>, parsed (callers keep it).
inline Json read_golden(const std::string& file) {
  std::ifstream in(std::string(ATTNSCOPE_GOLDEN_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str(), file);
}

// A golden tensor, { "shape": [...], "data": [...] } row-major.
inline Tensor golden_tensor(const Json& j) {
  Shape shape;
  for (const Json& d : j.find("shape")->array()) shape.push_back(static_cast<std::int64_t>(d.number()));
  if (shape.empty()) shape = {1};  // a scalar (CLIP's logit_scale) as one value
  Tensor t(shape);
  const auto& data = j.find("data")->array();
  for (std::size_t i = 0; i < data.size(); ++i) t.data[i] = static_cast<float>(data[i].number());
  return t;
}

// Writes JSON back out: a case's config.json, as a file of the checkpoint.
inline std::string dump(const Json& j) {
  switch (j.type()) {
    case Json::Type::null:
      return "null";
    case Json::Type::boolean:
      return j.boolean() ? "true" : "false";
    case Json::Type::number: {
      std::ostringstream s;
      s.precision(17);
      s << j.number();
      return s.str();
    }
    case Json::Type::string:
      return "\"" + j.string() + "\"";
    case Json::Type::array: {
      std::string s = "[";
      for (const Json& x : j.array()) s += (s.size() > 1 ? "," : "") + dump(x);
      return s + "]";
    }
    case Json::Type::object: {
      std::string s = "{";
      for (const auto& [k, v] : j.object()) s += (s.size() > 1 ? "," : "") + ("\"" + k + "\":") + dump(v);
      return s + "}";
    }
  }
  return "";
}

// A golden case's checkpoint: its config.json and its "state" as model.safetensors in `dtype`.
inline ModelFiles files_of(const Json& g, const std::string& dtype = "F32") {
  std::vector<std::pair<std::string, Tensor>> named;
  for (const auto& [name, t] : g.find("state")->object()) named.emplace_back(name, golden_tensor(t));
  return {{"config.json", dump(*g.find("config"))}, {"model.safetensors", decoders::safetensors(named, dtype)}};
}

// The largest |got − want| over their values; the shapes must agree.
inline double max_difference(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape, want.shape);
  double worst = 0;
  for (std::size_t i = 0; i < want.data.size() && i < got.data.size(); ++i)
    worst = std::max(worst, double(std::abs(got.data[i] - want.data[i])));
  return worst;
}

}  // namespace attnscope::testing
