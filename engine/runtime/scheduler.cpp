#include "engine/runtime/scheduler.h"

#include <algorithm>

namespace ninfer {

std::unique_ptr<Sequence> Scheduler::remove(RequestId id) {
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if ((*it)->id == id) {
      std::unique_ptr<Sequence> s = std::move(*it);
      running_.erase(it);
      committed_ -= s->reserved_blocks;
      return s;
    }
  }
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if ((*it)->id == id) {
      std::unique_ptr<Sequence> s = std::move(*it);
      waiting_.erase(it);
      return s;
    }
  }
  return nullptr;
}

Sequence* Scheduler::find(RequestId id) {
  for (auto& s : running_)
    if (s->id == id) return s.get();
  for (auto& s : waiting_)
    if (s->id == id) return s.get();
  return nullptr;
}

}  // namespace ninfer
