#include "server/openai_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/structured_output.h"

namespace ninfer::server {

namespace {

using json = nlohmann::ordered_json;

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a decimal";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    default: return "an unsupported value";
  }
}

[[noreturn]] void wrong_type(const std::string& field, std::string_view expected, const json& v) {
  throw ApiException(bad_request(fmt::format("Invalid type for '{}': expected {}, but got {} instead.",
                                             field, expected, type_name(v)),
                                 field, "invalid_type"));
}

[[noreturn]] void bad_value(const std::string& field, std::string message) {
  throw ApiException(bad_request(fmt::format("Invalid value for '{}': {}", field, message), field,
                                 "invalid_value"));
}

[[noreturn]] void unsupported(const std::string& field, std::string message) {
  throw ApiException(bad_request(fmt::format("Unsupported value for '{}': {}", field, message), field,
                                 "unsupported_parameter"));
}

// Typed readers for optional fields of one object; `prefix` names nested objects in messages.
class Fields {
 public:
  Fields(const json& obj, std::string prefix = {}) : obj_(obj), prefix_(std::move(prefix)) {}

  std::string name(const char* key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

  const json* get(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<std::string> string(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong_type(name(key), "a string", *v);
    return v->get<std::string>();
  }

  std::optional<bool> boolean(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong_type(name(key), "a boolean", *v);
    return v->get<bool>();
  }

  std::optional<double> number(const char* key, double lo, double hi) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong_type(name(key), "a number", *v);
    double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
      bad_value(name(key), fmt::format("{} is outside [{}, {}].", d, lo, hi));
    return d;
  }

  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    int64_t n = as_integer(*v, name(key));
    if (n < lo || n > hi) bad_value(name(key), fmt::format("{} is outside [{}, {}].", n, lo, hi));
    return n;
  }

  static int64_t as_integer(const json& v, const std::string& field) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        bad_value(field, fmt::format("{} is too large.", u));
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::isfinite(d) && std::floor(d) == d) {
        // A whole number too large for an exact integer (1e300, or 2^64 written out) is out of range, not a decimal.
        if (std::fabs(d) >= 9.0e15) bad_value(field, fmt::format("{} is too large.", d));
        return static_cast<int64_t>(d);
      }
    }
    wrong_type(field, "an integer", v);
  }

 private:
  const json& obj_;
  std::string prefix_;
};

void require_object(const json& body) {
  if (!body.is_object())
    throw ApiException(bad_request(
        fmt::format("The request body must be a JSON object, but got {}.", type_name(body)), std::nullopt,
        "invalid_type"));
}

SamplingFields parse_sampling(const Fields& f) {
  SamplingFields s;
  s.temperature = f.number("temperature", 0.0, 2.0);
  if (auto p = f.number("top_p", 0.0, 1.0)) {
    if (*p <= 0.0) bad_value("top_p", fmt::format("{} must be greater than 0.", *p));
    s.top_p = p;
  }
  if (auto k = f.integer("top_k", -1, std::numeric_limits<int32_t>::max()))
    s.top_k = static_cast<int32_t>(*k < 0 ? 0 : *k);  // -1 = off (vLLM), like 0
  s.min_p = f.number("min_p", 0.0, 1.0);
  s.presence_penalty = f.number("presence_penalty", -2.0, 2.0);
  s.frequency_penalty = f.number("frequency_penalty", -2.0, 2.0);
  if (auto r = f.number("repetition_penalty", 0.0, 10.0)) {
    if (*r <= 0.0) bad_value("repetition_penalty", fmt::format("{} must be greater than 0.", *r));
    s.repetition_penalty = r;
  }
  if (const json* v = f.get("seed")) {
    int64_t n = Fields::as_integer(*v, "seed");
    s.seed = static_cast<uint64_t>(n);  // negative seeds are valid OpenAI input: reinterpret the bits
  }
  // logit_bias: {"token id": bias}; the ids are checked against the tokenizer where it is known (EngineService).
  if (const json* v = f.get("logit_bias")) {
    if (!v->is_object()) wrong_type("logit_bias", "an object", *v);
    constexpr size_t kMaxEntries = 1024;
    if (v->size() > kMaxEntries)
      bad_value("logit_bias", fmt::format("{} entries; at most {} are accepted.", v->size(), kMaxEntries));
    for (const auto& [key, bias] : v->items()) {
      const std::string field = "logit_bias." + key;
      int64_t id = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > std::numeric_limits<int32_t>::max())
        bad_value(field, fmt::format("'{}' is not a token id (a non-negative integer, as a string).", key));
      if (!bias.is_number()) wrong_type(field, "a number", bias);
      const double b = bias.get<double>();
      if (!(b >= -100.0 && b <= 100.0)) bad_value(field, fmt::format("{} is not between -100 and 100.", b));
      s.logit_bias.emplace_back(static_cast<int32_t>(id), b);
    }
    std::sort(s.logit_bias.begin(), s.logit_bias.end());
    // Two keys of one id ("7" and "07"): which bias was meant is unclear, so neither is guessed.
    for (size_t i = 1; i < s.logit_bias.size(); ++i)
      if (s.logit_bias[i].first == s.logit_bias[i - 1].first)
        bad_value("logit_bias", fmt::format("token id {} is named by two keys.", s.logit_bias[i].first));
  }
  return s;
}

