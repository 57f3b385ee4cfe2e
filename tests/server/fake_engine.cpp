#include "tests/server/fake_engine.h"

#include <algorithm>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "server/api_error.h"
#include "tests/server/tool_call_recordings.h"

namespace ninfer::server::testing {

namespace {

using Clock = std::chrono::steady_clock;

const char* const kWords[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
                              "theta", "iota",  "kappa", "lambda", "mu",     "世界", "naïve"};
constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string prompt_repr(const GenerationRequest& r) {
  std::string s;
  switch (r.kind) {
    case PromptKind::kChat:
      for (const ChatMessage& m : r.messages) s += m.role + ":" + m.content + "\n";
      break;
    case PromptKind::kText: s = r.prompt_text; break;
    case PromptKind::kTokens:
      for (int32_t id : r.prompt_tokens) s += std::to_string(id) + ",";
      break;
  }
  return s;
}

int64_t count_words(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int64_t n = 0;
  while (in >> w) ++n;
  return n;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

struct FakeEngine::Seq {
  RequestHandle handle = 0;
  GenerationRequest req;
  std::shared_ptr<GenerationSink> sink;
  int64_t prompt_tokens = 0;
  std::vector<std::pair<Channel, std::string>> script;
  bool endless = false, silent = false, fail = false;
  size_t pos = 0;
  std::atomic<int64_t> generated{0};  // read by load() on other threads
  int64_t reasoning = 0;
  std::string content;      // all content text generated
  size_t emitted = 0;       // bytes of `content` sent as deltas
  std::mt19937_64 rng;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> started{false};
  bool done = false;
  Clock::time_point submitted_at, started_at, first_token_at, last_token_at;
};

int64_t FakeEngine::prompt_tokens(const GenerationRequest& r) {
  switch (r.kind) {
    case PromptKind::kChat: {
      int64_t n = 0;
      for (const ChatMessage& m : r.messages) n += count_words(m.content) + 4;
      return n;
    }
    case PromptKind::kText: return count_words(r.prompt_text);
    case PromptKind::kTokens: return static_cast<int64_t>(r.prompt_tokens.size());
  }
  return 0;
}

FakeEngine::FakeEngine(Config config) : config_(std::move(config)), ready_(config_.ready) {
  thread_ = std::thread([this] { loop(); });
}

FakeEngine::~FakeEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : seqs_) s->cancelled = true;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

ModelInfo FakeEngine::model_info() const {
  ModelInfo info;
  info.name = config_.name;
  info.max_context = config_.max_context;
  info.created = 1760000000;
  info.default_sampling.temperature = 0.7;
  info.default_sampling.top_p = 0.95;
  info.default_sampling.top_k = 20;
  info.settings.kv_dtype = "bf16";
  info.settings.prefill_chunk = 2048;
  info.settings.max_context = config_.max_context;
  info.settings.kv_capacity = config_.kv_blocks_total * config_.kv_block_tokens;
  info.settings.prefix_reuse = config_.prefix_reuse;
  info.settings.tp = 1;
  info.settings.max_concurrency = static_cast<int32_t>(config_.max_running);
  info.tool_call_format = config_.tool_call_format;
  if (config_.speculate) {
    info.settings.spec_method = "mtp";
    info.settings.draft_tokens = 3;
  }
  return info;
}

EngineLoad FakeEngine::load() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineLoad l;
  l.kv_blocks_total = config_.kv_blocks_total;
  for (const auto& s : seqs_) {
    (s->started.load() ? l.running : l.waiting)++;
    l.kv_blocks_used += (s->prompt_tokens + s->generated + config_.kv_block_tokens - 1) / config_.kv_block_tokens;
  }
  l.kv_blocks_allocated = l.kv_blocks_used;  // no prefix cache
  return l;
}

void FakeEngine::set_queue_capacity(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  config_.queue_capacity = n;
}

std::vector<int32_t> FakeEngine::tokenize(const GenerationRequest& request) const {
  std::vector<int32_t> ids;
  for (unsigned char c : prompt_repr(request)) ids.push_back(c);
  return ids;
}

std::string FakeEngine::detokenize(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] > 255)
      throw ApiException(bad_request(fmt::format("tokens[{}] = {} is not a token id of the fake model (0..255).", i, ids[i]),
                                     fmt::format("tokens[{}]", i)));
    out.push_back(static_cast<char>(ids[i]));
  }
  return out;
}

