// The embedded default model through the real ninfer-serve binary: no --model, a chat request gets a
// reasoning block and an answer, and the JSONL line is written.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/artifact/artifact.h"
#include "engine/tokenizer/reasoning_budget.h"
#include "tests/serve/serve_process.h"
#include "tests/support/test_files.h"

namespace ninfer {
namespace {

using testing::ChildGuard;
using testing::free_port;

// A prompt whose greedy thinking on the default model runs past the default budget when nothing stops it.
constexpr const char* kLongThinker = "What is 2+2?";

TEST(DefaultModel, ServesAChatWithReasoningAndContentAndLogsJsonl) {
  testing::TempDir dir;
  const std::string jsonl = dir.file("timings.jsonl");
  const std::string bin = std::string(NINFER_BINARY_DIR) + "/apps/ninfer-serve";
  const int port = free_port();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  ChildGuard guard;
  if (pid == 0) {
    // The reasoning budget makes the answer follow the think block whatever the model would do.
    std::string p = std::to_string(port);
    execl(bin.c_str(), bin.c_str(), "--port", p.c_str(), "--log-jsonl", jsonl.c_str(), "--reasoning-budget", "48",
          "--max-context", "1024", "--threads", "2", static_cast<char*>(nullptr));
    _exit(127);
  }
  guard.pid = pid;
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  cli.set_connection_timeout(1, 0);
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "ninfer-serve exited early, status " << status;
    auto h = cli.Get("/health");
    ready = h && h->status == 200;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(ready) << "ninfer-serve with the default model did not become ready";

  auto models = cli.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["id"], "ninfer-tiny-nvfp4");

  nlohmann::json body = {{"model", "ninfer-tiny-nvfp4"},
                         {"messages", {{{"role", "user"}, {"content", "Write a Python function that reverses a string."}}}},
                         {"max_tokens", 160},
                         {"temperature", 0}};
  auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto r = nlohmann::json::parse(res->body);
  const auto& msg = r["choices"][0]["message"];
  ASSERT_TRUE(msg["reasoning_content"].is_string()) << res->body;
  EXPECT_FALSE(msg["reasoning_content"].get<std::string>().empty()) << res->body;
  ASSERT_TRUE(msg["content"].is_string()) << res->body;
  EXPECT_FALSE(msg["content"].get<std::string>().empty()) << res->body;

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  guard.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit status " << status;
  std::ifstream in(jsonl);
  std::string line;
  ASSERT_TRUE(std::getline(in, line)) << "no JSONL line";
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["request_id"], r["id"]);
  EXPECT_EQ(j["completion_tokens"], r["usage"]["completion_tokens"]);
  EXPECT_GT(j["reasoning_tokens"].get<int64_t>(), 0);
  EXPECT_FALSE(j["empty_content"].get<bool>());
}

// Two identical chats: the second one's prompt comes from the prefix cache (usage and JSONL say how much) and its
// answer is the same; --no-prefix-reuse prefills both cold.
TEST(DefaultModel, ARepeatedChatReusesItsPrefixUnlessTurnedOff) {
  for (bool reuse : {true, false}) {
    testing::TempDir dir;
    const std::string jsonl = dir.file("timings.jsonl"), log = dir.file("serve.log");
    const int port = free_port();
    std::vector<std::string> args{"--port", std::to_string(port), "--log-jsonl", jsonl, "--max-context", "1024",
                                  "--threads", "2", "--kv-dtype", "int8"};
    if (!reuse) args.push_back("--no-prefix-reuse");
    ChildGuard guard;
    guard.pid = testing::spawn_serve(args, log);
    ASSERT_GT(guard.pid, 0);
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(120, 0);
    cli.set_connection_timeout(1, 0);
    ASSERT_TRUE(testing::wait_ready(cli, guard.pid)) << "ninfer-serve did not become ready";
    nlohmann::json body = {{"model", "ninfer-tiny-nvfp4"},
                           {"messages", {{{"role", "system"}, {"content", "You are a careful assistant who answers in "
                                                                          "short sentences and checks every step."}},
                                         {{"role", "user"}, {"content", "Explain what a prefix cache stores."}}}},
                           {"max_tokens", 8},
                           {"temperature", 0}};
    std::vector<nlohmann::json> answers;
    for (int i = 0; i < 2; ++i) {
      auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200) << res->body;
      answers.push_back(nlohmann::json::parse(res->body));
    }
    const int64_t prompt = answers[1]["usage"]["prompt_tokens"];
    const int64_t cached = answers[1]["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_EQ(answers[0]["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    EXPECT_EQ(answers[1]["choices"][0]["message"], answers[0]["choices"][0]["message"]);
    if (reuse) {
      EXPECT_EQ(cached, (prompt - 1) / 16 * 16) << "prompt " << prompt;  // whole blocks before the last prompt token
      EXPECT_GT(cached, 0);
    } else {
      EXPECT_EQ(cached, 0);
    }
    kill(guard.pid, SIGTERM);
    waitpid(guard.pid, nullptr, 0);
    guard.pid = -1;
    const std::vector<nlohmann::json> lines = testing::read_jsonl(jsonl);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[1]["cached_tokens"], cached);
    EXPECT_EQ(lines[1]["settings"]["prefix_reuse"], reuse);
    std::ifstream l(log);
    const std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(reuse ? "prefix reuse: on" : "prefix reuse: off (--no-prefix-reuse)"), std::string::npos) << text;
  }
}

