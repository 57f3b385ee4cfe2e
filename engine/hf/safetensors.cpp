#include "engine/hf/safetensors.h"

#include <algorithm>
#include <array>
#include <utility>

#include "engine/core/error.h"

namespace ninfer {

namespace {

struct StDtype {
  const char* name;
  uint64_t bytes;
  std::optional<DType> dtype;
};

// The dtypes of the safetensors specification. Only those with an artifact twin pass through as-is.
constexpr std::array<StDtype, 16> kStDtypes{{
    {"F64", 8, std::nullopt},
    {"F32", 4, DType::kF32},
    {"F16", 2, DType::kF16},
    {"BF16", 2, DType::kBF16},
    {"I64", 8, std::nullopt},
    {"I32", 4, DType::kI32},
    {"I16", 2, std::nullopt},
    {"I8", 1, DType::kI8},
    {"U64", 8, std::nullopt},
    {"U32", 4, std::nullopt},
    {"U16", 2, std::nullopt},
    {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt},
    {"F8_E4M3", 1, DType::kF8E4M3},
    {"F8_E5M2", 1, std::nullopt},
    {"F8_E8M0", 1, std::nullopt},
}};

const StDtype* find_st_dtype(const std::string& name) {
  for (const auto& d : kStDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the reference implementation's limit

}  // namespace

std::optional<uint64_t> safetensors_element_bytes(const std::string& st_dtype) {
  const StDtype* d = find_st_dtype(st_dtype);
  if (!d) return std::nullopt;
  return d->bytes;
}

SafetensorsFile SafetensorsFile::open(const std::string& utf8_path) {
  SafetensorsFile f;
  f.file_ = MappedFile::open(utf8_path);
  const uint64_t size = f.file_.size();
  const std::byte* p = f.file_.data();
  if (size < 8) fail(ErrorKind::kCorrupt, "{}: truncated: {} bytes, a safetensors file starts with an 8-byte header length", utf8_path, size);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(p[i]);
  if (header_len > size - 8)
    fail(ErrorKind::kCorrupt, "{}: header length {} runs past the end of the {}-byte file (at byte offset 0)", utf8_path,
         header_len, size);
  if (header_len > kMaxHeaderBytes)
    fail(ErrorKind::kCorrupt, "{}: header length {} exceeds the {}-byte limit (at byte offset 0)", utf8_path, header_len,
         kMaxHeaderBytes);
  std::string_view text(reinterpret_cast<const char*>(p + 8), header_len);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(ErrorKind::kCorrupt, "{}: header is not valid JSON (at byte offset {}): {}", utf8_path, 8 + e.byte, e.what());
  } catch (const nlohmann::json::exception& e) {  // out_of_range: a number beyond a double (1e400)
    fail(ErrorKind::kCorrupt, "{}: header is not valid JSON (header at byte offset 8): {}", utf8_path, e.what());
  }
  if (!header.is_object()) fail(ErrorKind::kCorrupt, "{}: header is not a JSON object (at byte offset 8)", utf8_path);

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size - data_start;
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      f.metadata_ = it.value();
      continue;
    }
    const std::string& name = it.key();
    const auto& e = it.value();
    auto bad = [&](const std::string& why) {
      fail(ErrorKind::kCorrupt, "{}: tensor '{}': {} (header at byte offset 8)", utf8_path, name, why);
    };
    if (!e.is_object()) bad("entry is not an object");
    if (!e.contains("dtype") || !e["dtype"].is_string()) bad("missing string field 'dtype'");
    if (!e.contains("shape") || !e["shape"].is_array()) bad("missing array field 'shape'");
    if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
      bad("missing field 'data_offsets' [begin, end]");
    SafetensorsTensor t;
    t.name = name;
    t.st_dtype = e["dtype"].get<std::string>();
    const StDtype* d = find_st_dtype(t.st_dtype);
    if (!d) fail(ErrorKind::kUnsupported, "{}: tensor '{}': unknown dtype '{}'", utf8_path, name, t.st_dtype);
    t.dtype = d->dtype;
    for (const auto& dim : e["shape"]) {
      if (!dim.is_number_unsigned()) bad(fmt::format("shape {} has a dimension that is not a non-negative integer", e["shape"].dump()));
      t.shape.push_back(dim.get<int64_t>());
    }
    const auto& offs = e["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned()) bad("data_offsets are not non-negative integers");
    uint64_t b = offs[0].get<uint64_t>(), en = offs[1].get<uint64_t>();
    if (b > en) bad(fmt::format("data_offsets [{}, {}] are reversed", b, en));
    if (en > data_size)
      fail(ErrorKind::kCorrupt, "{}: tensor '{}': data [{}, {}) runs past the {}-byte data buffer (ends at byte offset {}, file is {} bytes)",
           utf8_path, name, b, en, data_size, data_start + en, size);
    auto count = element_count(t.shape);
    if (!count || *count > UINT64_MAX / d->bytes) bad("shape overflows");
    if (*count * d->bytes != en - b)
      fail(ErrorKind::kCorrupt, "{}: tensor '{}': shape {} of {} needs {} bytes but data_offsets span {} (at byte offset {})",
           utf8_path, name, e["shape"].dump(), t.st_dtype, *count * d->bytes, en - b, data_start + b);
    t.file_offset = data_start + b;
    t.data = f.file_.bytes().subspan(t.file_offset, en - b);
    ranges.push_back({{b, en}, name});
    f.tensors_.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first.first < ranges[i - 1].first.second)
      fail(ErrorKind::kCorrupt, "{}: tensor '{}' overlaps tensor '{}' (at byte offset {})", utf8_path, ranges[i].second,
           ranges[i - 1].second, data_start + ranges[i].first.first);
  return f;
}

}  // namespace ninfer
