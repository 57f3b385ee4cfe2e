#include "engine/constrain/completion_costs.h"

#include <algorithm>

#include "engine/constrain/sorted_walk.h"

namespace ninfer::constrain {

std::shared_ptr<const CompletionCosts::Costs> CompletionCosts::of(const StackSet& state, const TokenBits& allowed) {
  {
    std::lock_guard lock(mu_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
      if (it->first == state.data) {
        kept_.splice(kept_.begin(), kept_, it);
        return kept_.front().second;
      }
  }
  auto costs = std::make_shared<Costs>();
  thread_local SortedWalk walk;
  walk.start(matcher_, vocab_, state);
  for (int32_t id : vocab_.sorted()) {
    if (!allowed.test(id)) continue;
    const StackSet* next = walk.after(id);  // never null for a mask's token; unreachable if it were
    costs->by_cost.emplace_back(next ? matcher_.shortest_completion(*next) : GrammarMatcher::kUnreachable, id);
  }
  std::sort(costs->by_cost.begin(), costs->by_cost.end());
  std::lock_guard lock(mu_);
  ++walks_;
  kept_.emplace_front(state.data, costs);
  if (kept_.size() > kCachedStates) kept_.pop_back();
  return costs;
}

size_t CompletionCosts::walks() const {
  std::lock_guard lock(mu_);
  return walks_;
}

}  // namespace ninfer::constrain
