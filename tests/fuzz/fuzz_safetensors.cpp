// Fuzz target: a .safetensors file (8-byte header length, JSON header, data). open() either throws ninfer::Error
// or returns tensors whose byte ranges lie inside the file, match dtype x shape, and do not overlap.
#include <algorithm>

#include "engine/core/error.h"
#include "engine/hf/safetensors.h"
#include "tests/fuzz/fuzz_common.h"

NINFER_FUZZ_TARGET {
  const std::string& path = ninfer::fuzz::write_scratch(data, size);
  try {
    const ninfer::SafetensorsFile f = ninfer::SafetensorsFile::open(path);
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& [name, t] : f.tensors()) {
      NINFER_FUZZ_CHECK(t.file_offset <= f.file_bytes() && t.data.size() <= f.file_bytes() - t.file_offset, name);
      const std::optional<uint64_t> eb = ninfer::safetensors_element_bytes(t.st_dtype);
      NINFER_FUZZ_CHECK(eb.has_value(), name);
      uint64_t elems = 1;
      for (int64_t d : t.shape) {
        NINFER_FUZZ_CHECK(d >= 0, name);
        elems *= static_cast<uint64_t>(d);
      }
      NINFER_FUZZ_CHECK(elems * *eb == t.data.size(), name);
      if (!t.data.empty()) {
        volatile std::byte first = t.data.front(), last = t.data.back();  // the view is readable
        (void)first;
        (void)last;
        ranges.emplace_back(t.file_offset, t.file_offset + t.data.size());
      }
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) NINFER_FUZZ_CHECK(ranges[i].first >= ranges[i - 1].second, "overlap");
  } catch (const ninfer::Error&) {
  }
  return 0;
}
