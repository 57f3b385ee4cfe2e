#include "server/engine_service.h"

#include <algorithm>
#include <atomic>

#include <spdlog/spdlog.h>

#include "engine/constrain/think_stop_mask.h"
#include "engine/core/error.h"
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/reasoning_parser.h"
#include "server/api_error.h"
#include "server/engine_conversions.h"

namespace ninfer::server {

namespace {

// Forces "\n</think>\n\n" once the reasoning budget is spent (engine thread).
class BudgetController final : public TokenController {
 public:
  BudgetController(const Tokenizer& tok, int32_t budget, bool in_reasoning) : tracker_(tok, budget, in_reasoning) {}
  std::vector<int32_t> after_token(int32_t id) override {
    if (forcing_) return {};  // the forced ids come back through here; they are not budget tokens
    if (!tracker_.observe(id)) return {};
    forcing_ = true;
    for (int32_t f : tracker_.closing_ids()) tracker_.observe(f);
    forcing_ = false;
    return tracker_.closing_ids();
  }
  bool forced_close() const { return tracker_.forced_close(); }

 private:
  ReasoningBudgetTracker tracker_;
  bool forcing_ = false;
};

// Turns one request's token stream into text deltas on two channels (engine thread).
class RequestBridge final : public RequestObserver {
 public:
  RequestBridge(Engine& engine, const Tokenizer& tok, std::shared_ptr<GenerationSink> sink, const GenerationRequest& req,
                const EngineService::Prompt& prompt, std::vector<int32_t> stop_ids, const EngineSettings& settings)
      : engine_(engine),
        tok_(tok),
        sink_(std::move(sink)),
        detok_(tok),
        parser_(ReasoningParserOptions{.prompt_opened_reasoning = prompt.opened_reasoning,
                                       .thinking_enabled = prompt.thinking || !prompt.opened_reasoning}),
        parse_reasoning_(req.parse_reasoning),
        stops_(req.stop),
        stop_ids_(std::move(stop_ids)),
        logprobs_(req.sampling.logprobs),
        settings_(settings) {
    for (const auto& s : stops_) max_stop_ = std::max(max_stop_, s.size());
  }

  // Called by submit() once the engine assigned the id; the engine thread may already be running the
  // request, so a stop string matched before this point cancels here.
  void set_id(RequestId id) {
    id_.store(id);
    if (want_cancel_.load()) engine_.cancel(id);
  }

  void on_tokens(std::span<const OutputToken> tokens) override {
    for (const auto& t : tokens) {
      if (stopped_) break;
      const int32_t id = t.token.id;
      const bool reasoning_before = parse_reasoning_ && parser_.in_reasoning();
      std::string text;
      if (std::find(stop_ids_.begin(), stop_ids_.end(), id) == stop_ids_.end()) text = detok_.push(id);
      std::vector<TokenLogprob> lps;
      if (logprobs_) lps.push_back(logprob_of(t));
      emit(text, reasoning_before, 1, std::move(lps));
    }
  }

  void on_finish(const RequestResult& r) override {
    std::string failed;  // the last text could not be produced: the request still gets its one FinalResult
    try {
      if (!stopped_) {
        emit(detok_.finish(), false, 0, {});
        if (parse_reasoning_) route(parser_.finish(), 0, {});
        flush_content(true);
      }
    } catch (const std::exception& e) {
      failed = e.what();
    }
    FinalResult f = final_result(r, settings_);
    f.reasoning_tokens = reasoning_tokens_;
    if (!failed.empty() && r.reason != FinishReason::kError) f.stop_reason = StopReason::kError, f.error = failed;
    // A matched stop string ended the answer the client sees, whatever the engine did after it: the cancel it asked
    // for, or an output limit / stop token the engine reached before the cancel arrived (a fast engine does).
    if (stopped_ && r.reason != FinishReason::kError) f.stop_reason = StopReason::kStopString, f.stop_string = matched_;
    sink_->on_finish(std::move(f));
  }

 private:
  TokenLogprob logprob_of(const OutputToken& t) const {
    TokenLogprob lp{tok_.decode(std::span(&t.token.id, 1)), t.token.logprob, {}};
    for (const auto& [id, l] : t.token.top) lp.top.push_back({tok_.decode(std::span(&id, 1)), l});
    return lp;
  }

