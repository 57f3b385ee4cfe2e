// Owns report.md: the seed's tables (overview, per-scenario decode, long-context prefill, memory and truncation,
// speculative decoding, context sweep) and the notes on noise and truncation, written from report.json alone.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ninfer::bench {

std::string render_markdown(const nlohmann::json& report);

// 49790 → "49,790" (the seed's style).
std::string thousands(int64_t v);

}  // namespace ninfer::bench
