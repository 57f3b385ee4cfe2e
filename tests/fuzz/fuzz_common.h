// Owns what the libFuzzer targets share: the entry point's signature, a check that aborts with a message, and
// a scratch file for parsers that read from a path.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#define NINFER_FUZZ_TARGET extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)

namespace ninfer::fuzz {

// A broken invariant: print it and abort (libFuzzer keeps the input as a crash).
[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz invariant broken: %s %.*s\n", what, static_cast<int>(detail.size()),
               detail.empty() ? "" : detail.data());
  std::abort();
}
#define NINFER_FUZZ_CHECK(cond, ...) \
  do {                               \
    if (!(cond)) ::ninfer::fuzz::fail(#cond, ##__VA_ARGS__); \
  } while (0)

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// One scratch file per process (in $TMPDIR or /tmp), removed when the process exits normally (a crash or a kill
// leaves it behind: scripts/fuzz.sh points TMPDIR into build-fuzz/).
struct ScratchFile {
  std::string path;
  ~ScratchFile() { std::remove(path.c_str()); }
};

// Writes the input to the scratch file and returns its path.
inline const std::string& write_scratch(const uint8_t* data, size_t size) {
  static const ScratchFile file{[] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/ninfer-fuzz-" + std::to_string(::getpid()) + ".bin";
  }()};
  const std::string& path = file.path;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  return path;
}

// The embedded default model, whose tokenizer.json and chat template the tokenizer targets use.
inline std::string default_model_path() {
  if (const char* p = std::getenv("NINFER_FUZZ_MODEL"); p && *p) return p;
  return std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer";
}

}  // namespace ninfer::fuzz
