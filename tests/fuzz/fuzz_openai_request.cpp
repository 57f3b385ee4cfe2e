// Fuzz target: a request body, as the server reads it, into a validated chat / completion request. Only the
// documented 400s may come out (ApiException with a string code and a body that dumps); anything else would be a
// 500 or a crash.
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

using nlohmann::json;
using namespace ninfer::server;

template <typename Parse>
void validate(const json& body, Parse parse) {
  try {
    auto req = parse(body);
    GenerationRequest g = to_generation_request(req, "id", SamplingParams{}, RequestPolicy{});
    NINFER_FUZZ_CHECK(!g.max_tokens || *g.max_tokens >= 1);
    for (const std::string& s : g.stop) NINFER_FUZZ_CHECK(!s.empty());
    NINFER_FUZZ_CHECK(g.stop.size() <= 16);
    NINFER_FUZZ_CHECK(g.sampling.top_logprobs >= 0 && g.sampling.top_logprobs <= 20);
    for (int32_t id : g.prompt_tokens) NINFER_FUZZ_CHECK(id >= 0);
  } catch (const ApiException& e) {
    const ApiError& err = e.error();
    NINFER_FUZZ_CHECK(err.status == 400 || err.status == 404);
    NINFER_FUZZ_CHECK(err.code.has_value() && !err.code->empty());
    const json out = json::parse(err.body());  // the body the client gets is JSON, whatever the input held
    NINFER_FUZZ_CHECK(out["error"]["code"].is_string());
  }
}

}  // namespace

NINFER_FUZZ_TARGET {
  json body;
  try {
    body = json::parse(ninfer::fuzz::as_text(data, size));
  } catch (const json::exception&) {
    return 0;  // 400 invalid_json: the server's parse_body()
  }
  validate(body, parse_chat_request);
  validate(body, parse_completion_request);
  return 0;
}
