// The messages of the input checks that both sides of the JS edge give: one table, by kind. C++ formats them
// here; the bindings hand the same table to the package (messages()), whose checks (web/src/checks.ts) format
// theirs from it, so a message reads the same whichever side finds the fault. A template's {names} are filled
// in by the caller; a name it does not give stays as written (tested never to happen).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>

namespace attnscope::messages {

struct Template {
  const char* kind;
  const char* text;
};

// Every template, for the bindings to hand over whole.
const Template* table();
std::size_t count();

// The kind's text with each {name} replaced by its value. Throws std::logic_error for a kind not in the table.
std::string format(const char* kind, std::initializer_list<std::pair<const char*, std::string>> values);

}  // namespace attnscope::messages
