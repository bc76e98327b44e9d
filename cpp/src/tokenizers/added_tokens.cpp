#include "tokenizers/added_tokens.hpp"

#include "tokenizers/pieces.hpp"

namespace attnscope::tokenizers {

void AddedTokens::add(Token t) {
  std::int32_t node = 0;
  for (unsigned char c : t.content) {
    auto it = nodes_[node].next.find(c);
    if (it == nodes_[node].next.end()) {
      nodes_.push_back({});
      it = nodes_[node].next.emplace(c, static_cast<std::int32_t>(nodes_.size() - 1)).first;
    }
    node = it->second;
  }
  nodes_[node].token = static_cast<std::int32_t>(tokens_.size());
  tokens_.push_back(std::move(t));
}

std::vector<std::pair<std::string, std::int32_t>> AddedTokens::split(const std::string& text) const {
  std::vector<std::pair<std::string, std::int32_t>> out;
  std::size_t start = 0, i = 0;
  while (i < text.size()) {
    std::int32_t node = 0, match = -1;
    for (std::size_t j = i; j < text.size(); ++j) {
      const auto it = nodes_[node].next.find(static_cast<unsigned char>(text[j]));
      if (it == nodes_[node].next.end()) break;
      node = it->second;
      if (nodes_[node].token >= 0) match = nodes_[node].token;
    }
    if (match < 0) {
      ++i;
      continue;
    }
    if (i > start) out.emplace_back(text.substr(start, i - start), -1);
    out.emplace_back(tokens_[match].content, match);
    start = i += tokens_[match].content.size();
  }
  if (start < text.size()) out.emplace_back(text.substr(start), -1);
  return out;
}

void strip_beside_added(std::vector<std::pair<std::string, std::int32_t>>& sections, const AddedTokens& added) {
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].second < 0) continue;
    const auto& t = added[sections[i].second];
    if (t.lstrip && i > 0) trim_js_space(sections[i - 1].first, false, true);
    if (t.rstrip && i + 1 < sections.size()) trim_js_space(sections[i + 1].first, true, false);
  }
}

}  // namespace attnscope::tokenizers
