#include "engine/artifact/artifact.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>

#include "engine/artifact/checksum.h"
#include "engine/artifact/format.h"
#include "engine/core/aligned_buffer.h"
#include "engine/core/error.h"
#include "engine/core/progress.h"

namespace ninfer {

namespace af = artifact_format;

namespace {

uint32_t read_u32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint64_t read_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

void Artifact::fail_at(uint64_t offset, std::string_view what) const {
  fail(ErrorKind::kCorrupt, "{}: {} (at byte offset {})", file_.path(), what, offset);
}

Artifact Artifact::open(const std::string& utf8_path, const OpenOptions& options) {
  Artifact a;
  a.file_ = MappedFile::open(utf8_path);
  a.parse_header();
  a.parse_metadata();
  a.check_layout();
  if (options.resident) a.make_resident({}, {}, options.show_progress);
  if (options.verify_checksums) a.verify(options.show_progress);
  return a;
}

void Artifact::make_resident(std::span<const std::string_view> sections, std::span<const std::string> keep_mapped,
                             bool show_progress) {
  if (sections.empty()) sections = af::kSections;
  resident_tensor_.resize(tensors_.size(), 0);
  // The new tensors' ranges in file order, neighbours merged: one copy per run of adjacent tensors.
  struct Range {
    uint64_t begin, end;
  };
  std::vector<Range> ranges;
  std::vector<size_t> adding;
  uint64_t tensor_bytes = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    if (resident_tensor_[i] || t.bytes == 0 ||
        std::find(sections.begin(), sections.end(), t.section) == sections.end() ||
        std::find(keep_mapped.begin(), keep_mapped.end(), t.name) != keep_mapped.end())
      continue;
    ranges.push_back({absolute_offset(t), absolute_offset(t) + t.bytes});
    adding.push_back(i);
    tensor_bytes += t.bytes;
  }
  if (adding.empty()) return;
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::vector<Range> runs;
  uint64_t total = 0;
  for (const Range& r : ranges) {
    if (!runs.empty() && r.begin <= runs.back().end + af::kAlignment) runs.back().end = std::max(runs.back().end, r.end);
    else runs.push_back(r);
  }
  for (const Range& r : runs) total += r.end - r.begin;
  if (!resident_) {
    // Address space for the whole file; pages are backed only where a copy writes them.
    if (file_.size() <= SIZE_MAX) resident_ = aligned_host(static_cast<size_t>(file_.size()), af::kAlignment);
    if (!resident_)
      fail(ErrorKind::kOutOfMemory, "{}: cannot allocate {} bytes to copy its weights into memory (--mmap reads them "
           "from the mapping)", file_.path(), file_.size());
  }
  auto* dst = static_cast<std::byte*>(resident_.get());
  constexpr uint64_t kStep = uint64_t{64} << 20;  // progress granularity
  ProgressBar bar("reading " + path_to_utf8(path_from_utf8(file_.path()).filename()), total, show_progress);
  for (const Range& r : runs)
    for (uint64_t at = r.begin; at < r.end; at += kStep) {
      const uint64_t n = std::min(kStep, r.end - at);
      std::memcpy(dst + at, file_.data() + at, static_cast<size_t>(n));
      bar.advance(n);
    }
  bar.finish();
  for (size_t i : adding) resident_tensor_[i] = 1;
  resident_bytes_ += tensor_bytes;
}

bool Artifact::resident(const TensorInfo& t) const {
  if (resident_bytes_ == 0) return false;
  // t is nearly always an entry of tensors_ (find, require, tensors()): its index is its place there; a copy is
  // looked up by name.
  const std::less<const TensorInfo*> before;
  size_t i = 0;
  if (!before(&t, tensors_.data()) && before(&t, tensors_.data() + tensors_.size())) {
    i = static_cast<size_t>(&t - tensors_.data());
  } else {
    const auto it = by_name_.find(t.name);
    if (it == by_name_.end()) return false;
    i = it->second;
  }
  return i < resident_tensor_.size() && resident_tensor_[i];
}

void Artifact::parse_header() {
  const uint64_t size = file_.size();
  const std::byte* p = file_.data();
  if (size < af::kMagic.size() ||
      std::memcmp(p + af::kOffMagic, af::kMagic.data(), af::kMagic.size()) != 0) {
    if (size < af::kMagic.size()) fail_at(0, fmt::format("truncated: file is {} bytes, not a .ninfer artifact", size));
    fail_at(0, "bad magic: not a .ninfer artifact");
  }
  if (size < af::kHeaderBytes)
    fail_at(size, fmt::format("truncated header: file is {} bytes, the header needs {}", size, af::kHeaderBytes));
  version_ = read_u32(p + af::kOffVersion);
  if (version_ != af::kVersion)
    fail(ErrorKind::kUnsupported, "{}: unsupported artifact version {} (this build reads version {}) (at byte offset {})",
         file_.path(), version_, af::kVersion, af::kOffVersion);
  uint32_t header_bytes = read_u32(p + af::kOffHeaderBytes);
  if (header_bytes != af::kHeaderBytes)
    fail_at(af::kOffHeaderBytes, fmt::format("header size field is {}, expected {}", header_bytes, af::kHeaderBytes));
  meta_offset_ = read_u64(p + af::kOffMetaOffset);
  meta_bytes_ = read_u64(p + af::kOffMetaBytes);
  data_offset_ = read_u64(p + af::kOffDataOffset);
  data_bytes_ = read_u64(p + af::kOffDataBytes);
  if (meta_offset_ != af::kHeaderBytes)
    fail_at(af::kOffMetaOffset, fmt::format("metadata offset is {}, expected {}", meta_offset_, af::kHeaderBytes));
  if (meta_bytes_ > size - meta_offset_)
    fail_at(af::kOffMetaBytes, fmt::format("truncated: metadata of {} bytes at offset {} runs past the end of the "
                                           "{}-byte file", meta_bytes_, meta_offset_, size));
  if (data_offset_ % af::kAlignment != 0 || data_offset_ < meta_offset_ + meta_bytes_)
    fail_at(af::kOffDataOffset, fmt::format("data offset {} is not a multiple of {} past the metadata", data_offset_,
                                            af::kAlignment));
  if (data_offset_ > size || data_bytes_ > size - data_offset_)
    fail_at(size, fmt::format("truncated: the data region [{}, {}) runs past the end of the {}-byte file",
                              data_offset_, data_offset_ + data_bytes_, size));
  uint64_t want = read_u64(p + af::kOffMetaChecksum);
  uint64_t got = checksum64(file_.bytes().subspan(meta_offset_, meta_bytes_));
  if (want != got)
    fail_at(meta_offset_, fmt::format("metadata checksum mismatch (stored {}, computed {})", checksum_hex(want),
                                      checksum_hex(got)));
}

void Artifact::parse_metadata() {
  auto text = std::string_view(reinterpret_cast<const char*>(file_.data() + meta_offset_), meta_bytes_);
  try {
    meta_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail_at(meta_offset_ + e.byte, fmt::format("metadata is not valid JSON: {}", e.what()));
  } catch (const nlohmann::json::exception& e) {  // out_of_range: a number beyond a double (1e400)
    fail_at(meta_offset_, fmt::format("metadata is not valid JSON: {}", e.what()));
  }
  if (!meta_.is_object() || !meta_.contains("tensors") || !meta_["tensors"].is_array())
    fail_at(meta_offset_, "metadata has no \"tensors\" array");
  if (!meta_.contains("config") || !meta_["config"].is_object())
    fail_at(meta_offset_, "metadata has no \"config\" object");

  auto field_u64 = [&](const nlohmann::json& e, const char* key, std::string_view who) -> uint64_t {
    if (!e.contains(key) || !e[key].is_number_unsigned())
      fail_at(meta_offset_, fmt::format("{}: field \"{}\" is missing or not an unsigned integer", who, key));
    return e[key].get<uint64_t>();
  };
  auto field_str = [&](const nlohmann::json& e, const char* key, std::string_view who) -> std::string {
    if (!e.contains(key) || !e[key].is_string())
      fail_at(meta_offset_, fmt::format("{}: field \"{}\" is missing or not a string", who, key));
    return e[key].get<std::string>();
  };
  auto field_checksum = [&](const nlohmann::json& e, std::string_view who) -> uint64_t {
    auto hex = field_str(e, "xxh3", who);
    auto v = checksum_from_hex(hex);
    if (!v) fail_at(meta_offset_, fmt::format("{}: checksum \"{}\" is not 16 hex digits", who, hex));
    return *v;
  };

  const auto& table = meta_["tensors"];
  tensors_.reserve(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& e = table[i];
    if (!e.is_object()) fail_at(meta_offset_, fmt::format("tensor table entry {} is not an object", i));
    TensorInfo t;
    t.name = field_str(e, "name", fmt::format("tensor #{}", i));
    std::string who = fmt::format("tensor '{}'", t.name);
    t.section = field_str(e, "section", who);
    if (std::find(af::kSections.begin(), af::kSections.end(), t.section) == af::kSections.end())
      fail_at(meta_offset_, fmt::format("{}: unknown section '{}'", who, t.section));
    auto dtype_name_str = field_str(e, "dtype", who);
    auto dt = dtype_from_name(dtype_name_str);
    if (!dt) fail_at(meta_offset_, fmt::format("{}: unknown dtype '{}'", who, dtype_name_str));
    t.dtype = *dt;
    if (!e.contains("shape") || !e["shape"].is_array())
      fail_at(meta_offset_, fmt::format("{}: field \"shape\" is missing or not an array", who));
    for (const auto& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        fail_at(meta_offset_, fmt::format("{}: shape {} has a negative or non-integer dimension", who, e["shape"].dump()));
      t.shape.push_back(d.get<int64_t>());
    }
    t.offset = field_u64(e, "offset", who);
    t.bytes = field_u64(e, "bytes", who);
    t.checksum = field_checksum(e, who);
    auto expect = tensor_storage_bytes(t.dtype, t.shape);
    if (!expect)
      fail_at(data_offset_ + t.offset, fmt::format("{}: shape {} is not valid for dtype {}", who, e["shape"].dump(),
                                                   dtype_name(t.dtype)));
    if (*expect != t.bytes)
      fail_at(data_offset_ + t.offset, fmt::format("{}: {} bytes recorded, but {} {} needs {}", who, t.bytes,
                                                   dtype_name(t.dtype), e["shape"].dump(), *expect));
    if (!by_name_.emplace(t.name, tensors_.size()).second)
      fail_at(meta_offset_, fmt::format("{}: appears twice in the tensor table", who));
    tensors_.push_back(std::move(t));
  }

  if (meta_.contains("blobs")) {
    if (!meta_["blobs"].is_array()) fail_at(meta_offset_, "\"blobs\" is not an array");
    for (const auto& e : meta_["blobs"]) {
      BlobInfo b;
      b.name = field_str(e, "name", "blob");
      std::string who = fmt::format("blob '{}'", b.name);
      b.offset = field_u64(e, "offset", who);
      b.bytes = field_u64(e, "bytes", who);
      b.checksum = field_checksum(e, who);
      blobs_.push_back(std::move(b));
    }
  }
}

void Artifact::check_layout() {
  struct Extent {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Extent> extents;
  extents.reserve(tensors_.size() + blobs_.size());
  auto check_one = [&](const std::string& kind, const std::string& name, uint64_t off, uint64_t bytes) {
    if (off % af::kAlignment != 0)
      fail_at(data_offset_ + off, fmt::format("{} '{}': offset {} is not {}-byte aligned", kind, name, off, af::kAlignment));
    if (off > data_bytes_ || bytes > data_bytes_ - off)
      fail_at(data_offset_ + off, fmt::format("{} '{}': bytes [{}, {}) lie outside the {}-byte data region", kind, name,
                                              off, off + bytes, data_bytes_));
    extents.push_back({off, off + bytes, &name});
  };
  for (const auto& t : tensors_) check_one("tensor", t.name, t.offset, t.bytes);
  for (const auto& b : blobs_) check_one("blob", b.name, b.offset, b.bytes);
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < extents.size(); ++i) {
    if (extents[i].begin < extents[i - 1].end)
      fail_at(data_offset_ + extents[i].begin,
              fmt::format("'{}' overlaps '{}' (bytes [{}, {}) and [{}, {}))", *extents[i].name, *extents[i - 1].name,
                          extents[i].begin, extents[i].end, extents[i - 1].begin, extents[i - 1].end));
  }
}

const nlohmann::json& Artifact::config() const { return meta_["config"]; }

const TensorInfo* Artifact::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& Artifact::require(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (!t) fail(ErrorKind::kNotFound, "{}: required tensor '{}' is missing", file_.path(), name);
  return *t;
}

std::span<const std::byte> Artifact::data(const TensorInfo& t) const {
  if (resident(t)) return {static_cast<const std::byte*>(resident_.get()) + absolute_offset(t), t.bytes};
  return file_.bytes().subspan(data_offset_ + t.offset, t.bytes);
}

std::optional<std::string_view> Artifact::blob(std::string_view name) const {
  for (const auto& b : blobs_)
    if (b.name == name)
      return std::string_view(reinterpret_cast<const char*>(file_.data() + data_offset_ + b.offset), b.bytes);
  return std::nullopt;
}

void Artifact::verify(bool show_progress) const {
  uint64_t total = 0;
  for (const auto& t : tensors_) total += t.bytes;
  for (const auto& b : blobs_) total += b.bytes;
  ProgressBar bar("verify", total, show_progress);
  for (const auto& t : tensors_) {
    uint64_t got = checksum64(data(t));
    if (got != t.checksum)
      fail_at(absolute_offset(t), fmt::format("tensor '{}': checksum mismatch (stored {}, computed {})", t.name,
                                              checksum_hex(t.checksum), checksum_hex(got)));
    bar.advance(t.bytes);
  }
  for (const auto& b : blobs_) {
    uint64_t got = checksum64(file_.bytes().subspan(data_offset_ + b.offset, b.bytes));
    if (got != b.checksum)
      fail_at(data_offset_ + b.offset, fmt::format("blob '{}': checksum mismatch (stored {}, computed {})", b.name,
                                                   checksum_hex(b.checksum), checksum_hex(got)));
    bar.advance(b.bytes);
  }
  bar.finish();
}

}  // namespace ninfer
