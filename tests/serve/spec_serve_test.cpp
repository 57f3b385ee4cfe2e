// ninfer-serve --spec mtp on the default model: the same greedy text as without speculation, and the acceptance
// counters in the response timings, the JSONL `spec` object and /metrics; a start on an artifact without the MTP
// section (or the draft head) fails naming it.
#include <fstream>
#include <regex>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "engine/pack/packer.h"
#include "tests/serve/serve_process.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

using testing::ChildGuard;

struct Served {
  nlohmann::json response;  // the chat completion
  std::string metrics;      // GET /metrics after it
  nlohmann::json jsonl;     // its JSONL line
};

Served serve_one(const std::vector<std::string>& extra, const testing::TempDir& dir, const std::string& name) {
  Served out;
  const std::string jsonl = dir.file(name + ".jsonl");
  const int port = testing::free_port();
  std::vector<std::string> args = {"--port", std::to_string(port), "--log-jsonl", jsonl, "--max-context", "1024",
                                   "--threads", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  ChildGuard guard;
  guard.pid = testing::spawn_serve(args, dir.file(name + ".log"));
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  cli.set_connection_timeout(1, 0);
  if (!testing::wait_ready(cli, guard.pid)) {
    ADD_FAILURE() << name << ": ninfer-serve did not become ready:\n" << testing::read_file(dir.file(name + ".log"));
    return out;
  }
  nlohmann::json body = {{"model", "ninfer-tiny-nvfp4"},
                         {"messages", {{{"role", "user"}, {"content", "Write a Python function that reverses a string."}}}},
                         {"max_tokens", 64},
                         {"temperature", 0}};
  auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  if (!res || res->status != 200) {
    ADD_FAILURE() << name << ": " << (res ? res->body : "no response");
    return out;
  }
  out.response = nlohmann::json::parse(res->body);
  auto m = cli.Get("/metrics");
  if (m) out.metrics = m->body;
  kill(guard.pid, SIGTERM);
  int status = 0;
  waitpid(guard.pid, &status, 0);
  guard.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << name << " exit status " << status;
  std::ifstream in(jsonl);
  std::string line;
  if (std::getline(in, line)) out.jsonl = nlohmann::json::parse(line);
  out.jsonl["log"] = testing::read_file(dir.file(name + ".log"));
  return out;
}

double metric(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(name + R"(\{[^}]*\} ([0-9.e+]+))"))) return -1;
  return std::stod(m[1]);
}

TEST(SpecServe, MtpGivesThePlainGreedyTextAndReportsAcceptance) {
  testing::TempDir dir;
  const Served plain = serve_one({}, dir, "plain");
  for (bool draft_head : {false, true}) {
    std::vector<std::string> flags = {"--spec", "mtp", "--draft-tokens", "3"};
    if (draft_head) flags.push_back("--lm-head-draft");
    const std::string name = draft_head ? "mtp_draft_head" : "mtp";
    const Served s = serve_one(flags, dir, name);
    ASSERT_TRUE(s.response.is_object()) << name;
    EXPECT_EQ(s.response["choices"][0]["message"], plain.response["choices"][0]["message"]) << name;
    EXPECT_EQ(s.response["usage"]["completion_tokens"], plain.response["usage"]["completion_tokens"]) << name;

    const nlohmann::json& t = s.response["timings"];
    ASSERT_TRUE(t.contains("draft_n")) << t.dump();
    const int64_t drafted = t["draft_n"], accepted = t["draft_n_accepted"];
    EXPECT_GT(drafted, 0);
    EXPECT_GT(accepted, 0);
    EXPECT_LE(accepted, drafted);
    EXPECT_EQ(t["spec"]["method"], "mtp");
    EXPECT_EQ(t["spec"]["draft_tokens"], 3);
    EXPECT_EQ(t["spec"]["head"], draft_head ? "draft_lm_head" : "lm_head");
    EXPECT_EQ(t["spec"]["accepted_per_pos"].size(), 3u);
    EXPECT_DOUBLE_EQ(t["spec"]["mean_acceptance_length"].get<double>(),
                     1.0 + static_cast<double>(accepted) / t["spec"]["steps"].get<double>());

    EXPECT_EQ(s.jsonl["spec"]["drafted"], drafted) << s.jsonl.dump();
    EXPECT_EQ(s.jsonl["spec"]["accepted"], accepted);
    EXPECT_EQ(s.jsonl["spec"]["accepted_per_pos"], t["spec"]["accepted_per_pos"]);
    EXPECT_EQ(metric(s.metrics, "vllm:spec_decode_num_draft_tokens_total"), static_cast<double>(drafted)) << s.metrics;
    EXPECT_EQ(metric(s.metrics, "vllm:spec_decode_num_accepted_tokens_total"), static_cast<double>(accepted));

    const std::string log = s.jsonl["log"];
    EXPECT_NE(log.find("speculative decoding: --spec mtp --draft-tokens 3"), std::string::npos) << log;
    EXPECT_NE(log.find(draft_head ? "draft_lm_head (2048 of 8192 rows)" : "lm_head (8192 of 8192 rows)"),
              std::string::npos)
        << log;
  }
  EXPECT_FALSE(plain.response["timings"].contains("draft_n"));
  EXPECT_FALSE(plain.jsonl.contains("spec"));
}

TEST(SpecServe, StartFailsNamingTheMissingSection) {
  testing::TempDir dir;
  for (bool with_mtp : {false, true}) {
    const auto hf = dir.path() / (with_mtp ? "hf_mtp" : "hf");
    testing::write_hf_dir(hf, testing::tiny_qwen35_config(),
                          testing::tiny_qwen35_tensors(testing::tiny_qwen35_config(), with_mtp));
    const std::string art = dir.file(with_mtp ? "mtp.ninfer" : "plain.ninfer");
    pack_artifact({.hf_dir = hf.string(), .output = art, .show_progress = false});
    std::vector<std::string> args = {"--model", art, "--port", std::to_string(testing::free_port()), "--spec", "mtp"};
    if (with_mtp) args.push_back("--lm-head-draft");
    const std::string log = dir.file(with_mtp ? "mtp.log" : "plain.log");
    ChildGuard guard;
    guard.pid = testing::spawn_serve(args, log);
    int status = 0;
    waitpid(guard.pid, &status, 0);
    guard.pid = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
    const std::string out = testing::read_file(log);
    EXPECT_NE(out.find(art), std::string::npos) << out;
    EXPECT_NE(out.find(with_mtp ? "draft_lm_head section" : "mtp section"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace ninfer