SubmitResult FakeEngine::submit(GenerationRequest request, std::shared_ptr<GenerationSink> sink) {
  const std::string repr = prompt_repr(request);
  if (repr.find("__throw__") != std::string::npos) throw std::runtime_error("fake engine: submit threw");
  SubmitResult r;
  if (!ready_) {
    r.reject = RejectKind::kNotReady;
    r.message = "fake engine: loading";
    return r;
  }
  const int64_t prompt = prompt_tokens(request);
  const char* prompt_field = request.kind == PromptKind::kChat ? "messages" : "prompt";
  if (repr.find("__invalid__") != std::string::npos) {
    r.reject = RejectKind::kInvalid;
    r.message = "fake engine: the prompt holds __invalid__";
    r.param = prompt_field;
    return r;
  }
  for (int32_t id : request.prompt_tokens) {
    if (id >= config_.vocab_size) {
      r.reject = RejectKind::kInvalid;
      r.message = fmt::format("token id {} is outside the vocabulary (size {})", id, config_.vocab_size);
      r.param = "prompt";
      return r;
    }
  }
  const int64_t want = request.max_tokens.value_or(1);
  if (prompt + want > config_.max_context) {
    r.reject = RejectKind::kContextLength;
    r.prompt_tokens = prompt;
    r.param = prompt_field;
    r.message = fmt::format(
        "This model's maximum context length is {} tokens. However, you requested {} tokens ({} in the "
        "{}, {} in the completion). Please reduce the length of the {} or completion.",
        config_.max_context, prompt + want, prompt, prompt_field, want, prompt_field);
    return r;
  }

  auto s = std::make_shared<Seq>();
  s->req = request;
  s->sink = std::move(sink);
  s->prompt_tokens = prompt;
  s->endless = repr.find("__endless__") != std::string::npos;
  s->silent = repr.find("__silent__") != std::string::npos;
  s->fail = repr.find("__fail__") != std::string::npos;
  uint64_t seed = fnv1a(repr) ^ (request.sampling.seed.value_or(0) * 0x9E3779B97F4A7C15ull);
  s->rng.seed(seed);
  const bool thinking = request.parse_reasoning && request.enable_thinking.value_or(true) &&
                        request.reasoning_effort.value_or("medium") != "none";
  if (thinking) {
    int n = 4 + static_cast<int>(s->rng() % 4);
    s->script.emplace_back(Channel::kReasoning, "Hmm,");
    for (int i = 1; i < n; ++i) s->script.emplace_back(Channel::kReasoning, std::string(" ") + kWords[s->rng() % kNumWords]);
    s->script.emplace_back(Channel::kReasoning, "");  // the hidden </think>
  }
  const ToolCallRecording* recording = nullptr;
  if (size_t at = repr.find("__tool:"); at != std::string::npos) {
    size_t end = repr.find("__", at + 7);
    recording = find_tool_call_recording(repr.substr(at + 7, end == std::string::npos ? 0 : end - at - 7));
  }
  if (recording) {  // tokens of 1-3 whole characters
    const std::string& text = recording->text;
    for (size_t i = 0; i < text.size();) {
      size_t j = i;
      for (int chars = 1 + static_cast<int>(s->rng() % 3); chars > 0 && j < text.size(); --chars)
        for (++j; j < text.size() && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80;) ++j;
      s->script.emplace_back(Channel::kContent, text.substr(i, j - i));
      i = j;
    }
  } else {
    int n = 6 + static_cast<int>(s->rng() % 5);
    for (int i = 0; i < n; ++i)
      s->script.emplace_back(Channel::kContent, (i ? " " : "") + std::string(kWords[s->rng() % kNumWords]));
  }
  s->submitted_at = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int64_t>(seqs_.size()) >= config_.queue_capacity) {
      r.reject = RejectKind::kQueueFull;
      r.message = fmt::format("fake engine: {} requests queued, the capacity", seqs_.size());
      return r;
    }
    s->handle = next_handle_++;
    submitted_.push_back(request);
    seqs_.push_back(s);
    r.handle = s->handle;
  }
  cv_.notify_all();
  return r;
}

void FakeEngine::cancel(RequestHandle handle) {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_calls_.push_back(handle);
  for (auto& s : seqs_)
    if (s->handle == handle) s->cancelled = true;
}

std::vector<RequestHandle> FakeEngine::cancel_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancel_calls_;
}

std::vector<RequestHandle> FakeEngine::cancelled_finishes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_finishes_;
}

std::vector<GenerationRequest> FakeEngine::submitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return submitted_;
}

int64_t FakeEngine::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(seqs_.size());
}

bool FakeEngine::wait_idle(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return seqs_.empty(); });
}

FinalResult FakeEngine::make_final(Seq& s, StopReason reason, std::string error) {
  FinalResult f;
  f.stop_reason = reason;
  f.error = std::move(error);
  f.prompt_tokens = s.prompt_tokens;
  f.completion_tokens = s.generated;
  f.reasoning_tokens = s.reasoning;
  const auto now = Clock::now();
  if (s.started) {
    f.timings.queue_s = seconds(s.submitted_at, s.started_at);
    if (s.generated > 0) {
      f.timings.prefill_s = seconds(s.started_at, s.first_token_at);
      f.timings.ttft_s = seconds(s.submitted_at, s.first_token_at);
      f.timings.decode_s = seconds(s.first_token_at, s.last_token_at);
    }
  } else {
    f.timings.queue_s = seconds(s.submitted_at, now);
  }
  f.timings.total_s = seconds(s.submitted_at, now);
  if (config_.speculate && s.generated > 0) {
    SpecStats sp;
    sp.method = "mtp";
    sp.draft_tokens = 3;
    sp.steps = (s.generated + 1) / 2;
    sp.drafted = sp.steps * 3;
    sp.accepted = s.generated - sp.steps;
    sp.accepted_per_pos = {sp.accepted - sp.accepted / 3, sp.accepted / 3, 0};
    f.spec = sp;
  }
  return f;
}

