// ninfer-serve's --tp gates: --tp N parses for the CPU backend; with --backend cuda (NCCL TP) and with --spec it is
// refused at start, naming the flags and saying it is not built yet.
#include <gtest/gtest.h>

#include "server/serve_options.h"

namespace ninfer::server {
namespace {

ParsedServeOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "ninfer-serve");
  return parse_serve_options(args, "model.ninfer", default_feature_gates());
}

TEST(TpServeOptions, TpRunsOnTheCpuBackendAndIsRefusedWithCudaOrSpec) {
  for (const char* backend : {"cpu", "auto"}) {
    ParsedServeOptions ok = parse({"--tp", "2", "--backend", backend});
    ASSERT_TRUE(ok.options) << ok.message;
    EXPECT_EQ(ok.options->tp, 2);
  }
  ParsedServeOptions cuda = parse({"--tp", "2", "--backend", "cuda"});
  EXPECT_FALSE(cuda.options);
  EXPECT_EQ(cuda.exit_code, 2);
  EXPECT_NE(cuda.message.find("--tp with --backend cuda"), std::string::npos) << cuda.message;
  EXPECT_NE(cuda.message.find("NCCL TP"), std::string::npos) << cuda.message;
  EXPECT_NE(cuda.message.find("not built yet"), std::string::npos) << cuda.message;
  ParsedServeOptions one = parse({"--tp", "1", "--backend", "cuda"});
  EXPECT_TRUE(one.options) << one.message;
  ParsedServeOptions spec = parse({"--tp", "2", "--spec", "mtp"});
  EXPECT_FALSE(spec.options);
  EXPECT_NE(spec.message.find("--spec with --tp"), std::string::npos) << spec.message;
}

}  // namespace
}  // namespace ninfer::server
