// Owns answering one generation request from its choices' output: the JSON response, or the SSE stream, and
// cancelling every choice when the client goes away or a choice fails.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <httplib.h>

#include "server/api_error.h"
#include "server/choice_group.h"
#include "server/engine_port.h"
#include "server/openai_response.h"
#include "server/request_stream.h"
#include "server/tool_call_parser.h"

namespace ninfer::server {

// One generation request after parsing: what answering it needs besides the GenerationRequest.
struct Prepared {
  bool chat = true;
  GenerationRequest gen;
  int n = 1;                        // choices
  std::optional<std::string> model;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  std::string max_tokens_field;
  std::string user;
  std::optional<ToolCallParserOptions> tool_calls;  // set: each choice's content is parsed for tool calls
  bool token_ids = false;           // the model has no tokenizer: choices list their output token ids
};

// What the reply runs against; `keep` is held until the reply is done (the in-flight slot).
struct ReplyContext {
  EnginePort* engine = nullptr;
  Prepared p;
  ResponseHead head;
  std::shared_ptr<RequestStream> stream;
  std::shared_ptr<ChoiceGroup> group;
  std::shared_ptr<void> keep;
};

// The answer to an engine refusal: kNotReady 503, kQueueFull 429, kContextLength and kInvalid 400, else 500.
ApiError rejection_error(const SubmitResult& sr);

// Waits for every choice and answers 200 with the n choices; throws ApiException for a failed, cancelled or refused
// choice (all choices cancelled); a client that hangs up cancels every choice (answered 499).
void reply_json(const ReplyContext& c, httplib::Response& res);
// Streams the choices' chunks as they come (each tagged with its index), then one usage chunk (include_usage), then
// [DONE]; `ping`: an SSE comment after this long without output.
void reply_stream(const ReplyContext& c, httplib::Response& res, std::chrono::milliseconds ping);

}  // namespace ninfer::server
