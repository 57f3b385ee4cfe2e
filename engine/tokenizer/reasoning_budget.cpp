// Owns reasoning_effort parsing, the effort -> budget mapping and the reasoning budget tracker.
#include "engine/tokenizer/reasoning_budget.h"

#include <algorithm>
#include <limits>

#include "engine/core/error.h"

namespace ninfer {

ReasoningEffort parse_reasoning_effort(std::string_view v) {
  if (v == "none") return ReasoningEffort::kNone;
  if (v == "low" || v == "minimal") return ReasoningEffort::kLow;
  if (v == "medium") return ReasoningEffort::kMedium;
  if (v == "high") return ReasoningEffort::kHigh;
  fail(ErrorKind::kInvalidArgument, "reasoning_effort '{}' is not one of none, minimal, low, medium, high", v);
}

std::string_view reasoning_effort_name(ReasoningEffort e) {
  switch (e) {
    case ReasoningEffort::kNone:
      return "none";
    case ReasoningEffort::kLow:
      return "low";
    case ReasoningEffort::kMedium:
      return "medium";
    case ReasoningEffort::kHigh:
      return "high";
  }
  return "?";
}

ReasoningConfig resolve_reasoning(std::optional<ReasoningEffort> effort, const ReasoningBudgets& b) {
  if (!effort) return {};
  switch (*effort) {
    case ReasoningEffort::kNone:
      return {false, std::nullopt};
    case ReasoningEffort::kLow:
      return {true, b.low};
    case ReasoningEffort::kMedium:
      return {true, b.medium};
    case ReasoningEffort::kHigh:
      return {true, b.high};
  }
  return {};
}

std::optional<int64_t> generation_reasoning_budget(const nlohmann::json& gen, std::string_view where) {
  if (!gen.is_object()) return std::nullopt;
  auto it = gen.find("reasoning_budget");
  if (it == gen.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > std::numeric_limits<int32_t>::max())
    fail(ErrorKind::kInvalidArgument,
         "{}: generation config reasoning_budget {} is not a token count (an integer from 0 to {}; leave it out for "
         "no default budget)",
         where, it->dump(), std::numeric_limits<int32_t>::max());
  return it->get<int64_t>();
}

ReasoningBudget resolve_reasoning_budget(std::optional<int64_t> request, std::optional<int64_t> server,
                                         std::optional<int64_t> artifact) {
  if (request) return {server ? std::min(*request, *server) : *request, ReasoningBudgetSource::kRequest};
  if (server) return {server, ReasoningBudgetSource::kServer};
  if (artifact) return {artifact, ReasoningBudgetSource::kArtifact};
  return {};
}

ReasoningBudgetTracker::ReasoningBudgetTracker(const Tokenizer& tok, int32_t budget_tokens, bool in_reasoning)
    : think_id_(tok.require_token_id("<think>")),
      end_think_id_(tok.require_token_id("</think>")),
      budget_(budget_tokens),
      in_reasoning_(in_reasoning) {
  if (budget_tokens < 0) fail(ErrorKind::kInvalidArgument, "reasoning budget {} is negative", budget_tokens);
  closing_ = tok.encode("\n");
  closing_.push_back(end_think_id_);
  std::vector<int32_t> tail = tok.encode("\n\n");
  closing_.insert(closing_.end(), tail.begin(), tail.end());
}

bool ReasoningBudgetTracker::observe(int32_t id) {
  if (!in_reasoning_) {
    if (id == think_id_ && used_ == 0 && !forced_) in_reasoning_ = true;
    return false;
  }
  if (id == end_think_id_) {
    in_reasoning_ = false;
    return false;
  }
  ++used_;
  if (used_ >= budget_ && !forced_) {
    forced_ = true;
    return true;
  }
  return false;
}

}  // namespace ninfer
