#include "server/openai_response.h"

#include <algorithm>

#include "server/request_report.h"

namespace ninfer::server {

using json = nlohmann::ordered_json;

void CollectedOutput::add(const Delta& d) {
  (d.channel == Channel::kReasoning ? reasoning : content) += d.text;
  logprobs.insert(logprobs.end(), d.logprobs.begin(), d.logprobs.end());
  token_ids.insert(token_ids.end(), d.token_ids.begin(), d.token_ids.end());
}

std::string_view chat_finish_reason(const FinalResult& r, bool has_tool_calls) {
  if (has_tool_calls && r.stop_reason == StopReason::kEos) return "tool_calls";
  return finish_reason_name(r.stop_reason);
}

std::string system_fingerprint() { return std::string("ninfer-") + NINFER_VERSION; }

json usage_json(const FinalResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}},
          {"completion_tokens_details", {{"reasoning_tokens", r.reasoning_tokens}}}};
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

json head_json(const ResponseHead& h, const char* object) {
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model},
          {"system_fingerprint", system_fingerprint()}};
}

json reasoning_value(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

json chat_logprobs_json(const std::vector<TokenLogprob>& lps) {
  json content = json::array();
  for (const TokenLogprob& t : lps) {
    json top = json::array();
    for (const TopLogprob& a : t.top)
      top.push_back({{"token", a.token}, {"logprob", a.logprob}, {"bytes", bytes_of(a.token)}});
    content.push_back(
        {{"token", t.token}, {"logprob", t.logprob}, {"bytes", bytes_of(t.token)}, {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t text_offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const TokenLogprob& t : lps) {
    tokens.push_back(t.token);
    token_logprobs.push_back(t.logprob);
    json alts = json::object();
    for (const TopLogprob& a : t.top) alts[a.token] = a.logprob;
    top.push_back(alts);
    offsets.push_back(text_offset);
    text_offset += t.token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top},
          {"text_offset", offsets}};
}

namespace {

json chat_choice_json(int index, const CollectedOutput& out, const FinalResult& r, bool logprobs) {
  const bool calls = !out.tool_calls.empty();
  json message = {{"role", "assistant"},
                  {"content", calls && out.content.empty() ? json(nullptr) : json(out.content)},
                  {"reasoning_content", reasoning_value(out.reasoning)},
                  {"reasoning", reasoning_value(out.reasoning)},
                  {"refusal", nullptr}};
  if (calls) {
    json list = json::array();
    for (const ToolCall& c : out.tool_calls)
      list.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    message["tool_calls"] = std::move(list);
  }
  return {{"index", index},
          {"message", std::move(message)},
          {"logprobs", logprobs ? chat_logprobs_json(out.logprobs) : json(nullptr)},
          {"finish_reason", chat_finish_reason(r, calls)}};
}

json completion_choice_json(int index, const CollectedOutput& out, const FinalResult& r, bool logprobs) {
  json c = {{"index", index},
            {"text", out.content},
            {"logprobs", logprobs ? completion_logprobs_json(out.logprobs, 0) : json(nullptr)},
            {"finish_reason", finish_reason_name(r.stop_reason)}};
  if (out.with_token_ids) c["token_ids"] = out.token_ids;
  return c;
}

template <typename ChoiceFn>
json response_json(const ResponseHead& head, const char* object, const std::vector<ChoiceOutput>& choices,
                   const FinalResult& total, bool logprobs, ChoiceFn choice) {
  json j = head_json(head, object);
  j["choices"] = json::array();
  for (size_t i = 0; i < choices.size(); ++i)
    j["choices"].push_back(choice(static_cast<int>(i), choices[i].out, choices[i].result, logprobs));
  j["usage"] = usage_json(total);
  j["timings"] = timings_json(total);
  return j;
}

}  // namespace

json chat_completion_json(const ResponseHead& head, const std::vector<ChoiceOutput>& choices, const FinalResult& total,
                          bool logprobs) {
  return response_json(head, "chat.completion", choices, total, logprobs, chat_choice_json);
}

json completion_json(const ResponseHead& head, const std::vector<ChoiceOutput>& choices, const FinalResult& total,
                     bool logprobs) {
  return response_json(head, "text_completion", choices, total, logprobs, completion_choice_json);
}

json chat_completion_json(const ResponseHead& head, const CollectedOutput& out, const FinalResult& r,
                          bool logprobs) {
  return chat_completion_json(head, {ChoiceOutput{out, r}}, r, logprobs);
}

json completion_json(const ResponseHead& head, const CollectedOutput& out, const FinalResult& r,
                     bool logprobs) {
  return completion_json(head, {ChoiceOutput{out, r}}, r, logprobs);
}

json chat_role_chunk(const ResponseHead& head, bool usage_field, int index) {
  json j = head_json(head, "chat.completion.chunk");
  j["choices"] = json::array({{{"index", index},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  if (usage_field) j["usage"] = nullptr;
  return j;
}

std::vector<json> chat_delta_chunks(const ResponseHead& head, const Delta& d, bool logprobs,
                                    bool usage_field, int index) {
  const bool show_lp = logprobs && !d.logprobs.empty();
  if (d.text.empty() && !show_lp) return {};
  json delta = json::object();
  if (d.channel == Channel::kReasoning) {
    delta["reasoning_content"] = d.text;
    delta["reasoning"] = d.text;
  } else {
    delta["content"] = d.text;
  }
  json j = head_json(head, "chat.completion.chunk");
  j["choices"] = json::array({{{"index", index},
                               {"delta", std::move(delta)},
                               {"logprobs", show_lp ? chat_logprobs_json(d.logprobs) : json(nullptr)},
                               {"finish_reason", nullptr}}});
  if (usage_field) j["usage"] = nullptr;
  return {std::move(j)};
}

std::vector<json> chat_tool_call_chunks(const ResponseHead& head, const std::vector<ToolCallEvent>& events,
                                        bool usage_field, int index) {
  std::vector<json> chunks;
  for (const ToolCallEvent& e : events) {
    json call = {{"index", e.index}};
    if (e.start) {
      call["id"] = e.id;
      call["type"] = "function";
      call["function"] = {{"name", e.name}, {"arguments", ""}};
    } else {
      call["function"] = {{"arguments", e.arguments}};
    }
    json j = head_json(head, "chat.completion.chunk");
    j["choices"] = json::array({{{"index", index},
                                 {"delta", {{"tool_calls", json::array({std::move(call)})}}},
                                 {"logprobs", nullptr},
                                 {"finish_reason", nullptr}}});
    if (usage_field) j["usage"] = nullptr;
    chunks.push_back(std::move(j));
  }
  return chunks;
}

std::vector<json> chat_output_chunks(const ResponseHead& head, const Delta& d, const std::vector<ToolCallEvent>& events,
                                     bool logprobs, bool usage_field, int index) {
  if (events.empty()) return chat_delta_chunks(head, d, logprobs, usage_field, index);
  std::vector<json> out;
  size_t at = 0;
  bool first = true;
  auto text_until = [&](size_t end) {
    Delta part{d.channel, d.text.substr(at, end - at), 0, {}};
    if (first) part.logprobs = d.logprobs;
    first = false;
    for (json& c : chat_delta_chunks(head, part, logprobs, usage_field, index)) out.push_back(std::move(c));
    at = end;
  };
  for (const ToolCallEvent& e : events) {
    if (first || e.content_offset > at) text_until(std::min(e.content_offset, d.text.size()));
    for (json& c : chat_tool_call_chunks(head, {e}, usage_field, index)) out.push_back(std::move(c));
  }
  if (at < d.text.size()) text_until(d.text.size());
  return out;
}

json chat_finish_chunk(const ResponseHead& head, const FinalResult& r, bool usage_field,
                       bool with_timings, bool has_tool_calls, int index) {
  json j = head_json(head, "chat.completion.chunk");
  j["choices"] = json::array({{{"index", index},
                               {"delta", json::object()},
                               {"logprobs", nullptr},
                               {"finish_reason", chat_finish_reason(r, has_tool_calls)}}});
  if (usage_field) j["usage"] = nullptr;
  if (with_timings) j["timings"] = timings_json(r);
  return j;
}

json usage_chunk(const ResponseHead& head, const char* object, const FinalResult& r) {
  json j = head_json(head, object);
  j["choices"] = json::array();
  j["usage"] = usage_json(r);
  j["timings"] = timings_json(r);
  return j;
}

std::vector<json> completion_delta_chunks(const ResponseHead& head, const Delta& d, bool logprobs,
                                          bool usage_field, size_t text_offset, int index) {
  const bool show_lp = logprobs && !d.logprobs.empty();
  if (d.text.empty() && !show_lp && d.token_ids.empty()) return {};
  json j = head_json(head, "text_completion");
  j["choices"] = json::array({{{"index", index},
                               {"text", d.text},
                               {"logprobs", show_lp ? completion_logprobs_json(d.logprobs, text_offset) : json(nullptr)},
                               {"finish_reason", nullptr}}});
  if (!d.token_ids.empty()) j["choices"][0]["token_ids"] = d.token_ids;
  if (usage_field) j["usage"] = nullptr;
  return {std::move(j)};
}

json completion_finish_chunk(const ResponseHead& head, const FinalResult& r, bool usage_field,
                             bool with_timings, int index) {
  json j = head_json(head, "text_completion");
  j["choices"] = json::array({{{"index", index},
                               {"text", ""},
                               {"logprobs", nullptr},
                               {"finish_reason", finish_reason_name(r.stop_reason)}}});
  if (usage_field) j["usage"] = nullptr;
  if (with_timings) j["timings"] = timings_json(r);
  return j;
}

json model_json(const std::string& id, int64_t created) {
  return {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "ninfer"}};
}

json models_json(const std::string& id, int64_t created, int64_t max_context) {
  json m = model_json(id, created);
  m["max_model_len"] = max_context;  // vLLM's extension: clients read the context size from it
  return {{"object", "list"}, {"data", json::array({std::move(m)})}};
}

}  // namespace ninfer::server
