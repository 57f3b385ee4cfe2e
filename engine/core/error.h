// Owns ninfer's error type: one exception class with a kind and a message that carries its context.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ninfer {

enum class ErrorKind {
  kInvalidArgument,  // a caller passed a bad value (flag, request field, option)
  kNotFound,         // a file, tensor or key that must exist does not
  kCorrupt,          // an input file is malformed (artifact, safetensors, JSON)
  kUnsupported,      // valid input that this build does not handle (dtype, architecture, version)
  kIo,               // the operating system refused a read, write, map or rename
  kOutOfMemory,      // a memory plan or allocation cannot be satisfied
  kInternal,         // a broken invariant inside ninfer
};

std::string_view error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message) : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// Throws ninfer::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(kind, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ninfer

// Invariant check for conditions that only a bug in ninfer can break.
#define NINFER_CHECK(cond)                                                                       \
  do {                                                                                           \
    if (!(cond)) ::ninfer::fail(::ninfer::ErrorKind::kInternal, "check failed: {} ({}:{})", #cond, \
                                __FILE__, __LINE__);                                             \
  } while (0)
