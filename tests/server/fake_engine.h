// Owns the deterministic test double of EnginePort: a scripted engine loop for the server tests.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/engine_port.h"

namespace ninfer::server::testing {

// What the fake generates for a request is a pure function of the request (prompt, seed, thinking
// switches, limits, stop strings), never of timing or of other requests, so concurrent clients get
// byte-identical output. One engine thread steps every running request one token per step, like
// continuous batching.
//
// Script: "<prompt words> …" → with thinking on, 4–7 reasoning words, then a hidden </think> token
// (a reasoning-channel delta with no text), then 6–10 content words, then EOS. Magic words in the
// prompt change the script:
//   __endless__  content never ends (max_tokens, the context or cancel() end it)
//   __silent__   no output at all until cancel()
//   __fail__     the request fails after 3 output tokens (StopReason::kError)
//   __throw__    submit() throws
//   __invalid__  submit() rejects with RejectKind::kInvalid
//   __tool:NAME__  the content is the recorded output NAME of tests/server/tool_call_recordings.h (tool calls),
//                cut into tokens of 1–3 characters
class FakeEngine final : public EnginePort {
 public:
  struct Config {
    std::string name = "fake-model";
    int64_t max_context = 4096;
    int64_t max_running = 64;              // sequences stepped together; the rest wait
    int64_t queue_capacity = 1024;         // waiting + running beyond this → kQueueFull
    std::chrono::microseconds step{300};   // sleep per engine step
    int64_t kv_block_tokens = 16;
    int64_t kv_blocks_total = 100000;
    int64_t vocab_size = 1000;             // token-id prompts must be below this
    bool ready = true;
    bool speculate = false;                // report SpecStats (method mtp, K=3)
    bool prefix_reuse = false;             // EngineSettings::prefix_reuse (the server then staggers n > 1 choices)
    ToolCallFormat tool_call_format = ToolCallFormat::kXml;  // ModelInfo::tool_call_format
  };

  explicit FakeEngine(Config config);
  FakeEngine() : FakeEngine(Config{}) {}
  ~FakeEngine() override;

  bool ready() const override { return ready_.load(); }
  ModelInfo model_info() const override;
  EngineLoad load() const override;
  SubmitResult submit(GenerationRequest request, std::shared_ptr<GenerationSink> sink) override;
  void cancel(RequestHandle handle) override;
  // One id per byte of the prompt's text form (chat: "role:content\n" per message); detokenize maps ids 0..255 back.
  std::vector<int32_t> tokenize(const GenerationRequest& request) const override;
  std::string detokenize(const std::vector<int32_t>& ids) const override;

  void set_ready(bool ready) { ready_ = ready; }
  void set_queue_capacity(int64_t n);

  // Observations for the tests.
  std::vector<RequestHandle> cancel_calls() const;
  std::vector<RequestHandle> cancelled_finishes() const;  // requests finished with kCancelled
  std::vector<GenerationRequest> submitted() const;
  int64_t active() const;                                 // waiting + running
  // Waits until no request is active (or the timeout passes); returns whether it got there.
  bool wait_idle(std::chrono::milliseconds timeout) const;

  // The prompt length the fake counts (words of every message + 4 per message; words; ids).
  static int64_t prompt_tokens(const GenerationRequest& request);

 private:
  struct Seq;
  void loop();
  bool step_one(Seq& s, std::vector<std::pair<std::shared_ptr<GenerationSink>, Delta>>& deltas,
                std::optional<FinalResult>& final);
  FinalResult make_final(Seq& s, StopReason reason, std::string error = {});

  Config config_;
  std::atomic<bool> ready_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<std::shared_ptr<Seq>> seqs_;   // submission order
  std::vector<RequestHandle> cancel_calls_;
  std::vector<RequestHandle> cancelled_finishes_;
  std::vector<GenerationRequest> submitted_;
  RequestHandle next_handle_ = 1;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ninfer::server::testing
