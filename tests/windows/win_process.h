// Owns starting a program from a Windows test: CreateProcessW with a UTF-8 command line turned wide, the child's
// output in a file, its own process group (for Ctrl-Break), and waiting for its exit with a deadline.
#pragma once

#include <windows.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "engine/artifact/mapped_file.h"

namespace ninfer::testing {

// Quotes one argument the way CommandLineToArgvW splits it back (backslashes doubled only before a quote).
inline std::wstring quote_arg(const std::wstring& a) {
  if (!a.empty() && a.find_first_of(L" \t\"") == std::wstring::npos) return a;
  std::wstring q = L"\"";
  size_t slashes = 0;
  for (wchar_t c : a) {
    if (c == L'\\') {
      ++slashes;
    } else {
      q.append(c == L'"' ? 2 * slashes + 1 : slashes, L'\\');
      slashes = 0;
    }
    q.push_back(c);
  }
  q.append(2 * slashes, L'\\');
  q.push_back(L'"');
  return q;
}

// A started child; killed at destruction when it is still running (a failed ASSERT leaves none behind).
class WinChild {
 public:
  // Starts `exe` with `args` (UTF-8), stdout and stderr into `log` (UTF-8 path), in a new process group.
  WinChild(const std::string& exe, const std::vector<std::string>& args, const std::string& log) {
    std::wstring cmd = quote_arg(path_from_utf8(exe).wstring());
    for (const std::string& a : args) cmd += L" " + quote_arg(path_from_utf8(a).wstring());
    SECURITY_ATTRIBUTES sa{sizeof(sa), nullptr, TRUE};
    HANDLE out = CreateFileW(path_from_utf8(log).wstring().c_str(), GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
                             &sa, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
    STARTUPINFOW si{};
    si.cb = sizeof(si);
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.hStdOutput = out;
    si.hStdError = out;
    started_ = CreateProcessW(nullptr, cmd.data(), nullptr, nullptr, TRUE, CREATE_NEW_PROCESS_GROUP, nullptr, nullptr,
                              &si, &pi_) != 0;
    error_ = started_ ? 0 : GetLastError();
    if (out != INVALID_HANDLE_VALUE) CloseHandle(out);
  }
  ~WinChild() {
    if (!started_) return;
    if (WaitForSingleObject(pi_.hProcess, 0) == WAIT_TIMEOUT) TerminateProcess(pi_.hProcess, 99);
    CloseHandle(pi_.hThread);
    CloseHandle(pi_.hProcess);
  }
  WinChild(const WinChild&) = delete;
  WinChild& operator=(const WinChild&) = delete;

  bool started() const { return started_; }
  DWORD start_error() const { return error_; }
  DWORD pid() const { return pi_.dwProcessId; }
  // The exit code once the child has exited, or nothing when `timeout` passes first.
  std::optional<DWORD> wait(std::chrono::milliseconds timeout) const {
    if (WaitForSingleObject(pi_.hProcess, static_cast<DWORD>(timeout.count())) != WAIT_OBJECT_0) return std::nullopt;
    DWORD code = 0;
    GetExitCodeProcess(pi_.hProcess, &code);
    return code;
  }

 private:
  PROCESS_INFORMATION pi_{};
  bool started_ = false;
  DWORD error_ = 0;
};

}  // namespace ninfer::testing
