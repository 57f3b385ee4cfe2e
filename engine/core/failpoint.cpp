#include "engine/core/failpoint.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/core/error.h"

namespace ninfer {
namespace {

struct Point {
  std::string name;
  uint64_t fire_at = 0;
  bool and_after = false;
  std::atomic<uint64_t> hits{0};
};

// Parsed once; a malformed entry is an error the first time any failpoint is reached (a fault test that
// silently tests nothing would pass).
struct Points {
  std::vector<std::unique_ptr<Point>> list;
  std::string error;
  Points() {
    const char* env = std::getenv("NINFER_FAILPOINTS");
    if (!env || !*env) return;
    std::string_view spec(env);
    while (!spec.empty()) {
      const size_t comma = spec.find(',');
      std::string_view item = spec.substr(0, comma);
      spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
      const size_t colon = item.rfind(':');
      auto p = std::make_unique<Point>();
      std::string count(colon == std::string_view::npos ? std::string_view() : item.substr(colon + 1));
      if (!count.empty() && count.back() == '+') p->and_after = true, count.pop_back();
      char* end = nullptr;
      const unsigned long long n = count.empty() ? 0 : std::strtoull(count.c_str(), &end, 10);
      if (colon == std::string_view::npos || colon == 0 || n == 0 || *end != '\0') {
        error = "NINFER_FAILPOINTS: '" + std::string(item) + "' is not name:N or name:N+ (N >= 1)";
        return;
      }
      p->name = std::string(item.substr(0, colon));
      p->fire_at = n;
      spdlog::warn("failpoint '{}' armed: fires on hit {}{}", p->name, n, p->and_after ? " and later" : "");
      list.push_back(std::move(p));
    }
  }
};

const Points& points() {
  static const Points p;
  return p;
}

}  // namespace

void failpoint(std::string_view name) {
  const Points& ps = points();
  if (ps.list.empty() && ps.error.empty()) return;
  if (!ps.error.empty()) fail(ErrorKind::kInvalidArgument, "{}", ps.error);
  for (const auto& p : ps.list) {
    if (p->name != name) continue;
    const uint64_t hit = p->hits.fetch_add(1, std::memory_order_relaxed) + 1;
    if (hit == p->fire_at || (p->and_after && hit > p->fire_at))
      fail(ErrorKind::kInternal, "failpoint '{}' fired (hit {})", p->name, hit);
  }
}

}  // namespace ninfer
