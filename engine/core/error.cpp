#include "engine/core/error.h"

namespace ninfer {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kNotFound: return "not found";
    case ErrorKind::kCorrupt: return "corrupt input";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kIo: return "i/o error";
    case ErrorKind::kOutOfMemory: return "out of memory";
    case ErrorKind::kInternal: return "internal error";
  }
  return "error";
}

}  // namespace ninfer
