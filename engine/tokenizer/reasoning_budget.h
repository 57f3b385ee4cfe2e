// Owns reasoning_effort -> thinking switch and reasoning-token budget, and the budget tracker the engine runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"

namespace ninfer {

enum class ReasoningEffort { kNone, kLow, kMedium, kHigh };

// Parses the OpenAI `reasoning_effort` value ("none", "low", "medium", "high"; also "minimal" = low).
// Throws kInvalidArgument naming the accepted values.
ReasoningEffort parse_reasoning_effort(std::string_view value);
std::string_view reasoning_effort_name(ReasoningEffort effort);

// Reasoning-token budgets per effort level (configurable; these are the defaults documented in docs/tokenizer.md).
struct ReasoningBudgets {
  int32_t low = 1024;
  int32_t medium = 4096;
  int32_t high = 16384;
};

struct ReasoningConfig {
  std::optional<bool> enable_thinking;   // nullopt: the chat template's default
  std::optional<int32_t> budget_tokens;  // nullopt: unlimited (bounded only by max_tokens)
};

// none -> thinking off; low/medium/high -> thinking on with that budget; no effort -> template default, no budget.
ReasoningConfig resolve_reasoning(std::optional<ReasoningEffort> effort, const ReasoningBudgets& budgets = {});

// The reasoning budget an artifact carries as its default: the integer `reasoning_budget` of its generation config
// (generation_config.json, or `ninfer-pack --reasoning-budget N`). Absent or null: none. Anything but an integer in
// 0..2^31-1 is an error (kInvalidArgument) naming `where` and the value.
std::optional<int64_t> generation_reasoning_budget(const nlohmann::json& generation_config, std::string_view where);

// Where a request's reasoning budget came from (resolve_reasoning_budget).
enum class ReasoningBudgetSource { kNone, kRequest, kServer, kArtifact };

struct ReasoningBudget {
  std::optional<int64_t> tokens;  // nullopt: unlimited (bounded only by max_tokens)
  ReasoningBudgetSource source = ReasoningBudgetSource::kNone;
};

// The budget one request runs under, in precedence order:
//   1. the request's own (its reasoning_effort low/medium/high), capped by the server's --reasoning-budget when set;
//   2. the server's --reasoning-budget N;
//   3. the artifact's default (generation_reasoning_budget; the caller passes none after --reasoning-budget -1);
//   4. none.
ReasoningBudget resolve_reasoning_budget(std::optional<int64_t> request, std::optional<int64_t> server,
                                         std::optional<int64_t> artifact);

// Counts generated reasoning tokens and says when the budget is spent. The engine then appends closing_ids()
// (the text "\n</think>\n\n", with </think> as its control token) to the sequence, feeds them back through
// observe(), and generation continues with the answer.
class ReasoningBudgetTracker {
 public:
  // `in_reasoning`: the prompt left a <think> block open.
  ReasoningBudgetTracker(const Tokenizer& tokenizer, int32_t budget_tokens, bool in_reasoning);

  // Records one generated (or forced) token. Returns true exactly once: when this token spends the budget while
  // the block is still open.
  bool observe(int32_t id);

  bool in_reasoning() const { return in_reasoning_; }
  int32_t used() const { return used_; }
  int32_t budget() const { return budget_; }
  // Whether the block was closed by the budget (for the request log).
  bool forced_close() const { return forced_; }
  const std::vector<int32_t>& closing_ids() const { return closing_; }

 private:
  int32_t think_id_;
  int32_t end_think_id_;
  int32_t budget_;
  int32_t used_ = 0;
  bool in_reasoning_;
  bool forced_ = false;
  std::vector<int32_t> closing_;
};

}  // namespace ninfer
