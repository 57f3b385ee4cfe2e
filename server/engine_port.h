// Owns the narrow seam between the HTTP layer and the engine: what the server submits, what it gets back.
#pragma once

// The server never sees tensors, the scheduler or the KV cache, nor output token ids (except from a model without a
// tokenizer: Delta::token_ids). It hands the engine one GenerationRequest per choice of an HTTP request (`n` of them,
// server/choice_group.h) and a GenerationSink that receives the output as text deltas (already detokenized, UTF-8
// complete, split into a reasoning and a content channel) and exactly one FinalResult. The real engine implements
// EnginePort through an adapter (EngineService; TokenEngineService without a tokenizer); tests implement it with a
// deterministic fake (tests/server/fake_engine.h).
//
// Threading contract (the engine side):
//  - Every EnginePort method may be called from any thread, concurrently.
//  - GenerationSink calls for one request are serialized (never two at once) and may come from any
//    engine thread; the engine never calls them under a lock the server could need, and the server's
//    sink never blocks and never calls back into the engine.
//  - After an accepted submit() the engine calls on_delta() zero or more times and then on_finish()
//    exactly once, also after cancel() (stop_reason kCancelled) and on failure (kError). It may do so
//    before submit() has returned. After on_finish() it drops its reference to the sink.
//  - cancel() is idempotent, returns at once, and makes the engine finish the request soon (a few
//    more deltas may arrive), freeing its KV blocks and sequence state. Unknown or finished handles
//    are ignored.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ninfer::server {

// One message of a chat-completions request, already validated and flattened to text.
struct ChatMessage {
  std::string role;               // system | developer | user | assistant | tool
  std::string content;            // text parts joined in order
  std::string reasoning;          // prior assistant thinking (input "reasoning_content" or "reasoning")
  std::string name;               // optional participant name
  std::string tool_call_id;       // role tool only
  // Assistant only: the OpenAI `tool_calls` array as sent ([{id, type, function:{name, arguments}}], arguments a
  // JSON string or object), validated, key order kept; empty = none. The chat template renders it.
  nlohmann::ordered_json tool_calls = nlohmann::ordered_json::array();
};

// The markup a model writes its tool calls in; chosen from the artifact's chat template, or by --tool-call-parser.
enum class ToolCallFormat {
  kNone,    // tool calls are not parsed: the output stays content
  kXml,     // Qwen3.5 / Qwen3-Coder: <tool_call><function=NAME><parameter=P>value</parameter></function></tool_call>
  kHermes,  // Qwen3 / hermes: <tool_call>{"name": NAME, "arguments": {...}}</tool_call>
};

// The request's tool_choice. kRequired and kNamed need constrained decoding (see openai_request.h).
enum class ToolChoiceMode {
  kNone,      // the model must not call tools: tools are rendered, the output is not parsed for calls
  kAuto,      // the model decides; calls are parsed out of the output
  kRequired,  // at least one call
  kNamed,     // exactly a call of `name`
};

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kNone;
  std::string name;  // kNamed: the function to call
};

// The request's response_format: free text, any JSON object, or the instances of a JSON Schema (constrained decoding,
// server/structured_output.h).
struct ResponseFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema };
  Kind kind = Kind::kText;
  nlohmann::ordered_json schema;  // kJsonSchema: the schema, key order kept (properties are written in that order)
  std::string name;               // json_schema.name
  bool strict = false;            // json_schema.strict (the output follows the schema either way)
};

// Sampling parameters after the server applied request fields over ModelInfo::default_sampling.
struct SamplingParams {
  bool greedy = false;            // argmax decoding; also implied by temperature == 0
  double temperature = 1.0;       // 0..2
  double top_p = 1.0;             // (0, 1]
  int32_t top_k = 0;              // 0 = off
  double min_p = 0.0;             // 0..1, 0 = off
  double presence_penalty = 0.0;  // -2..2
  double frequency_penalty = 0.0; // -2..2
  double repetition_penalty = 1.0;// > 0, 1 = off
  std::optional<uint64_t> seed;   // fixed seed: same request, same output (also under concurrency)
  bool logprobs = false;          // report the sampled token's logprob per output token
  int32_t top_logprobs = 0;       // 0..20 alternatives per output token (needs logprobs)
  std::vector<std::pair<int32_t, double>> logit_bias;  // token id -> bias in [-100, 100]; -100 bans the token
};

enum class PromptKind {
  kChat,    // messages: the engine applies the model's chat template
  kText,    // prompt_text: used as is (no template)
  kTokens,  // prompt_tokens: token ids used as is
};

