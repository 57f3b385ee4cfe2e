// Owns the UTF-8 boundary with the operating system: the command line as UTF-8, UTF-8 console output, and
// fopen by UTF-8 path (on Windows the wide Win32 / CRT calls; elsewhere the bytes pass through).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace ninfer {

// The program's arguments as UTF-8. On Windows main()'s argv is in the ANSI code page, which cannot hold a CJK
// file name on most systems; Utf8Args rebuilds them from the wide command line (GetCommandLineW). Elsewhere it
// copies argv. argv() stays valid as long as the object.
class Utf8Args {
 public:
  Utf8Args(int argc, char** argv);
  int argc() const { return static_cast<int>(args_.size()); }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> ptrs_;  // args_ then a null pointer
};

// Sets the console's output and input code pages to UTF-8 on Windows, so that UTF-8 text written to stdout/stderr
// (logs, file names, model output) shows as written. No-op elsewhere and when no console is attached.
void use_utf8_console();

// std::fopen with a UTF-8 path (_wfopen on Windows). Returns nullptr and sets errno as fopen does.
std::FILE* fopen_utf8(const std::string& utf8_path, const char* mode);

}  // namespace ninfer
