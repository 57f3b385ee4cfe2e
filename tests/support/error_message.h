// Owns the tests' way to read an expected failure: the message of the ninfer::Error a callable throws.
#pragma once

#include <string>

#include "engine/core/error.h"

namespace ninfer::testing {

// The what() of the Error `f` throws, or "(no error)" when it returns normally (so a find() for the expected
// words fails). Other exception types propagate and fail the test.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace ninfer::testing