std::vector<std::string> parse_stop(const Fields& f) {
  std::vector<std::string> stop;
  const json* v = f.get("stop");
  if (!v) return stop;
  if (v->is_string()) {
    stop.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) {
      const json& s = (*v)[i];
      if (!s.is_string()) wrong_type(fmt::format("stop[{}]", i), "a string", s);
      stop.push_back(s.get<std::string>());
    }
  } else {
    wrong_type("stop", "a string or an array of strings", *v);
  }
  if (stop.size() > 16) bad_value("stop", fmt::format("{} stop strings given; at most 16.", stop.size()));
  for (const std::string& s : stop)
    if (s.empty()) bad_value("stop", "stop strings must not be empty.");
  return stop;
}

void parse_stream(const Fields& f, bool& stream, bool& include_usage) {
  stream = f.boolean("stream").value_or(false);
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    include_usage = Fields(*so, "stream_options").boolean("include_usage").value_or(false);
  }
}

// n: how many choices (independent samples of the prompt); the server's bound (--max-n) is checked by the HTTP layer.
int32_t parse_n(const Fields& f) {
  return static_cast<int32_t>(f.integer("n", 1, std::numeric_limits<int32_t>::max()).value_or(1));
}

// Flattens string content or an array of text parts.
std::string parse_content(const json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(field, "a string or an array of content parts", content);
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    std::string pf = fmt::format("{}[{}]", field, j);
    if (!part.is_object()) wrong_type(pf, "an object", part);
    Fields pfields(part, pf);
    auto type = pfields.string("type");
    if (!type) throw ApiException(bad_request(fmt::format("Missing required parameter: '{}.type'.", pf),
                                              pf + ".type", "missing_required_parameter"));
    if (*type != "text")
      unsupported(pf + ".type",
                  fmt::format("Content part type '{}' is not supported yet; only 'text' parts are.", *type));
    auto t = pfields.string("text");
    if (!t) throw ApiException(bad_request(fmt::format("Missing required parameter: '{}.text'.", pf),
                                           pf + ".text", "missing_required_parameter"));
    text += *t;
  }
  return text;
}

[[noreturn]] void missing(const std::string& field) {
  throw ApiException(bad_request(fmt::format("Missing required parameter: '{}'.", field), field,
                                 "missing_required_parameter"));
}