struct GenerationRequest {
  std::string request_id;                 // the response id ("chatcmpl-…" / "cmpl-…"), also in the JSONL
  PromptKind kind = PromptKind::kChat;
  std::vector<ChatMessage> messages;      // kChat
  std::string prompt_text;                // kText
  std::vector<int32_t> prompt_tokens;     // kTokens

  // Chat template switches (kChat). enable_thinking unset = the template's default;
  // reasoning_effort "none" means thinking off.
  std::optional<bool> enable_thinking;
  // chat_template_kwargs as sent: an artifact's own (Jinja) template sees them all; enable_thinking above wins.
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  bool add_generation_prompt = true;      // kChat: false for /tokenize of a conversation as it stands
  std::optional<std::string> reasoning_effort;  // none | minimal | low | medium | high | xhigh
  bool parse_reasoning = true;            // false: everything goes to the content channel

  SamplingParams sampling;
  std::optional<int64_t> max_tokens;      // output budget incl. reasoning tokens; unset = up to the context
  std::optional<int64_t> reasoning_budget;// max reasoning tokens, unset = unlimited
  std::vector<std::string> stop;          // stop strings: matched on the content text, not included

  // Tools (kChat): the OpenAI `tools` array as sent ([{type:"function", function:{name, description, parameters,
  // strict}}]), validated, key order kept; the chat template renders it. Empty = no tools.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoice tool_choice;                 // kNone when there are no tools, default kAuto when there are
  bool parallel_tool_calls = true;        // false: only the first parsed call is returned
  ResponseFormat response_format;         // kChat: JSON output constrained by a grammar
};

enum class Channel { kContent, kReasoning };

struct TopLogprob {
  std::string token;
  double logprob = 0.0;
};

struct TokenLogprob {
  std::string token;                      // the token's text (may be a partial UTF-8 sequence)
  double logprob = 0.0;
  std::vector<TopLogprob> top;            // SamplingParams::top_logprobs entries, best first
};

// A piece of output. Text of one delta belongs to one channel (the engine splits at channel changes);
// the concatenation of all deltas' text per channel is the final text. `tokens` counts the output
// tokens this delta accounts for: text may be empty (held-back UTF-8, a hidden </think>) or tokens 0
// (flushing held-back text).
struct Delta {
  Channel channel = Channel::kContent;
  std::string text;
  int32_t tokens = 0;
  std::vector<TokenLogprob> logprobs;     // one per token when SamplingParams::logprobs
  // Only from a model without a tokenizer (ModelInfo::has_tokenizer false), whose text is always empty: the output
  // ids this delta accounts for (the end-of-generation id that ends the request is counted in `tokens`, not listed).
  std::vector<int32_t> token_ids = {};
};

enum class StopReason {
  kEos,              // the model ended (end-of-sequence token)
  kStopString,       // a request stop string matched
  kOutputLimit,      // max_tokens reached
  kContextLimit,     // the context (max-context) is full
  kReasoningBudget,  // the reasoning budget ended the request
  kCancelled,        // cancel(): the client went away or the server is stopping
  kError,            // the engine failed this request (FinalResult::error says why)
};

// Seconds, measured by the engine from the moment submit() accepted the request.
struct Timings {
  double queue_s = 0;    // accepted → first prefill chunk scheduled
  double prefill_s = 0;  // first prefill chunk → prompt fully processed
  double decode_s = 0;   // first output token → last output token
  double ttft_s = 0;     // accepted → first output token
  double total_s = 0;    // accepted → finished
};

struct SpecStats {
  std::string method;                     // mtp | dflash2
  int32_t draft_tokens = 0;               // K, tokens proposed per step
  int64_t steps = 0;                      // drafting steps (vLLM num_drafts)
  int64_t drafted = 0;                    // proposed tokens
  int64_t accepted = 0;                   // accepted proposed tokens
  std::vector<int64_t> accepted_per_pos;  // accepted counts by draft position 0..K-1
  std::string head = "lm_head";           // proposal head: lm_head (full) | draft_lm_head (--lm-head-draft)
};

struct FinalResult {
  StopReason stop_reason = StopReason::kEos;
  std::string stop_string;                // the matched stop string (kStopString)
  std::string error;                      // kError: what failed, with context
  int64_t prompt_tokens = 0;              // prompt length in tokens (incl. cached ones)
  int64_t cached_tokens = 0;              // prompt tokens reused from the prefix cache
  int64_t completion_tokens = 0;          // output tokens incl. reasoning ones
  int64_t reasoning_tokens = 0;           // output tokens of the reasoning channel
  Timings timings;
  std::optional<SpecStats> spec;          // set when the request was speculated
};