  // Routes new text of one token through the reasoning parser; `tokens` is accounted on the first delta.
  void emit(const std::string& text, bool reasoning_token, int32_t tokens, std::vector<TokenLogprob> lps) {
    if (tokens > 0 && reasoning_token) reasoning_tokens_ += tokens;
    if (!parse_reasoning_) {
      content_ += text;
      pending_tokens_ += tokens;
      move_logprobs(lps);
      flush_content(false);
      return;
    }
    ReasoningDelta d = parser_.feed(text);
    route(std::move(d), tokens, std::move(lps));
  }

  void route(ReasoningDelta d, int32_t tokens, std::vector<TokenLogprob> lps) {
    if (!d.reasoning.empty() || (tokens > 0 && d.content.empty() && content_.empty() && parser_.in_reasoning())) {
      Delta out{Channel::kReasoning, std::move(d.reasoning), tokens, std::move(lps)};
      tokens = 0;
      sink_->on_delta(std::move(out));
    }
    content_ += d.content;
    pending_tokens_ += tokens;
    move_logprobs(lps);
    flush_content(false);
  }

  void move_logprobs(std::vector<TokenLogprob>& lps) {
    for (auto& l : lps) pending_lps_.push_back(std::move(l));
    lps.clear();
  }

  // Emits content, holding back a tail that could still become a stop string.
  void flush_content(bool final) {
    if (stopped_) return;
    for (const auto& s : stops_) {
      if (s.empty()) continue;
      size_t pos = content_.find(s);
      if (pos != std::string::npos) {
        content_.resize(pos);
        stopped_ = true;
        matched_ = s;
        break;
      }
    }
    size_t cut = content_.size();
    if (!stopped_ && !final && max_stop_ > 1) {
      cut = content_.size() > max_stop_ - 1 ? content_.size() - (max_stop_ - 1) : 0;
      while (cut > 0 && (static_cast<unsigned char>(content_[cut]) & 0xC0) == 0x80) --cut;  // whole characters only
    }
    if (cut > 0 || pending_tokens_ > 0 || !pending_lps_.empty()) {
      sink_->on_delta(Delta{Channel::kContent, content_.substr(0, cut), pending_tokens_, std::move(pending_lps_)});
      content_.erase(0, cut);
      pending_tokens_ = 0;
      pending_lps_.clear();
    }
    if (stopped_) {  // end the sequence at once; on_finish reports kStopString
      want_cancel_.store(true);
      if (RequestId id = id_.load()) engine_.cancel(id);
    }
  }

