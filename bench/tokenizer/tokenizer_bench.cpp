// Encode throughput bench: single thread, a JSONL corpus of {"t": text} lines, a tokenizer.json.
//   tokenizer_bench TOKENIZER_JSON CORPUS_JSONL [REPEATS] [IDS_OUT_JSONL]
// Prints one JSON line: bytes, tokens, seconds per pass (best of REPEATS after one warm-up pass), MB/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

std::string slurp(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) ninfer::fail(ninfer::ErrorKind::kIo, "cannot open {}", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON CORPUS_JSONL [REPEATS]\n", argv[0]);
    return 2;
  }
  int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  try {
    auto t0 = std::chrono::steady_clock::now();
    ninfer::Tokenizer tok = ninfer::Tokenizer::from_json(slurp(argv[1]));
    double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<std::string> docs;
    std::ifstream f(argv[2], std::ios::binary);
    std::string line;
    size_t bytes = 0;
    while (std::getline(f, line)) {
      if (line.empty()) continue;
      docs.push_back(nlohmann::json::parse(line)["t"].get<std::string>());
      bytes += docs.back().size();
    }
    auto pass = [&](uint64_t* tokens, uint64_t* checksum) {
      std::vector<int32_t> ids;
      uint64_t n = 0, sum = 0;
      for (const auto& d : docs) {
        ids.clear();
        tok.encode_append(d, ids);
        n += ids.size();
        for (int32_t id : ids) sum = sum * 31 + static_cast<uint64_t>(id);
      }
      *tokens = n;
      *checksum = sum;
    };
    uint64_t tokens = 0, checksum = 0;
    auto c0 = std::chrono::steady_clock::now();
    pass(&tokens, &checksum);  // cold: empty piece cache
    double cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      auto s = std::chrono::steady_clock::now();
      pass(&tokens, &checksum);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
    }
    if (argc > 4) {  // the ids of every document, one JSON array per line (for checking against HF)
      std::ofstream out(argv[4], std::ios::binary);
      for (const auto& d : docs) out << nlohmann::json(tok.encode(d)).dump() << "\n";
    }
    std::printf(
        "{\"impl\": \"ninfer\", \"docs\": %zu, \"bytes\": %zu, \"tokens\": %llu, \"checksum\": %llu, \"load_s\": %.3f, "
        "\"cold_s\": %.4f, \"best_s\": %.4f, \"mb_per_s\": %.2f}\n",
        docs.size(), bytes, static_cast<unsigned long long>(tokens), static_cast<unsigned long long>(checksum), load_s,
        cold, best, bytes / best / 1e6);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