class GenerationSink {
 public:
  virtual ~GenerationSink() = default;
  virtual void on_delta(Delta delta) = 0;
  virtual void on_finish(FinalResult result) = 0;
};

using RequestHandle = uint64_t;  // 0 is never a valid handle

enum class RejectKind {
  kNone,
  kNotReady,       // still loading (HTTP 503)
  kQueueFull,      // admission queue full (HTTP 429)
  kContextLength,  // prompt + max_tokens exceed the context (HTTP 400, code context_length_exceeded)
  kInvalid,        // the request cannot be served as given (HTTP 400), e.g. a token id out of range
  kInternal,       // anything else (HTTP 500)
};

struct SubmitResult {
  RequestHandle handle = 0;     // valid when reject == kNone
  RejectKind reject = RejectKind::kNone;
  std::string message;          // for rejections: the reason, with the numbers
  std::string param;            // the request field it concerns, if any ("messages", "max_tokens")
  int64_t prompt_tokens = 0;    // kContextLength: the prompt's length, when known

  bool accepted() const { return reject == RejectKind::kNone; }
};

// The settings the engine actually runs with (auto values resolved); they shape the numbers, so every
// JSONL line carries them.
struct EngineSettings {
  std::string kv_dtype;          // int8 | bf16 | f16 | f32
  int64_t prefill_chunk = 0;
  int64_t max_context = 0;
  int64_t kv_capacity = 0;       // tokens
  bool prefix_reuse = true;
  int32_t tp = 1;
  int32_t max_concurrency = 1;
  std::string spec_method = "none";  // none | mtp | dflash2
  int32_t draft_tokens = 0;
  bool lm_head_draft = false;        // drafts scored by the artifact's draft_lm_head
};

struct ModelInfo {
  std::string name;              // the artifact's model name; --served-model-name overrides it
  int64_t max_context = 0;       // tokens, prompt + output
  int64_t created = 0;           // unix seconds (artifact time) for /v1/models
  SamplingParams default_sampling;  // the model's generation defaults
  EngineSettings settings;
  ToolCallFormat tool_call_format = ToolCallFormat::kNone;  // how the server parses tool calls out of the output
  // false: the artifact has no tokenizer.json; only token-id prompts on /v1/completions are served, and the output is
  // token ids (Delta::token_ids; docs/api.md "Artifacts without a tokenizer").
  bool has_tokenizer = true;
};

// A snapshot of the engine's load for /metrics.
struct EngineLoad {
  int64_t waiting = 0;           // accepted, not yet running
  int64_t running = 0;           // sequences being prefilled or decoded
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  int64_t prefix_cached_blocks = 0;  // KV blocks the prefix cache holds (shared with running sequences or idle)
  int64_t prefix_snapshots = 0;      // GDN state snapshots the prefix cache holds
  int64_t kv_blocks_allocated = 0;   // off the KV free list (sequences and the prefix cache); at rest = cached
  // Sequence-steps a constrained request was passed over while a mask worker walked its next mask (since the start).
  int64_t passed_over = 0;
};

class EnginePort {
 public:
  virtual ~EnginePort() = default;
  virtual bool ready() const = 0;              // false while loading
  virtual ModelInfo model_info() const = 0;    // valid once ready()
  virtual EngineLoad load() const = 0;
  virtual SubmitResult submit(GenerationRequest request, std::shared_ptr<GenerationSink> sink) = 0;
  virtual void cancel(RequestHandle handle) = 0;
  // POST /tokenize: the token ids the request's prompt would run (kChat through the chat template, kText with
  // control tokens recognised, as /v1/completions does). Throws ApiException (400) for a prompt it cannot render.
  virtual std::vector<int32_t> tokenize(const GenerationRequest& request) const = 0;
  // POST /detokenize: ids -> text (UTF-8, U+FFFD for broken sequences). Throws ApiException (400, param "tokens")
  // naming an id the tokenizer lacks.
  virtual std::string detokenize(const std::vector<int32_t>& ids) const = 0;
};

std::string_view stop_reason_name(StopReason reason);   // eos | stop_string | … (the JSONL names)
std::string_view finish_reason_name(StopReason reason); // OpenAI: stop | length; abort | error
std::string_view channel_name(Channel channel);
std::string_view tool_call_format_name(ToolCallFormat format);  // none | xml | hermes

}  // namespace ninfer::server