// The artifact is mapped (MAP_PRIVATE) once at load: replacing the file by rename (how a deployment swaps a model,
// and what `mv`/`cp --remove-destination` do) leaves the mapped inode alive, so serving goes on with the same
// weights. Writing into the mapped file in place is not supported (docs/security.md).
TEST(DefaultModel, AnArtifactReplacedByRenameWhileServingIsNotNoticed) {
  testing::TempDir dir;
  const std::string model = dir.file("served.ninfer"), log = dir.file("serve.log");
  testing::write_file(model, testing::read_file(std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer"));
  const int port = free_port();
  ChildGuard guard;
  guard.pid = testing::spawn_serve({"--model", model, "--port", std::to_string(port), "--max-context", "512",
                                    "--threads", "2", "--no-prefix-reuse"},
                                   log);
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  cli.set_connection_timeout(1, 0);
  ASSERT_TRUE(testing::wait_ready(cli, guard.pid)) << testing::read_file(log);
  const nlohmann::json body = {{"prompt", "The weights of a served model"}, {"max_tokens", 24}, {"temperature", 0}};
  auto complete = [&] {
    auto res = cli.Post("/v1/completions", body.dump(), "application/json");
    EXPECT_TRUE(res);
    if (!res) return std::string();
    EXPECT_EQ(res->status, 200) << res->body;
    return nlohmann::json::parse(res->body)["choices"][0]["text"].get<std::string>();
  };
  const std::string before = complete();
  const std::string replacement = dir.file("replacement.ninfer");
  testing::write_file(replacement, std::string(4096, '\x5a'));  // not an artifact at all
  ASSERT_EQ(std::rename(replacement.c_str(), model.c_str()), 0);
  EXPECT_EQ(complete(), before);
  std::remove(model.c_str());  // and gone altogether
  EXPECT_EQ(complete(), before);
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  kill(guard.pid, SIGTERM);
  int status = 0;
  waitpid(guard.pid, &status, 0);
  guard.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// An engine step that throws (here the failpoint before the 3rd step: NINFER_FAILPOINTS, docs/security.md) ends
// the requests of that step with 500 and its JSONL line says error; the process keeps serving the next ones.
TEST(DefaultModel, AFailedEngineStepEndsItsRequestAndServingGoesOn) {
  testing::TempDir dir;
  const std::string jsonl = dir.file("timings.jsonl"), log = dir.file("serve.log");
  const int port = free_port();
  ChildGuard guard;
  guard.pid = testing::spawn_serve({"--port", std::to_string(port), "--max-context", "512", "--threads", "2",
                                    "--log-jsonl", jsonl},
                                   log, {"NINFER_FAILPOINTS=engine.step:3"});
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  cli.set_connection_timeout(1, 0);
  ASSERT_TRUE(testing::wait_ready(cli, guard.pid)) << testing::read_file(log);
  const nlohmann::json body = {{"prompt", "Fault tests check that"}, {"max_tokens", 12}, {"temperature", 0}};
  auto first = cli.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 500) << first->body;
  const nlohmann::json err = nlohmann::json::parse(first->body)["error"];
  EXPECT_EQ(err["code"], "internal_error") << first->body;
  EXPECT_NE(err["message"].get<std::string>().find("failpoint 'engine.step' fired"), std::string::npos) << first->body;
  auto second = cli.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200) << second->body;
  EXPECT_EQ(nlohmann::json::parse(second->body)["usage"]["completion_tokens"], 12);
  kill(guard.pid, SIGTERM);
  int status = 0;
  waitpid(guard.pid, &status, 0);
  guard.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::vector<nlohmann::json> lines = testing::read_jsonl(jsonl);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["stop_reason"], "error");
  EXPECT_EQ(lines[1]["stop_reason"], "output_limit");
  EXPECT_NE(testing::read_file(log).find("engine step failed: failpoint 'engine.step' fired (hit 3)"), std::string::npos);
}

