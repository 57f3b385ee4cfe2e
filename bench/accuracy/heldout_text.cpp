#include "bench/accuracy/heldout_text.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace ninfer::bench {

HeldoutText load_heldout(const std::string& path, const Tokenizer& tokenizer) {
  std::ifstream in(path);
  if (!in) fail(ErrorKind::kNotFound, "held-out text {}: cannot open", path);
  const int32_t eot = tokenizer.require_token_id("<|endoftext|>");
  HeldoutText out;
  std::string line;
  for (int64_t lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty()) continue;
    nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
    if (rec.is_discarded() || !rec.is_object() || !rec.contains("text") || !rec["text"].is_string())
      fail(ErrorKind::kCorrupt, "held-out text {}:{}: not a JSON object with a string \"text\"", path, lineno);
    const std::string& text = rec["text"].get_ref<const std::string&>();
    const std::vector<int32_t> ids = tokenizer.encode_with_special(text);
    out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
    out.tokens.push_back(eot);
    ++out.documents;
    out.characters += static_cast<int64_t>(text.size());
  }
  if (out.documents == 0) fail(ErrorKind::kCorrupt, "held-out text {}: no documents", path);
  return out;
}

}  // namespace ninfer::bench