bool FakeEngine::step_one(Seq& s, std::vector<std::pair<std::shared_ptr<GenerationSink>, Delta>>& deltas,
                          std::optional<FinalResult>& final) {
  auto flush_held = [&] {
    if (s.emitted < s.content.size()) {
      Delta d;
      d.text = s.content.substr(s.emitted);
      s.emitted = s.content.size();
      deltas.emplace_back(s.sink, std::move(d));
    }
  };
  if (s.cancelled) {
    final = make_final(s, StopReason::kCancelled);
    return true;
  }
  if (s.silent) return false;
  if (s.fail && s.generated == 3) {
    final = make_final(s, StopReason::kError, "fake engine: scripted failure after 3 tokens");
    return true;
  }
  if (s.req.max_tokens && s.generated >= *s.req.max_tokens) {
    flush_held();
    final = make_final(s, StopReason::kOutputLimit);
    return true;
  }
  if (s.prompt_tokens + s.generated >= config_.max_context) {
    flush_held();
    final = make_final(s, StopReason::kContextLimit);
    return true;
  }
  std::pair<Channel, std::string> tok;
  if (s.pos < s.script.size()) tok = s.script[s.pos++];
  else if (s.endless) tok = {Channel::kContent, std::string(" ") + kWords[s.rng() % kNumWords]};
  else {
    flush_held();
    final = make_final(s, StopReason::kEos);
    return true;
  }
  const auto now = Clock::now();
  if (s.generated == 0) s.first_token_at = now;
  s.last_token_at = now;
  s.generated++;

  Delta d;
  d.channel = tok.first;
  d.tokens = 1;
  if (s.req.sampling.logprobs) {
    TokenLogprob lp;
    lp.token = tok.second.empty() ? "</think>" : tok.second;
    lp.logprob = -0.01 * static_cast<double>(1 + s.rng() % 100);
    for (int i = 0; i < s.req.sampling.top_logprobs; ++i)
      lp.top.push_back({i == 0 ? lp.token : fmt::format("alt{}", i), lp.logprob - 0.5 * i});
    d.logprobs.push_back(std::move(lp));
  }
  if (tok.first == Channel::kReasoning) {
    s.reasoning++;
    d.text = tok.second;
    deltas.emplace_back(s.sink, std::move(d));
    return false;
  }
  s.content += tok.second;
  // Stop strings: the earliest match ends the output before it; hold back a possible match start.
  size_t best = std::string::npos;
  std::string matched;
  for (const std::string& stop : s.req.stop) {
    size_t p = s.content.find(stop, s.emitted >= stop.size() ? s.emitted - stop.size() + 1 : 0);
    if (p != std::string::npos && p < best) {
      best = p;
      matched = stop;
    }
  }
  if (best != std::string::npos) {
    if (best > s.emitted) d.text = s.content.substr(s.emitted, best - s.emitted);
    s.emitted = s.content.size();
    deltas.emplace_back(s.sink, std::move(d));
    final = make_final(s, StopReason::kStopString);
    final->stop_string = matched;
    return true;
  }
  size_t hold = 0;
  for (const std::string& stop : s.req.stop)
    for (size_t k = std::min(stop.size() - 1, s.content.size() - s.emitted); k > hold; --k)
      if (s.content.compare(s.content.size() - k, k, stop, 0, k) == 0) {
        hold = k;
        break;
      }
  d.text = s.content.substr(s.emitted, s.content.size() - hold - s.emitted);
  s.emitted = s.content.size() - hold;
  deltas.emplace_back(s.sink, std::move(d));
  return false;
}

void FakeEngine::loop() {
  for (;;) {
    std::vector<std::shared_ptr<Seq>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !seqs_.empty(); });
      if (stop_ && seqs_.empty()) return;
      const auto now = Clock::now();
      for (auto& s : seqs_) {
        if (static_cast<int64_t>(batch.size()) >= config_.max_running) break;
        if (!s->started) {
          s->started = true;
          s->started_at = now;
        }
        batch.push_back(s);
      }
    }
    std::vector<RequestHandle> cancelled;
    for (auto& s : batch) {
      std::vector<std::pair<std::shared_ptr<GenerationSink>, Delta>> deltas;
      std::optional<FinalResult> final;
      step_one(*s, deltas, final);
      for (auto& [sink, d] : deltas) sink->on_delta(std::move(d));
      if (final) {
        if (final->stop_reason == StopReason::kCancelled) cancelled.push_back(s->handle);
        s->done = true;
        s->sink->on_finish(std::move(*final));
        s->sink.reset();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      seqs_.erase(std::remove_if(seqs_.begin(), seqs_.end(), [](const auto& s) { return s->done; }), seqs_.end());
      cancelled_finishes_.insert(cancelled_finishes_.end(), cancelled.begin(), cancelled.end());
    }
    cv_.notify_all();
    std::this_thread::sleep_for(config_.step);
  }
}

}  // namespace ninfer::server::testing
