// Owns the CPU-backend flags the kernel benches of bench/backend share (--threads, --simd) and the backend options
// they give.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/backend/backend.h"

namespace ninfer::bench {

struct CpuBackendFlags {
  int threads = 2;
  std::string simd = "auto";

  void add_to(CLI::App& app, const char* threads_help = "backend threads") {
    app.add_option("--threads", threads, threads_help);
    app.add_option("--simd", simd, "auto | scalar | avx2");
  }
  CpuBackendOptions options() const {
    CpuBackendOptions o;
    o.threads = threads;
    o.simd = simd == "scalar" ? CpuSimd::kScalar : simd == "avx2" ? CpuSimd::kAvx2 : CpuSimd::kAuto;
    return o;
  }
};

}  // namespace ninfer::bench
