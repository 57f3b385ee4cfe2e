// Owns the speculative-decoding counters: per request (RequestResult::spec) and engine-wide (EngineStats).
#pragma once

#include <cstdint>
#include <vector>

namespace ninfer {

struct SpecStats {
  int64_t verify_steps = 0;     // verification steps (one per drafted block)
  int64_t drafted_tokens = 0;   // draft tokens verified
  int64_t accepted_tokens = 0;  // draft tokens committed as they were drafted
  std::vector<int64_t> accepted_at;  // [K]: blocks whose draft at position i (0-based) was accepted

  // Tokens committed per verification step: the accepted drafts plus the target's own token.
  double mean_acceptance_length() const {
    return verify_steps == 0 ? 0.0 : 1.0 + static_cast<double>(accepted_tokens) / static_cast<double>(verify_steps);
  }
  double acceptance_rate() const {
    return drafted_tokens == 0 ? 0.0 : static_cast<double>(accepted_tokens) / static_cast<double>(drafted_tokens);
  }
  // One verification step over `drafted` drafts whose first `accepted` were committed; accepted_at spans at least
  // `positions` entries (K).
  void record_step(int64_t drafted, int64_t accepted, size_t positions) {
    verify_steps++, drafted_tokens += drafted, accepted_tokens += accepted;
    if (accepted_at.size() < positions) accepted_at.resize(positions, 0);
    for (int64_t j = 0; j < accepted; ++j) accepted_at[static_cast<size_t>(j)]++;
  }
  void add(const SpecStats& o) {
    verify_steps += o.verify_steps, drafted_tokens += o.drafted_tokens, accepted_tokens += o.accepted_tokens;
    if (accepted_at.size() < o.accepted_at.size()) accepted_at.resize(o.accepted_at.size(), 0);
    for (size_t i = 0; i < o.accepted_at.size(); ++i) accepted_at[i] += o.accepted_at[i];
  }
};

}  // namespace ninfer
