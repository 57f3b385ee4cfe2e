#include "bench/serving/scenario_prompt.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"

namespace ninfer::bench {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::kNotFound, "{}: {} cannot be opened", what, path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool has_extension(const fs::path& p, const std::vector<std::string>& extensions) {
  const std::string name = p.filename().string();
  return std::any_of(extensions.begin(), extensions.end(), [&](const std::string& e) {
    return name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  });
}

}  // namespace

std::vector<std::string> corpus_files(const SourceCorpus& corpus) {
  std::vector<std::string> files;
  for (const std::string& dir : corpus.dirs) {
    std::vector<std::string> in_dir;
    const fs::path top = corpus.root / dir;
    std::error_code ec;
    if (!fs::is_directory(top, ec))
      fail(ErrorKind::kNotFound, "corpus: {} is not a folder (root {}, dir '{}')", top.string(),
           corpus.root.string(), dir);
    for (auto it = fs::recursive_directory_iterator(top, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file(ec) && has_extension(it->path(), corpus.extensions))
        in_dir.push_back(fs::relative(it->path(), corpus.root).generic_string());
    }
    std::sort(in_dir.begin(), in_dir.end());
    for (std::string& f : in_dir)
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(std::move(f));
  }
  return files;
}

std::string corpus_prompt(const SourceCorpus& corpus) {
  const std::vector<std::string> files = corpus_files(corpus);
  const size_t budget = static_cast<size_t>(corpus.chars);
  std::string text;
  for (const std::string& f : files) {
    if (text.size() >= budget) break;
    std::string body = read_text(corpus.root / f, "corpus");
    std::string part = "// ===== FILE: " + f + " =====\n" + body;
    if (!part.empty() && part.back() != '\n') part += '\n';
    const size_t room = budget - text.size();
    if (part.size() > room) {
      const size_t cut = part.rfind('\n', room);
      part = cut == std::string::npos ? std::string() : part.substr(0, cut + 1);
    }
    text += part;
  }
  if (text.size() < budget / 2)
    fail(ErrorKind::kNotFound, "corpus: the {} files under {} hold {} characters, fewer than half of the {} asked for",
         files.size(), corpus.root.string(), text.size(), budget);
  return text + "\n" + corpus.question;
}

std::string scenario_prompt(const Scenario& scenario) {
  if (scenario.corpus) return corpus_prompt(*scenario.corpus);
  std::string text = read_text(scenario.prompt_file, "scenario '" + scenario.id + "'");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty())
    fail(ErrorKind::kInvalidArgument, "scenario '{}': prompt file {} is empty", scenario.id,
         scenario.prompt_file.string());
  return text;
}

}  // namespace ninfer::bench
