// Owns the pack tests' way to read an expected failure: pack_artifact's error message, and no output left behind.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "engine/artifact/mapped_file.h"
#include "engine/core/error.h"
#include "engine/pack/packer.h"

namespace ninfer::testing {

// The what() of the Error pack_artifact(o) throws (checking that the failed pack left no o.output), or "" when the
// pack succeeds.
inline std::string pack_error(const PackOptions& o) {
  try {
    pack_artifact(o);
  } catch (const Error& e) {
    EXPECT_FALSE(std::filesystem::exists(path_from_utf8(o.output))) << "a failed pack left " << o.output;
    return e.what();
  }
  return "";
}

}  // namespace ninfer::testing