// The request of README.md's "Then, for example", as the README writes it.
nlohmann::json readme_example_request() {
  const std::string readme = testing::read_file(std::string(NINFER_SOURCE_ROOT) + "/README.md");
  const size_t at = readme.find("-d '{\"model\"");
  EXPECT_NE(at, std::string::npos) << "README.md has no example request";
  if (at == std::string::npos) return nullptr;
  const size_t begin = at + 4, end = readme.find("}'", begin);
  return nlohmann::json::parse(readme.substr(begin, end + 1 - begin));
}

int64_t default_model_budget() {
  const std::string path = std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny-nvfp4.ninfer";
  return generation_reasoning_budget(Artifact::open(path).metadata()["generation"], path).value_or(-1);
}

struct Served {
  testing::TempDir dir;
  std::string log = dir.file("serve.log");
  ChildGuard guard;
  std::unique_ptr<httplib::Client> cli;
  explicit Served(std::vector<std::string> args) {
    const int port = free_port();
    args.insert(args.end(), {"--port", std::to_string(port), "--max-context", "1024", "--threads", "2"});
    guard.pid = testing::spawn_serve(args, log);
    cli = std::make_unique<httplib::Client>("127.0.0.1", port);
    cli->set_read_timeout(120, 0);
    cli->set_connection_timeout(1, 0);
  }
  nlohmann::json chat(const nlohmann::json& body) {
    auto res = cli->Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(res);
    if (!res) return nullptr;
    EXPECT_EQ(res->status, 200) << res->body;
    return nlohmann::json::parse(res->body);
  }
};

// Issue 21: the README's example request on the default model, sampled as the README sends it (the artifact's
// temperature 0.6), answers after its thinking for every seed: the artifact's default reasoning budget ends the think
// block in time, and the request cannot end inside it.
TEST(DefaultModel, TheReadmeExampleAnswersForEverySeed) {
  const nlohmann::json example = readme_example_request();
  ASSERT_TRUE(example.is_object());
  EXPECT_EQ(example["model"], "ninfer-tiny-nvfp4");
  EXPECT_EQ(example["max_tokens"], 200);
  const int64_t budget = default_model_budget();
  ASSERT_GT(budget, 0) << "the default model carries no default reasoning budget";
  Served s({});
  ASSERT_TRUE(testing::wait_ready(*s.cli, s.guard.pid)) << testing::read_file(s.log);
  EXPECT_NE(testing::read_file(s.log).find("reasoning budget: " + std::to_string(budget) + " tokens by default"),
            std::string::npos) << testing::read_file(s.log);
  int forced = 0;
  for (int seed = 1; seed <= 8; ++seed) {
    nlohmann::json body = example;
    body["seed"] = seed;
    const nlohmann::json r = s.chat(body);
    ASSERT_TRUE(r.is_object());
    const auto& msg = r["choices"][0]["message"];
    ASSERT_TRUE(msg["content"].is_string()) << r.dump();
    EXPECT_FALSE(msg["content"].get<std::string>().empty()) << "seed " << seed << ": " << r.dump();
    EXPECT_FALSE(msg["reasoning_content"].get<std::string>().empty()) << "seed " << seed << ": " << r.dump();
    const int64_t reasoning = r["usage"]["completion_tokens_details"]["reasoning_tokens"];
    // The budget's tokens, then the forced "\n</think>\n\n" (its "\n" and </think> still count as reasoning).
    EXPECT_LE(reasoning, budget + 3) << "seed " << seed;
    forced += reasoning >= budget;
  }
  std::printf("[ README example ] 8 seeds, budget %lld: %d closed by the budget\n", static_cast<long long>(budget), forced);
}

