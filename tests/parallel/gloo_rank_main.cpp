// One rank of a multi-process Gloo group for tests/parallel/gloo_group_test.cpp: joins the group and runs a scenario.
//   ninfer-test-gloo-rank RANK SIZE PORT SCENARIO JOIN_TIMEOUT_MS OP_TIMEOUT_MS
// Scenarios: "collectives" (every collective checked against values computed here; exact because every sum of the
// small multiples of 1/4 used is exact in any order), "vanish" (one all_reduce_sum, then the process ends without
// leaving the group), "reduce" (two all_reduce_sum: the second one waits for a rank that vanished). Exit codes: 0 done, 1 a check failed, 2 joining failed, 3 a collective failed; messages on stderr.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/core/error.h"
#include "engine/parallel/gloo_group.h"

namespace {

using ninfer::Communicator;
using ninfer::Tensor;

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "check failed: %s\n", what.c_str());
    ++failures;
  }
}

Tensor host(std::vector<float>& v, int64_t rows, int64_t cols, int64_t stride) {
  return Tensor::strided(v.data(), ninfer::DType::kF32, {rows, cols}, {stride, 1}, ninfer::Device::kCpu);
}

void collectives(Communicator& comm, ninfer::Backend& backend) {
  const int r = comm.rank(), n = comm.size();
  // all_reduce_sum, packed: x_r[i] = (r + 1) · (i mod 17) / 4.
  {
    std::vector<float> x(3 * 37);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(r + 1) * float(i % 17) * 0.25f;
    comm.all_reduce_sum(host(x, 3, 37, 37), backend);
    const float ranks = float(n * (n + 1) / 2);
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] != ranks * float(i % 17) * 0.25f) {
        expect(false, "all_reduce_sum packed, element " + std::to_string(i) + " = " + std::to_string(x[i]));
        break;
      }
  }
  // all_reduce_sum, rows at a stride of 16 with 10 used: the padding is left alone.
  {
    std::vector<float> x(4 * 16, -7.0f);
    for (int row = 0; row < 4; ++row)
      for (int c = 0; c < 10; ++c) x[size_t(row * 16 + c)] = float(r * 4 + row + c);
    comm.all_reduce_sum(host(x, 4, 10, 16), backend);
    for (int row = 0; row < 4; ++row)
      for (int c = 0; c < 16; ++c) {
        float want = -7.0f;
        if (c < 10) {
          want = 0;
          for (int q = 0; q < n; ++q) want += float(q * 4 + row + c);
        }
        expect(x[size_t(row * 16 + c)] == want, "all_reduce_sum strided row " + std::to_string(row) + " col " +
                                                    std::to_string(c));
      }
  }
  // Back to back, and one of 2^20 elements (several Gloo segments).
  for (int it = 0; it < 20; ++it) {
    std::vector<float> x(5, float(it + r));
    comm.all_reduce_sum(host(x, 1, 5, 5), backend);
    float want = 0;
    for (int q = 0; q < n; ++q) want += float(it + q);
    expect(x[4] == want, "all_reduce_sum back to back " + std::to_string(it));
  }
  {
    std::vector<float> x(size_t(1) << 20);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float((i + size_t(r)) % 64) * 0.5f;
    comm.all_reduce_sum(host(x, 1, int64_t(x.size()), int64_t(x.size())), backend);
    bool ok = true;
    for (size_t i = 0; i < x.size() && ok; ++i) {
      float want = 0;
      for (int q = 0; q < n; ++q) want += float((i + size_t(q)) % 64) * 0.5f;
      ok = x[i] == want;
    }
    expect(ok, "all_reduce_sum of 2^20 elements");
  }
  // all_gather of uneven widths: rank q brings [2, 3 + q] of 1000q + 10·row + col.
  {
    const int64_t w = 3 + r;
    std::vector<float> in(size_t(2 * w));
    for (int64_t row = 0; row < 2; ++row)
      for (int64_t c = 0; c < w; ++c) in[size_t(row * w + c)] = float(1000 * r + 10 * row + c);
    int64_t width = 0;
    for (int q = 0; q < n; ++q) width += 3 + q;
    std::vector<float> out(size_t(2 * width), -1.0f);
    comm.all_gather(host(out, 2, width, width), host(in, 2, w, w), backend);
    for (int64_t row = 0; row < 2; ++row) {
      int64_t col = 0;
      for (int q = 0; q < n; ++q)
        for (int64_t c = 0; c < 3 + q; ++c, ++col)
          expect(out[size_t(row * width + col)] == float(1000 * q + 10 * row + c),
                 "all_gather row " + std::to_string(row) + " col " + std::to_string(col));
    }
  }
  // broadcast from every root.
  for (int root = 0; root < n; ++root) {
    std::vector<float> x(9);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(100 * r + int(i));
    comm.broadcast(host(x, 1, 9, 9), root, backend);
    for (size_t i = 0; i < x.size(); ++i)
      expect(x[i] == float(100 * root + int(i)), "broadcast from " + std::to_string(root));
  }
  // A rank bringing another shape is refused on every rank, and the group still works afterwards.
  if (n > 1) {
    std::vector<float> x(r == 1 ? 5 : 4, 1.0f);
    bool refused = false;
    try {
      comm.all_reduce_sum(host(x, 1, int64_t(x.size()), int64_t(x.size())), backend);
    } catch (const ninfer::Error& e) {
      refused = std::string(e.what()).find("rank 1 brings [1, 5] but rank 0 [1, 4]") != std::string::npos;
      if (!refused) std::fprintf(stderr, "unexpected message: %s\n", e.what());
    }
    expect(refused, "a shape mismatch refused on rank " + std::to_string(r));
    std::vector<float> y(3, 1.0f);
    comm.all_reduce_sum(host(y, 1, 3, 3), backend);
    expect(y[0] == float(n), "all_reduce_sum after a refused shape");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s RANK SIZE PORT SCENARIO JOIN_TIMEOUT_MS OP_TIMEOUT_MS\n", argv[0]);
    return 64;
  }
  ninfer::GlooGroupOptions options;
  options.rank = std::atoi(argv[1]);
  options.size = std::atoi(argv[2]);
  options.master_port = std::atoi(argv[3]);
  const std::string scenario = argv[4];
  options.join_timeout = std::chrono::milliseconds(std::atoi(argv[5]));
  options.op_timeout = std::chrono::milliseconds(std::atoi(argv[6]));
  std::unique_ptr<ninfer::GlooGroup> group;
  try {
    group = std::make_unique<ninfer::GlooGroup>(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "join failed: %s\n", e.what());
    return 2;
  }
  auto backend = ninfer::make_backend(ninfer::BackendSelection{.kind = ninfer::BackendKind::kCpu, .threads = 1});
  try {
    if (scenario == "collectives") {
      collectives(group->communicator(), *backend);
    } else if (scenario == "reduce" || scenario == "vanish") {
      std::vector<float> x(1024, 1.0f);
      group->communicator().all_reduce_sum(host(x, 1, 1024, 1024), *backend);
      if (scenario == "vanish") std::_Exit(0);  // no orderly teardown of its connections
      group->communicator().all_reduce_sum(host(x, 1, 1024, 1024), *backend);
    } else {
      std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
      return 64;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collective failed: %s\n", e.what());
    return 3;
  }
  return failures == 0 ? 0 : 1;
}
