// ninfer-serve's --tp and --nnodes flags: --tp N parses for the CPU and CUDA backends, with --spec and with prefix
// reuse (on by default); --nnodes N is one rank per process, on the CPU or on the one GPU --devices names.
#include <gtest/gtest.h>

#include "server/serve_engine_options.h"
#include "server/serve_options.h"

namespace ninfer::server {
namespace {

ParsedServeOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "ninfer-serve");
  return parse_serve_options(args, "model.ninfer", default_feature_gates());
}

TEST(TpServeOptions, TpRunsOnTheCpuAndCudaBackendsWithSpecAndPrefixReuse) {
  for (const char* backend : {"cpu", "auto"}) {
    ParsedServeOptions ok = parse({"--tp", "2", "--backend", backend});
    ASSERT_TRUE(ok.options) << ok.message;
    EXPECT_EQ(ok.options->tp, 2);
  }
  ParsedServeOptions cuda = parse({"--tp", "2", "--backend", "cuda", "--devices", "1,0"});
  ASSERT_TRUE(cuda.options) << cuda.message;
  EXPECT_EQ(cuda.options->devices, (std::vector<int>{1, 0}));
  ParsedServeOptions one = parse({"--tp", "1", "--backend", "cuda"});
  EXPECT_TRUE(one.options) << one.message;
  for (const char* method : {"mtp", "dflash2"}) {
    ParsedServeOptions spec = parse({"--tp", "2", "--backend", "cpu", "--spec", method});
    ASSERT_TRUE(spec.options) << spec.message;
    EXPECT_EQ(spec.options->tp, 2);
  }
  ParsedServeOptions prefix = parse({"--tp", "2", "--backend", "cpu"});
  ASSERT_TRUE(prefix.options) << prefix.message;
  EXPECT_TRUE(engine_options_from(*prefix.options, ModelConfig{}).prefix_cache);  // prefix reuse stays on under TP
}

TEST(TpServeOptions, NnodesIsOneRankPerProcess) {
  ParsedServeOptions ok = parse({"--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.5", "--master-port",
                                 "29400", "--join-timeout", "20"});
  ASSERT_TRUE(ok.options) << ok.message;
  EXPECT_EQ(ok.options->tp, 2);
  EXPECT_EQ(ok.options->node_rank, 1);
  EXPECT_EQ(ok.options->master_addr, "10.0.0.5");
  EXPECT_EQ(ok.options->master_port, 29400);
  EXPECT_EQ(ok.options->join_timeout_s, 20);
  EXPECT_TRUE(parse({"--nnodes", "2", "--tp", "2"}).options);
  const auto refused = [](std::vector<std::string> args, const std::string& says) {
    ParsedServeOptions p = parse(std::move(args));
    EXPECT_FALSE(p.options);
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.message.find(says), std::string::npos) << p.message;
  };
  refused({"--nnodes", "2", "--tp", "4"}, "--tp 4 with --nnodes 2: each process runs one rank");
  refused({"--nnodes", "2", "--node-rank", "2"}, "--node-rank 2: outside --nnodes 2");
  refused({"--node-rank", "1"}, "--node-rank 1: needs --nnodes greater than 1");
  // CUDA ranks in several processes: each names its own GPU (one device, default 0).
  ParsedServeOptions cuda = parse({"--nnodes", "2", "--node-rank", "1", "--backend", "cuda", "--devices", "3"});
  ASSERT_TRUE(cuda.options) << cuda.message;
  EXPECT_EQ(cuda.options->devices, (std::vector<int>{3}));
  EXPECT_EQ(cuda.options->tp, 2);
  EXPECT_TRUE(parse({"--nnodes", "2", "--backend", "cuda"}).options);
  refused({"--nnodes", "2", "--backend", "cuda", "--devices", "0,1"},
          "--devices: lists 2 device(s) but with --nnodes each process runs one rank");
}

}  // namespace
}  // namespace ninfer::server
