#include "engine/core/os_utf8.h"

#include "engine/artifact/mapped_file.h"
#include "engine/core/error.h"

#ifdef _WIN32
#include <windows.h>
#include <shellapi.h>
#endif

namespace ninfer {

#ifdef _WIN32

namespace {
std::string wide_to_utf8(const wchar_t* w) {
  const int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, nullptr, 0, nullptr, nullptr);
  if (n <= 0) fail(ErrorKind::kInvalidArgument, "command line: an argument is not valid UTF-16 (Windows error {})",
                   GetLastError());
  std::string s(static_cast<size_t>(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, w, -1, s.data(), n, nullptr, nullptr);
  s.resize(static_cast<size_t>(n) - 1);  // the terminating NUL
  return s;
}
}  // namespace

Utf8Args::Utf8Args(int, char**) {
  int n = 0;
  wchar_t** wargv = CommandLineToArgvW(GetCommandLineW(), &n);
  if (!wargv) fail(ErrorKind::kInternal, "command line: CommandLineToArgvW failed (Windows error {})", GetLastError());
  try {
    for (int i = 0; i < n; ++i) args_.push_back(wide_to_utf8(wargv[i]));
  } catch (...) {
    LocalFree(wargv);
    throw;
  }
  LocalFree(wargv);
  for (std::string& a : args_) ptrs_.push_back(a.data());
  ptrs_.push_back(nullptr);  // argv()[argc()], as in main()
}

void use_utf8_console() {
  SetConsoleOutputCP(CP_UTF8);
  SetConsoleCP(CP_UTF8);
}

std::FILE* fopen_utf8(const std::string& utf8_path, const char* mode) {
  const std::wstring wmode(mode, mode + std::char_traits<char>::length(mode));  // modes are ASCII
  return _wfopen(path_from_utf8(utf8_path).wstring().c_str(), wmode.c_str());
}

#else

Utf8Args::Utf8Args(int argc, char** argv) : args_(argv, argv + argc) {
  for (std::string& a : args_) ptrs_.push_back(a.data());
  ptrs_.push_back(nullptr);
}

void use_utf8_console() {}

std::FILE* fopen_utf8(const std::string& utf8_path, const char* mode) { return std::fopen(utf8_path.c_str(), mode); }

#endif

}  // namespace ninfer