// An assistant message's tool_calls: [{id, type: "function", function: {name, arguments}}]. arguments is the
// OpenAI JSON string of an object (an object is accepted too); it must parse, since the template renders it.
json parse_history_tool_calls(const json& calls, const std::string& field) {
  if (!calls.is_array()) wrong_type(field, "an array", calls);
  for (size_t j = 0; j < calls.size(); ++j) {
    const json& c = calls[j];
    const std::string cf = fmt::format("{}[{}]", field, j);
    if (!c.is_object()) wrong_type(cf, "an object", c);
    Fields cfields(c, cf);
    cfields.string("id");
    if (auto type = cfields.string("type"); type && *type != "function")
      unsupported(cf + ".type", fmt::format("tool call type '{}' is not supported; only 'function' is.", *type));
    const json* fn = cfields.get("function");
    if (!fn) missing(cf + ".function");
    if (!fn->is_object()) wrong_type(cf + ".function", "an object", *fn);
    Fields ffields(*fn, cf + ".function");
    auto name = ffields.string("name");
    if (!name) missing(cf + ".function.name");
    if (name->empty()) bad_value(cf + ".function.name", "the name must not be empty.");
    const json* args = ffields.get("arguments");
    if (!args) continue;
    const std::string af = cf + ".function.arguments";
    if (args->is_string()) {
      json parsed;
      try {
        parsed = json::parse(args->get<std::string>());
      } catch (const json::exception& e) {
        bad_value(af, fmt::format("the arguments are not valid JSON: {}", e.what()));
      }
      if (!parsed.is_object()) bad_value(af, fmt::format("the arguments must be a JSON object, not {}.", type_name(parsed)));
    } else if (!args->is_object()) {
      wrong_type(af, "a string (a JSON object)", *args);
    }
  }
  return calls;
}

std::vector<ChatMessage> parse_messages(const Fields& f) {
  const json* v = f.get("messages");
  if (!v)
    throw ApiException(bad_request("Missing required parameter: 'messages'.", "messages",
                                   "missing_required_parameter"));
  if (!v->is_array()) wrong_type("messages", "an array", *v);
  if (v->empty()) bad_value("messages", "the list must hold at least one message.");
  std::vector<ChatMessage> out;
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    std::string mf = fmt::format("messages[{}]", i);
    if (!m.is_object()) wrong_type(mf, "an object", m);
    Fields mfields(m, mf);
    ChatMessage msg;
    auto role = mfields.string("role");
    if (!role) throw ApiException(bad_request(fmt::format("Missing required parameter: '{}.role'.", mf),
                                              mf + ".role", "missing_required_parameter"));
    if (*role != "system" && *role != "developer" && *role != "user" && *role != "assistant" &&
        *role != "tool")
      bad_value(mf + ".role",
                fmt::format("'{}' is not one of system, developer, user, assistant, tool.", *role));
    msg.role = *role;
    if (const json* c = mfields.get("content")) {
      msg.content = parse_content(*c, mf + ".content");
    } else if (msg.role != "assistant") {
      throw ApiException(bad_request(fmt::format("Missing required parameter: '{}.content'.", mf),
                                     mf + ".content", "missing_required_parameter"));
    }
    if (msg.role == "assistant") {
      // Prior thinking: accept both names (llama.cpp / DeepSeek and current vLLM).
      if (auto r = mfields.string("reasoning_content")) msg.reasoning = *r;
      else if (auto r2 = mfields.string("reasoning")) msg.reasoning = *r2;
      if (const json* tc = mfields.get("tool_calls")) msg.tool_calls = parse_history_tool_calls(*tc, mf + ".tool_calls");
    }
    if (auto n = mfields.string("name")) msg.name = *n;
    if (auto id = mfields.string("tool_call_id")) msg.tool_call_id = *id;
    out.push_back(std::move(msg));
  }
  return out;
}

bool valid_tool_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.' || c == ':'))
      return false;
  return true;
}

