#include "engine/pack/draft_vocab.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/artifact/mapped_file.h"
#include "engine/core/error.h"

namespace ninfer {

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(ErrorKind::kIo, "{}: cannot open corpus file", path_to_utf8(p));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool corpus_extension(const fs::path& p) {
  static const std::set<std::string> kExt = {".py", ".h", ".hpp", ".hh", ".c", ".cc", ".cpp", ".txt", ".md", ".rst"};
  return kExt.count(p.extension().string()) > 0;
}

void add_file(const fs::path& p, std::vector<std::string>& docs) {
  std::string text = read_all(p);
  if (p.extension() != ".jsonl") {
    docs.push_back(std::move(text));
    return;
  }
  std::istringstream lines(text);
  std::string line;
  for (uint64_t n = 1; std::getline(lines, line); ++n) {
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e400
      fail(ErrorKind::kCorrupt, "{}: line {}: invalid JSON: {}", path_to_utf8(p), n, e.what());
    }
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
      fail(ErrorKind::kCorrupt, "{}: line {} has no string \"text\"", path_to_utf8(p), n);
    docs.push_back(j["text"].get<std::string>());
  }
}

}  // namespace

std::vector<std::string> read_draft_corpus(const std::vector<std::string>& paths) {
  std::vector<std::string> docs;
  for (const std::string& utf8 : paths) {
    fs::path p = path_from_utf8(utf8);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) fail(ErrorKind::kIo, "{}: cannot walk: {}", utf8, ec.message());
        if (it->is_regular_file(ec) && corpus_extension(it->path())) files.push_back(it->path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) add_file(f, docs);
    } else if (fs::is_regular_file(p, ec)) {
      add_file(p, docs);
    } else {
      fail(ErrorKind::kNotFound, "--draft-corpus {}: no such file or directory", utf8);
    }
  }
  if (docs.empty()) fail(ErrorKind::kInvalidArgument, "--draft-corpus: no corpus text found in the given paths");
  return docs;
}

DraftVocab select_draft_vocab(const Tokenizer& tokenizer, const std::vector<std::string>& documents,
                              std::string_view chat_template, const std::vector<int32_t>& eos_ids, int64_t n) {
  const int32_t vocab = tokenizer.vocab_size();
  if (n <= 0 || n > vocab)
    fail(ErrorKind::kInvalidArgument, "--draft-vocab {}: must be in [1, {}] (the tokenizer's vocabulary)", n, vocab);
  DraftVocab out;
  std::vector<uint64_t> counts(static_cast<size_t>(vocab), 0);
  std::vector<int32_t> ids;
  for (const std::string& doc : documents) {
    ids.clear();
    tokenizer.encode_append(doc, ids);
    for (int32_t id : ids) counts[static_cast<size_t>(id)]++;
    out.corpus_tokens += ids.size();
  }
  std::set<int32_t> forced;
  for (const AddedToken& t : tokenizer.added_tokens())
    if (!t.content.empty() && chat_template.find(t.content) != std::string_view::npos) forced.insert(t.id);
  for (int32_t id : eos_ids) {
    if (id < 0 || id >= vocab) fail(ErrorKind::kCorrupt, "eos token id {} is outside the vocabulary [0, {})", id, vocab);
    forced.insert(id);
  }
  if (static_cast<int64_t>(forced.size()) > n)
    fail(ErrorKind::kInvalidArgument, "--draft-vocab {}: smaller than the {} control tokens it must include", n,
         forced.size());
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  for (int32_t i = 0; i < vocab; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return counts[static_cast<size_t>(a)] > counts[static_cast<size_t>(b)]; });
  std::set<int32_t> chosen = forced;
  for (int32_t id : order) {
    if (static_cast<int64_t>(chosen.size()) == n) break;
    chosen.insert(id);
  }
  out.ids.assign(chosen.begin(), chosen.end());
  out.forced.assign(forced.begin(), forced.end());
  for (int32_t id : out.ids) out.covered_tokens += counts[static_cast<size_t>(id)];
  return out;
}

void plan_draft_lm_head(const DraftVocab& vocab, const PlannedTensor& lm_head, TensorPlan& plan) {
  const uint64_t elem = dtype_element_bytes(lm_head.dtype);
  if (elem == 0 || lm_head.shape.size() != 2 || lm_head.bytes.empty())
    fail(ErrorKind::kUnsupported, "{}: the draft head copies rows of a plain [vocab, hidden] lm_head; this one is {} [{}]",
         lm_head.origin, dtype_name(lm_head.dtype), lm_head.shape.size());
  const int64_t rows = lm_head.shape[0], hidden = lm_head.shape[1];
  for (int32_t id : vocab.ids)
    if (id >= rows)
      fail(ErrorKind::kCorrupt, "{}: draft id {} is past the lm_head's {} rows", lm_head.origin, id, rows);
  const int64_t n = static_cast<int64_t>(vocab.ids.size());
  std::string id_bytes(vocab.ids.size() * 4, '\0');
  std::memcpy(id_bytes.data(), vocab.ids.data(), id_bytes.size());
  const std::string origin = "--draft-vocab from " + lm_head.origin;
  // A draft head the source already has (a re-pack of an artifact with one) is rebuilt, not kept.
  auto put = [&plan](PlannedTensor t) {
    if (const PlannedTensor* old = plan.find(t.name)) {
      spdlog::warn("--draft-vocab replaces '{}' from {}", t.name, old->origin);
      plan.replace(std::move(t));
    } else {
      plan.add(std::move(t));
    }
  };
  put({"draft_lm_head.ids", "draft_lm_head", DType::kI32, {n}, origin, {},
            [id_bytes](const ByteSink& sink) { sink(std::as_bytes(std::span(id_bytes.data(), id_bytes.size()))); }});
  const std::span<const std::byte> src = lm_head.bytes;
  const std::vector<int32_t> ids = vocab.ids;
  const uint64_t row_bytes = static_cast<uint64_t>(hidden) * elem;
  put({"draft_lm_head.weight", "draft_lm_head", lm_head.dtype, {n, hidden}, origin, {},
            [src, ids, row_bytes](const ByteSink& sink) {
              for (int32_t id : ids) sink(src.subspan(static_cast<uint64_t>(id) * row_bytes, row_bytes));
            }});
}

}  // namespace ninfer
