// Reading config.json fields with bounds, so that a config naming 10⁹ layers is an
// Error before anything is allocated.
#pragma once

#include <cmath>
#include <string>

#include "attnscope/error.hpp"
#include "io/json.hpp"

namespace attnscope {

inline std::int64_t config_int(const Json& config, const char* key, std::int64_t min, std::int64_t max) {
  const Json* v = config.find(key);
  if (!v) throw Error(std::string("config.json: ") + key + " is missing");
  if (!v->is_number() || std::floor(v->number()) != v->number() || v->number() < double(min) ||
      v->number() > double(max))
    throw Error(std::string("config.json: ") + key + " must be a whole number from " + std::to_string(min) + " to " +
                std::to_string(max));
  return static_cast<std::int64_t>(v->number());
}

inline double config_number(const Json& config, const char* key, double min, double max) {
  const Json* v = config.find(key);
  if (!v) throw Error(std::string("config.json: ") + key + " is missing");
  if (!v->is_number() || !(v->number() >= min && v->number() <= max))
    throw Error(std::string("config.json: ") + key + " must be a number from " + std::to_string(min) + " to " +
                std::to_string(max));
  return v->number();
}

// The same for a field that may be absent or null: `fallback` then (the config class's default).
inline std::int64_t optional_int(const Json& config, const char* key, std::int64_t fallback, std::int64_t min,
                                 std::int64_t max) {
  const Json* v = config.find(key);
  return v && !v->is_null() ? config_int(config, key, min, max) : fallback;
}

inline double optional_number(const Json& config, const char* key, double fallback, double min, double max) {
  const Json* v = config.find(key);
  return v && !v->is_null() ? config_number(config, key, min, max) : fallback;
}

inline bool optional_bool(const Json& config, const char* key, bool fallback) {
  const Json* v = config.find(key);
  if (!v || v->is_null()) return fallback;
  if (v->type() != Json::Type::boolean) throw Error(std::string("config.json: ") + key + " must be true or false");
  return v->boolean();
}

inline std::string optional_string(const Json& config, const char* key, const std::string& fallback) {
  const Json* v = config.find(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_string()) throw Error(std::string("config.json: ") + key + " must be a string");
  return v->string();
}

}  // namespace attnscope