// tools: [{type: "function", function: {name, description?, parameters?, strict?}}]; tool_choice;
// parallel_tool_calls. The legacy non-empty `functions` is refused.
void parse_tools(const Fields& f, ChatCompletionRequest& r) {
  if (const json* legacy = f.get("functions")) {
    if (!legacy->is_array()) wrong_type("functions", "an array", *legacy);
    if (!legacy->empty()) unsupported("functions", "the legacy 'functions' is not supported; send 'tools'.");
  }
  std::vector<std::string> names;
  if (const json* t = f.get("tools")) {
    if (!t->is_array()) wrong_type("tools", "an array", *t);
    for (size_t i = 0; i < t->size(); ++i) {
      const json& tool = (*t)[i];
      const std::string tf = fmt::format("tools[{}]", i);
      if (!tool.is_object()) wrong_type(tf, "an object", tool);
      Fields tfields(tool, tf);
      auto type = tfields.string("type");
      if (!type) missing(tf + ".type");
      if (*type != "function")
        unsupported(tf + ".type", fmt::format("tool type '{}' is not supported; only 'function' tools are.", *type));
      const json* fn = tfields.get("function");
      if (!fn) missing(tf + ".function");
      if (!fn->is_object()) wrong_type(tf + ".function", "an object", *fn);
      Fields ffields(*fn, tf + ".function");
      auto name = ffields.string("name");
      if (!name) missing(tf + ".function.name");
      if (!valid_tool_name(*name))
        bad_value(tf + ".function.name",
                  fmt::format("'{}' is not a valid function name: use 1 to 64 of a-z, A-Z, 0-9, '_', '-', '.', ':'.",
                              *name));
      if (std::find(names.begin(), names.end(), *name) != names.end())
        bad_value(tf + ".function.name", fmt::format("the function name '{}' is given twice.", *name));
      names.push_back(*name);
      ffields.string("description");
      ffields.boolean("strict");  // enforced by constrained decoding (server/structured_output.cpp, docs/api.md)
      if (const json* params = ffields.get("parameters")) {
        if (!params->is_object()) wrong_type(tf + ".function.parameters", "an object (a JSON Schema)", *params);
        if (const json* props = Fields(*params, tf + ".function.parameters").get("properties"); props && !props->is_object())
          wrong_type(tf + ".function.parameters.properties", "an object", *props);
      }
    }
    r.tools = *t;
  }
  r.tool_choice.mode = names.empty() ? ToolChoiceMode::kNone : ToolChoiceMode::kAuto;
  if (const json* tc = f.get("tool_choice")) {
    if (tc->is_string()) {
      const std::string s = tc->get<std::string>();
      if (s == "none") r.tool_choice.mode = ToolChoiceMode::kNone;
      else if (s == "auto") r.tool_choice.mode = names.empty() ? ToolChoiceMode::kNone : ToolChoiceMode::kAuto;
      else if (s == "required") r.tool_choice.mode = ToolChoiceMode::kRequired;
      else bad_value("tool_choice", fmt::format("'{}' is not none, auto, required or a named function.", s));
    } else if (tc->is_object()) {
      Fields cfields(*tc, "tool_choice");
      auto type = cfields.string("type");
      if (!type) missing("tool_choice.type");
      if (*type != "function")
        unsupported("tool_choice.type", fmt::format("tool_choice type '{}' is not supported; only 'function' is.", *type));
      const json* fn = cfields.get("function");
      if (!fn) missing("tool_choice.function");
      if (!fn->is_object()) wrong_type("tool_choice.function", "an object", *fn);
      auto name = Fields(*fn, "tool_choice.function").string("name");
      if (!name) missing("tool_choice.function.name");
      r.tool_choice = {ToolChoiceMode::kNamed, *name};
    } else {
      wrong_type("tool_choice", "a string or an object", *tc);
    }
    if (r.tool_choice.mode == ToolChoiceMode::kRequired && names.empty())
      bad_value("tool_choice", "tool_choice 'required' needs a non-empty 'tools' list.");
    if (r.tool_choice.mode == ToolChoiceMode::kNamed &&
        std::find(names.begin(), names.end(), r.tool_choice.name) == names.end())
      bad_value("tool_choice.function.name",
                fmt::format("no tool named '{}' in 'tools'.", r.tool_choice.name));
  }
  r.parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
}

std::optional<std::string> model_field(const Fields& f) { return f.string("model"); }

}  // namespace

