// The table of messages/messages.hpp. Each names the operation first, then the argument, what it must be, and
// what it was.
#include "attnscope/messages.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace attnscope::messages {

namespace {

const Template kTable[] = {
    // A tensor argument as JS gives it (checked by the package before anything is copied).
    {"tensor", "{op}: {name} must be { data: Float32Array, shape: number[] }, got {got}"},
    {"tensor_data", "{op}: {name}.data must be a Float32Array, got {got}"},
    {"shape_list", "{op}: {name}.shape must be an array of numbers, got {got}"},
    {"mask", "{op}: mask must be { data: Uint8Array | Float32Array, shape: number[] }, got {got}"},
    {"mask_data", "{op}: mask.data must be a Uint8Array (1 = attend) or a Float32Array (additive), got {got}"},
    // Its shape and values (checked in C++, where the shape is read).
    {"shape_entry", "{op}: {name}.shape[{index}] must be a whole number from 0 to {max}, got {got}"},
    {"data_length", "{op}: {name}.data has {length} values but shape {shape} needs {count}"},
    {"rank", "{op}: {name} must have rank {ranks}, got shape {shape}"},
    {"empty", "{op}: {name} is empty (shape {shape})"},
    {"non_finite", "{op}: {name} has a non-finite value ({value}) at index {index}"},
    // Options.
    {"options", "{op}: options must be an object, got {got}"},
    {"option_type", "{op}: options.{name} must be a {type}, got {got}"},
    {"unknown_option", "{op}: unknown option '{name}' (known: {known})"},
    {"whole_number", "{op}: {name} must be a whole number from {lo} to {hi}, got {got}"},
    // options.into: arrays the caller gives for the results (checked by the package; their lengths in C++).
    {"into", "{op}: options.into must be an object of Float32Arrays ({known}), got {got}"},
    {"into_array", "{op}: options.into.{name} must be a Float32Array, got {got}"},
    {"into_length", "{op}: options.into.{name} has {length} values but the result {shape} needs {count}"},
    {"into_room", "{op}: options.into.{name} has room for {length} values but the maps {shape} need {count}"},
    {"into_unused", "{op}: options.into.{name} is given but the call returns no {name} ({why})"},
    {"into_shared", "{op}: options.into.{name} shares memory with {other}; give each result an array of its own"},
};

}  // namespace

const Template* table() { return kTable; }
std::size_t count() { return sizeof kTable / sizeof kTable[0]; }

std::string format(const char* kind, std::initializer_list<std::pair<const char*, std::string>> values) {
  const Template* t = nullptr;
  for (const Template& x : kTable)
    if (std::strcmp(x.kind, kind) == 0) t = &x;
  if (!t) throw std::logic_error(std::string("no message of kind ") + kind);
  std::string out;
  for (const char* p = t->text; *p;) {
    const char* close = *p == '{' ? std::strchr(p, '}') : nullptr;
    const std::string name = close ? std::string(p + 1, close) : "";
    const auto* value = close
                            ? std::find_if(values.begin(), values.end(), [&](const auto& v) { return name == v.first; })
                            : values.end();
    if (value != values.end()) {
      out += value->second;
      p = close + 1;
    } else {
      out += *p++;
    }
  }
  return out;
}

}  // namespace attnscope::messages