  Engine& engine_;
  const Tokenizer& tok_;
  std::shared_ptr<GenerationSink> sink_;
  Detokenizer detok_;
  ReasoningParser parser_;
  bool parse_reasoning_;
  std::vector<std::string> stops_;
  std::vector<int32_t> stop_ids_;
  bool logprobs_;
  EngineSettings settings_;  // speculation figures of the result
  size_t max_stop_ = 0;
  std::atomic<RequestId> id_{0};
  std::atomic<bool> want_cancel_{false};
  std::string content_;  // content not yet emitted (stop-string hold-back)
  int32_t pending_tokens_ = 0;
  std::vector<TokenLogprob> pending_lps_;
  int64_t reasoning_tokens_ = 0;
  bool stopped_ = false;
  std::string matched_;
};

// OpenAI's effort levels; "xhigh" (valid OpenAI input) runs with the high budget.
ReasoningEffort effort_of(const std::string& effort) {
  return effort == "xhigh" ? ReasoningEffort::kHigh : parse_reasoning_effort(effort);
}

}  // namespace

EngineService::EngineService(Engine& engine, const Tokenizer& tokenizer, ChatTemplate chat_template,
                             EngineServiceConfig config)
    : engine_(engine),
      tokenizer_(tokenizer),
      template_(std::move(chat_template)),
      config_(std::move(config)),
      structured_(tokenizer, config_.stop_ids) {
  const int64_t vocab = engine_.config().vocab_size;
  if (!engine_.options().output_ids.empty()) return;
  const std::vector<uint8_t> has = tokenizer_output_ids(tokenizer_, vocab);
  for (int64_t id = 0; id < static_cast<int64_t>(has.size()); ++id)
    if (!has[static_cast<size_t>(id)])
      fail(ErrorKind::kInvalidArgument,
           "the model has {} token ids but the tokenizer has no id {} (a padded embedding row): the engine must be "
           "built with EngineOptions::output_ids = tokenizer_output_ids(), or it could produce ids nothing decodes",
           vocab, id);
}

EngineLoad EngineService::load() const { return engine_load(engine_); }

std::vector<uint8_t> tokenizer_output_ids(const Tokenizer& tok, int64_t vocab_size) {
  std::vector<uint8_t> ids(static_cast<size_t>(vocab_size), 0);
  bool all = true;
  for (int32_t id = 0; id < vocab_size; ++id) {
    bool has = id < tok.vocab_size() && tok.is_added(id);
    if (!has && id < tok.vocab_size()) {
      try {
        tok.token_bytes(id);  // throws for an id the vocabulary skips
        has = true;
      } catch (const Error&) {
      }
    }
    ids[static_cast<size_t>(id)] = has ? 1 : 0;
    all = all && has;
  }
  if (all) ids.clear();
  return ids;
}

EngineService::Prompt EngineService::build_prompt(const GenerationRequest& r) const {
  Prompt p;
  if (r.kind == PromptKind::kTokens) {
    p.ids = r.prompt_tokens;
    return p;
  }
  if (r.kind == PromptKind::kText) {
    p.ids = tokenizer_.encode_with_special(r.prompt_text);  // raw prompts may carry control tokens on purpose
    return p;
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.messages.size(); ++i) {
    const auto& m = r.messages[i];
    // OpenAI's developer role is the system role of models that predate it (OpenAI and vLLM map it so).
    nlohmann::ordered_json j = {{"role", m.role == "developer" ? "system" : m.role}, {"content", m.content}};
    if (!m.reasoning.empty()) j["reasoning_content"] = m.reasoning;
    if (!m.name.empty()) j["name"] = m.name;
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    if (!m.tool_calls.empty()) j["tool_calls"] = m.tool_calls;
    messages.push_back(std::move(j));
  }
  ChatOptions opt;
  opt.add_generation_prompt = r.add_generation_prompt;
  opt.extra_kwargs = r.template_kwargs;
  opt.extra_kwargs.erase("enable_thinking");  // resolved below (reasoning_effort may set it)
  opt.enable_thinking = r.enable_thinking;
  if (r.reasoning_effort) {
    auto resolved = resolve_reasoning(effort_of(*r.reasoning_effort), config_.budgets);
    if (resolved.enable_thinking) opt.enable_thinking = resolved.enable_thinking;
  }
  // Tools are rendered whatever tool_choice says: with "none" the model still sees them (as in earlier turns that
  // used them; vLLM does the same) and the HTTP layer does not parse its output for calls.
  // A Jinja template tests `tools is not none` (Llama 3.1, Mistral): no tools is None there, as transformers passes it.
  const bool jinja = template_.kind() == ChatTemplate::Kind::kJinja;
  RenderedPrompt rendered =
      template_.render(messages, jinja && r.tools.empty() ? nlohmann::ordered_json() : r.tools, opt);
  p.ids = tokenizer_.encode_segments(rendered.segments);
  p.opened_reasoning = rendered.thinking;
  p.thinking = template_.thinking_enabled(opt);
  return p;
}

SubmitResult EngineService::submit(GenerationRequest request, std::shared_ptr<GenerationSink> sink) {
  Prompt prompt;
  const std::optional<int64_t> server_budget =
      request.reasoning_budget ? request.reasoning_budget : config_.default_reasoning_budget;
  std::optional<int64_t> effort_budget;
  // The Qwen3.5 template takes one system (or developer) message, first: say so, and where, rather than its own
  // words. An artifact's own (Jinja) template decides for itself.
  const bool native = template_.kind() != ChatTemplate::Kind::kJinja;
  for (size_t i = 1; native && request.kind == PromptKind::kChat && i < request.messages.size(); ++i) {
    const std::string& role = request.messages[i].role;
    if (role == "system" || role == "developer")
      return {0, RejectKind::kInvalid,
              fmt::format("A '{}' message must be the first message: this model's chat template takes one system "
                          "message, at the start. Merge its text into messages[0] (or make it messages[0]), or send "
                          "it with role 'user'.", role),
              fmt::format("messages[{}].role", i), 0};
  }
  try {
    prompt = build_prompt(request);
    if (request.reasoning_effort)
      effort_budget = resolve_reasoning(effort_of(*request.reasoning_effort), config_.budgets).budget_tokens;
  } catch (const Error& e) {
    std::string param = request.kind == PromptKind::kChat ? "messages" : "prompt";
    if (request.reasoning_effort && std::string(e.what()).find("reasoning_effort") != std::string::npos)
      param = "reasoning_effort";
    return {0, RejectKind::kInvalid, e.what(), param, 0};
  }
  for (const auto& [id, bias] : request.sampling.logit_bias)
    if (id >= tokenizer_.vocab_size() || tokenizer_.is_special(id))
      return {0, RejectKind::kInvalid,
              fmt::format("logit_bias names token id {}, which is {}: the ids are the tokenizer's, 0..{}, control "
                          "tokens excluded.", id, id >= tokenizer_.vocab_size() ? "not a token" : "a control token",
                          tokenizer_.vocab_size() - 1),
              "logit_bias", 0};
  // The effort's budget capped by --reasoning-budget (request.reasoning_budget carries it), else that flag, else the
  // artifact's default.
  const ReasoningBudget budget = resolve_reasoning_budget(effort_budget, server_budget, config_.artifact_reasoning_budget);
  EngineRequest er;
  try {
    er.constraint = structured_.constraint(request, config_.info.tool_call_format, prompt.opened_reasoning);
  } catch (const ApiException& e) {
    return {0, RejectKind::kInvalid, e.error().message, e.error().param.value_or("response_format"), 0};
  }
  er.prompt = prompt.ids;
  er.sampling = to_engine(request.sampling);
  er.max_tokens = request.max_tokens.value_or(0);
  er.stop_ids = config_.stop_ids;
  if (budget.tokens && prompt.opened_reasoning) {
    er.controller = std::make_shared<BudgetController>(tokenizer_, static_cast<int32_t>(*budget.tokens), true);
    // The artifact's default is the model's own policy: its think block ends, by itself or by the budget, and an
    // answer follows (no stop inside the block). An explicit budget only truncates.
    if (budget.source == ReasoningBudgetSource::kArtifact)
      er.constraint = std::make_shared<ThinkStopMask>(config_.stop_ids, tokenizer_.require_token_id("</think>"),
                                                      std::move(er.constraint));
  }
  auto bridge = std::make_shared<RequestBridge>(engine_, tokenizer_, std::move(sink), request, prompt, config_.stop_ids,
                                                config_.info.settings);
  auto* raw = bridge.get();
  SubmitOutcome o = engine_.submit(std::move(er), bridge);
  raw->set_id(o.id);
  return submit_result(o, static_cast<int64_t>(prompt.ids.size()));
}

void EngineService::cancel(RequestHandle handle) { engine_.cancel(handle); }

std::vector<int32_t> EngineService::tokenize(const GenerationRequest& request) const {
  try {
    return build_prompt(request).ids;
  } catch (const Error& e) {
    throw ApiException(bad_request(e.what(), request.kind == PromptKind::kChat ? "messages" : "prompt"));
  }
}

std::string EngineService::detokenize(const std::vector<int32_t>& ids) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    try {
      tokenizer_.token_bytes(ids[i]);
    } catch (const Error&) {
      throw ApiException(bad_request(fmt::format("tokens[{}] = {} is not a token id of this model (0..{}).", i, ids[i],
                                                 tokenizer_.vocab_size() - 1),
                                     fmt::format("tokens[{}]", i)));
    }
  }
  return tokenizer_.decode(ids);
}