ChatCompletionRequest parse_chat_request(const json& body) {
  require_object(body);
  Fields f(body);
  ChatCompletionRequest r;
  r.model = model_field(f);
  r.messages = parse_messages(f);
  constexpr int64_t kMaxTok = int64_t{1} << 40;
  if (auto m = f.integer("max_completion_tokens", 1, kMaxTok)) {
    r.max_tokens = m;
    r.max_tokens_field = "max_completion_tokens";
  }
  if (auto m = f.integer("max_tokens", 1, kMaxTok); m && !r.max_tokens) {
    r.max_tokens = m;
    r.max_tokens_field = "max_tokens";
  }
  r.sampling = parse_sampling(f);
  r.stop = parse_stop(f);
  parse_stream(f, r.stream, r.include_usage);
  r.n = parse_n(f);
  parse_tools(f, r);
  if (const json* rf = f.get("response_format")) r.response_format = parse_response_format(*rf);
  if (auto e = f.string("reasoning_effort")) {
    if (*e != "none" && *e != "minimal" && *e != "low" && *e != "medium" && *e != "high" && *e != "xhigh")
      bad_value("reasoning_effort",
                fmt::format("'{}' is not one of none, minimal, low, medium, high, xhigh.", *e));
    r.reasoning_effort = e;
  }
  if (const json* k = f.get("chat_template_kwargs")) {
    if (!k->is_object()) wrong_type("chat_template_kwargs", "an object", *k);
    r.enable_thinking = Fields(*k, "chat_template_kwargs").boolean("enable_thinking");
    r.template_kwargs = *k;
  }
  r.logprobs = f.boolean("logprobs").value_or(false);
  if (auto t = f.integer("top_logprobs", 0, 20)) {
    if (!r.logprobs && *t > 0)
      bad_value("top_logprobs", "top_logprobs needs logprobs set to true.");
    r.top_logprobs = static_cast<int32_t>(*t);
  }
  if (auto u = f.string("user")) r.user = *u;
  return r;
}

CompletionRequest parse_completion_request(const json& body) {
  require_object(body);
  Fields f(body);
  CompletionRequest r;
  r.model = model_field(f);
  const json* p = f.get("prompt");
  if (!p)
    throw ApiException(bad_request("Missing required parameter: 'prompt'.", "prompt",
                                   "missing_required_parameter"));
  auto token_list = [](const json& arr, const std::string& field) {
    std::vector<int32_t> ids;
    ids.reserve(arr.size());
    for (size_t i = 0; i < arr.size(); ++i) {
      std::string ef = fmt::format("{}[{}]", field, i);
      int64_t id = Fields::as_integer(arr[i], ef);
      if (id < 0 || id > std::numeric_limits<int32_t>::max())
        bad_value(ef, fmt::format("{} is not a token id.", id));
      ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
  };
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
  } else if (p->is_array()) {
    if (p->empty()) bad_value("prompt", "the list must not be empty.");
    const json& first = (*p)[0];
    if (first.is_string() || first.is_array()) {
      if (p->size() != 1)
        unsupported("prompt", fmt::format("{} prompts in one request are not supported yet; send one "
                                          "prompt per request.", p->size()));
      if (first.is_string()) {
        r.prompt_text = first.get<std::string>();
      } else {
        if (first.empty()) bad_value("prompt[0]", "the token list must not be empty.");
        r.prompt_kind = PromptKind::kTokens;
        r.prompt_tokens = token_list(first, "prompt[0]");
      }
    } else if (first.is_number()) {
      r.prompt_kind = PromptKind::kTokens;
      r.prompt_tokens = token_list(*p, "prompt");
    } else {
      wrong_type("prompt[0]", "a string, a token id or a token list", first);
    }
  } else {
    wrong_type("prompt", "a string, an array of strings or an array of token ids", *p);
  }
  r.max_tokens = f.integer("max_tokens", 1, int64_t{1} << 40);
  r.sampling = parse_sampling(f);
  r.stop = parse_stop(f);
  parse_stream(f, r.stream, r.include_usage);
  r.n = parse_n(f);
  if (auto lp = f.integer("logprobs", 0, 5)) r.logprobs = static_cast<int32_t>(*lp);
  if (f.boolean("echo").value_or(false)) unsupported("echo", "echo is not supported yet.");
  if (auto b = f.integer("best_of", 1, std::numeric_limits<int32_t>::max()); b && *b != 1)
    unsupported("best_of", "best_of > 1 is not supported yet.");
  if (auto s = f.string("suffix"); s && !s->empty()) unsupported("suffix", "suffix is not supported yet.");
  if (auto u = f.string("user")) r.user = *u;
  return r;
}