// An explicit budget still truncates as before: --reasoning-budget 6 closes the block after 6 tokens; with
// --reasoning-budget -1 there is no budget at all (not even the artifact's), so the same greedy request thinks past it.
TEST(DefaultModel, AnExplicitBudgetTruncatesAndMinusOneLiftsTheArtifactsDefault) {
  const int64_t budget = default_model_budget();
  ASSERT_GT(budget, 0);
  nlohmann::json body = readme_example_request();
  ASSERT_TRUE(body.is_object());
  body["temperature"] = 0;
  body["messages"][0]["content"] = kLongThinker;
  body["max_tokens"] = budget + 40;
  int64_t by_default = 0;
  {
    Served s({});
    ASSERT_TRUE(testing::wait_ready(*s.cli, s.guard.pid)) << testing::read_file(s.log);
    const nlohmann::json r = s.chat(body);
    ASSERT_TRUE(r.is_object());
    by_default = r["usage"]["completion_tokens_details"]["reasoning_tokens"];
    EXPECT_GE(by_default, budget) << r.dump();
    EXPECT_LE(by_default, budget + 3) << r.dump();
  }
  {
    Served s({"--reasoning-budget", "6"});
    ASSERT_TRUE(testing::wait_ready(*s.cli, s.guard.pid)) << testing::read_file(s.log);
    const nlohmann::json r = s.chat(body);
    ASSERT_TRUE(r.is_object());
    const int64_t reasoning = r["usage"]["completion_tokens_details"]["reasoning_tokens"];
    EXPECT_GE(reasoning, 6) << r.dump();
    EXPECT_LE(reasoning, 9) << r.dump();
    EXPECT_GT(r["usage"]["completion_tokens"].get<int64_t>(), reasoning) << "the answer follows the forced </think>";
    EXPECT_NE(testing::read_file(s.log).find("reasoning budget: 6 tokens (--reasoning-budget"), std::string::npos);
  }
  {
    Served s({"--reasoning-budget", "-1"});
    ASSERT_TRUE(testing::wait_ready(*s.cli, s.guard.pid)) << testing::read_file(s.log);
    const nlohmann::json r = s.chat(body);
    ASSERT_TRUE(r.is_object());
    EXPECT_GT(r["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int64_t>(), budget + 3) << r.dump();
    EXPECT_NE(testing::read_file(s.log).find("reasoning budget: none (--reasoning-budget -1"), std::string::npos);
  }
}

TEST(DefaultModel, VerifyNamesTheCorruptTensorAndRefusesToStart) {
  testing::TempDir dir;
  std::string art = testing::read_file(std::string(NINFER_SOURCE_ROOT) + "/models/ninfer-tiny.ninfer");
  art[art.size() - 100] ^= 0x5a;  // inside the last tensor's bytes
  const std::string path = dir.file("corrupt.ninfer"), log = dir.file("log.txt");
  testing::write_file(path, art);
  const std::string bin = std::string(NINFER_BINARY_DIR) + "/apps/ninfer-serve";
  // Without --verify the header checks pass; with it the checksum mismatch stops the start.
  int rc = std::system((bin + " --verify --model " + path + " --port 1 > " + log + " 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << rc;
  std::string out = testing::read_file(log);
  EXPECT_NE(out.find("checksum mismatch"), std::string::npos) << out;
  EXPECT_NE(out.find(path), std::string::npos) << out;
  EXPECT_NE(out.find("tensor '"), std::string::npos) << out;
}

}  // namespace
}  // namespace ninfer