std::vector<int32_t> generation_stop_ids(const nlohmann::json& gen) {
  std::vector<int32_t> ids;
  if (!gen.is_object() || !gen.contains("eos_token_id")) return ids;
  const auto& e = gen["eos_token_id"];
  if (e.is_number_integer()) ids.push_back(e.get<int32_t>());
  if (e.is_array())
    for (const auto& v : e)
      if (v.is_number_integer()) ids.push_back(v.get<int32_t>());
  return ids;
}

std::vector<int32_t> default_stop_ids(const nlohmann::json& gen, const Tokenizer& tok) {
  std::vector<int32_t> ids = generation_stop_ids(gen);
  for (const char* t : {"<|im_end|>", "<|endoftext|>"})
    if (auto id = tok.token_id(t); id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  return ids;
}

SamplingParams default_sampling(const nlohmann::json& gen) {
  SamplingParams s;
  if (!gen.is_object()) return s;
  if (gen.contains("temperature") && gen["temperature"].is_number()) s.temperature = gen["temperature"].get<double>();
  if (gen.contains("top_p") && gen["top_p"].is_number()) s.top_p = gen["top_p"].get<double>();
  if (gen.contains("top_k") && gen["top_k"].is_number_integer()) s.top_k = gen["top_k"].get<int32_t>();
  if (gen.contains("min_p") && gen["min_p"].is_number()) s.min_p = gen["min_p"].get<double>();
  if (gen.contains("repetition_penalty") && gen["repetition_penalty"].is_number())
    s.repetition_penalty = gen["repetition_penalty"].get<double>();
  if (gen.contains("do_sample") && gen["do_sample"].is_boolean() && !gen["do_sample"].get<bool>()) s.greedy = true;
  return s;
}

}  // namespace ninfer::server