namespace {

SamplingParams apply_sampling(const SamplingFields& s, const SamplingParams& defaults,
                              const RequestPolicy& policy) {
  SamplingParams p = defaults;
  // A request's temperature decides greedy or not, over the artifact's generation_config (do_sample: false only sets
  // the default), as vLLM does.
  if (s.temperature) p.temperature = *s.temperature, p.greedy = false;
  if (s.top_p) p.top_p = *s.top_p;
  if (s.top_k) p.top_k = *s.top_k;
  if (s.min_p) p.min_p = *s.min_p;
  if (s.presence_penalty) p.presence_penalty = *s.presence_penalty;
  if (s.frequency_penalty) p.frequency_penalty = *s.frequency_penalty;
  if (s.repetition_penalty) p.repetition_penalty = *s.repetition_penalty;
  if (s.seed) p.seed = s.seed;
  p.logit_bias = s.logit_bias;
  if (policy.force_greedy || p.temperature == 0.0) p.greedy = true;
  return p;
}

}  // namespace

GenerationRequest to_generation_request(const ChatCompletionRequest& req, const std::string& id,
                                        const SamplingParams& defaults, const RequestPolicy& policy) {
  GenerationRequest g;
  g.request_id = id;
  g.kind = PromptKind::kChat;
  g.messages = req.messages;
  g.enable_thinking = req.enable_thinking;
  g.reasoning_effort = req.reasoning_effort;
  if (req.reasoning_effort && *req.reasoning_effort == "none" && !g.enable_thinking)
    g.enable_thinking = false;
  g.parse_reasoning = true;
  g.sampling = apply_sampling(req.sampling, defaults, policy);
  g.sampling.logprobs = req.logprobs;
  g.sampling.top_logprobs = req.top_logprobs;
  g.max_tokens = req.max_tokens;
  g.reasoning_budget = policy.reasoning_budget;
  g.stop = req.stop;
  g.tools = req.tools;
  g.tool_choice = req.tool_choice;
  g.parallel_tool_calls = req.parallel_tool_calls;
  g.response_format = req.response_format;
  g.template_kwargs = req.template_kwargs;
  return g;
}

GenerationRequest to_generation_request(const CompletionRequest& req, const std::string& id,
                                        const SamplingParams& defaults, const RequestPolicy& policy) {
  GenerationRequest g;
  g.request_id = id;
  g.kind = req.prompt_kind;
  g.prompt_text = req.prompt_text;
  g.prompt_tokens = req.prompt_tokens;
  g.parse_reasoning = false;  // raw text in, raw text out
  g.sampling = apply_sampling(req.sampling, defaults, policy);
  g.sampling.logprobs = req.logprobs.has_value();
  g.sampling.top_logprobs = req.logprobs.value_or(0);
  g.max_tokens = req.max_tokens.value_or(kDefaultCompletionMaxTokens);
  g.stop = req.stop;
  return g;
}

void require_servable_tool_choice(const GenerationRequest& request, ToolCallFormat format) {
  // A forced call (constrained decoding, server/structured_output.h) is written in the model's tool-call markup.
  const bool forced = request.tool_choice.mode == ToolChoiceMode::kRequired || request.tool_choice.mode == ToolChoiceMode::kNamed;
  if (forced && format == ToolCallFormat::kNone)
    unsupported("tool_choice", "tool_choice 'required' or a named function needs a tool-call format, and this server "
                               "parses none (--tool-call-parser none, or the chat template writes no tool calls); "
                               "send 'auto' or start the server with --tool-call-parser xml|hermes.");
}

}  // namespace ninfer::server
