#include "engine/artifact/artifact_writer.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "engine/artifact/checksum.h"
#include "engine/artifact/format.h"
#include "engine/artifact/mapped_file.h"
#include "engine/core/error.h"
#include "engine/core/os_utf8.h"
#include "engine/core/progress.h"

#ifdef _WIN32
#include <io.h>
#include <process.h>
#define NINFER_GETPID _getpid
#else
#include <unistd.h>
#define NINFER_GETPID getpid
#endif

namespace ninfer {

namespace af = artifact_format;

namespace {

// A file opened for writing by UTF-8 path, with errors that name the path.
class OutputFile {
 public:
  explicit OutputFile(std::string path) : path_(std::move(path)) {
    f_ = fopen_utf8(path_, "wb");
    if (!f_) fail(ErrorKind::kIo, "{}: cannot create: {}", path_, std::strerror(errno));
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  }
  ~OutputFile() {
    if (f_) std::fclose(f_);
  }
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail(ErrorKind::kIo, "{}: write failed: {}", path_, std::strerror(errno));
    pos_ += n;
  }
  void zeros(uint64_t n) {
    static const std::array<char, 4096> z{};
    while (n) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, z.size()));
      write(z.data(), k);
      n -= k;
    }
  }
  void seek(uint64_t off) {
    if (std::fflush(f_) != 0) fail(ErrorKind::kIo, "{}: flush failed: {}", path_, std::strerror(errno));
#ifdef _WIN32
    int rc = _fseeki64(f_, static_cast<long long>(off), SEEK_SET);
#else
    int rc = fseeko(f_, static_cast<off_t>(off), SEEK_SET);
#endif
    if (rc != 0) fail(ErrorKind::kIo, "{}: seek failed: {}", path_, std::strerror(errno));
    pos_ = off;
  }
  void close_synced() {
    if (std::fflush(f_) != 0) fail(ErrorKind::kIo, "{}: flush failed: {}", path_, std::strerror(errno));
#ifdef _WIN32
    _commit(_fileno(f_));
#else
    if (::fsync(fileno(f_)) != 0) fail(ErrorKind::kIo, "{}: fsync failed: {}", path_, std::strerror(errno));
#endif
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail(ErrorKind::kIo, "{}: close failed: {}", path_, std::strerror(errno));
  }
  uint64_t pos() const { return pos_; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  uint64_t pos_ = 0;
};

void put_u32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
void put_u64(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

}  // namespace

ArtifactWriter::ArtifactWriter(nlohmann::json metadata) : meta_(std::move(metadata)) {
  if (!meta_.is_object() || !meta_.contains("config") || !meta_["config"].is_object())
    fail(ErrorKind::kInvalidArgument, "artifact metadata must be an object with a \"config\" object");
  meta_.erase("tensors");
  meta_.erase("blobs");
}

void ArtifactWriter::add_tensor(TensorEntry entry) {
  if (std::find(af::kSections.begin(), af::kSections.end(), entry.section) == af::kSections.end())
    fail(ErrorKind::kInvalidArgument, "tensor '{}': unknown section '{}'", entry.name, entry.section);
  for (const auto& p : tensors_)
    if (p.entry.name == entry.name) fail(ErrorKind::kInvalidArgument, "tensor '{}' added twice", entry.name);
  auto bytes = tensor_storage_bytes(entry.dtype, entry.shape);
  if (!bytes)
    fail(ErrorKind::kInvalidArgument, "tensor '{}': shape is not valid for dtype {}", entry.name,
         dtype_name(entry.dtype));
  tensors_.push_back({std::move(entry), *bytes});
}

void ArtifactWriter::add_blob(std::string name, std::string bytes) {
  for (const auto& b : blobs_)
    if (b.name == name) fail(ErrorKind::kInvalidArgument, "blob '{}' added twice", name);
  blobs_.push_back({std::move(name), std::move(bytes)});
}

uint64_t ArtifactWriter::data_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors_) n += t.bytes;
  for (const auto& b : blobs_) n += b.bytes.size();
  return n;
}

uint64_t ArtifactWriter::write(const std::string& utf8_path, bool show_progress) {
  // Lay out the data region: blobs first, then tensors, each at a 4096-byte boundary.
  nlohmann::json meta = meta_;
  meta["format"] = "ninfer";
  meta["format_version"] = af::kVersion;
  const std::string kPlaceholder(16, '0');  // checksums are fixed-width, so the metadata size is known up front
  uint64_t cursor = 0;
  nlohmann::json blobs = nlohmann::json::array();
  for (const auto& b : blobs_) {
    blobs.push_back({{"name", b.name}, {"offset", cursor}, {"bytes", b.bytes.size()}, {"xxh3", kPlaceholder}});
    cursor = af::align_up(cursor + b.bytes.size());
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : tensors_) {
    tensors.push_back({{"name", t.entry.name},
                       {"section", t.entry.section},
                       {"dtype", dtype_name(t.entry.dtype)},
                       {"shape", t.entry.shape},
                       {"offset", cursor},
                       {"bytes", t.bytes},
                       {"xxh3", kPlaceholder}});
    cursor = af::align_up(cursor + t.bytes);
  }
  // The data region ends at the last entry's last byte (no trailing padding).
  uint64_t data_bytes = 0;
  if (!tensors.empty()) data_bytes = tensors.back()["offset"].get<uint64_t>() + tensors_.back().bytes;
  else if (!blobs.empty()) data_bytes = blobs.back()["offset"].get<uint64_t>() + blobs_.back().bytes.size();
  meta["blobs"] = blobs;
  meta["tensors"] = tensors;
  const uint64_t meta_bytes = meta.dump().size();
  const uint64_t data_offset = af::align_up(af::kHeaderBytes + meta_bytes);

  std::filesystem::path final_path = path_from_utf8(utf8_path);
  std::string partial = utf8_path + ".partial-" + std::to_string(NINFER_GETPID());
  try {
    OutputFile out(partial);
    out.seek(data_offset);
    ProgressBar bar("pack", data_bytes, show_progress);
    for (size_t i = 0; i < blobs_.size(); ++i) {
      const auto& b = blobs_[i];
      uint64_t off = blobs[i]["offset"].get<uint64_t>();
      out.zeros(data_offset + off - out.pos());
      out.write(b.bytes.data(), b.bytes.size());
      blobs[i]["xxh3"] = checksum_hex(checksum64(std::as_bytes(std::span(b.bytes))));
      bar.advance(b.bytes.size());
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const auto& t = tensors_[i];
      uint64_t off = tensors[i]["offset"].get<uint64_t>();
      out.zeros(data_offset + off - out.pos());
      Checksum64 sum;
      uint64_t written = 0;
      t.entry.produce([&](std::span<const std::byte> piece) {
        if (written + piece.size() > t.bytes)
          fail(ErrorKind::kInternal, "tensor '{}': producer wrote more than its {} bytes", t.entry.name, t.bytes);
        out.write(piece.data(), piece.size());
        sum.update(piece);
        written += piece.size();
        bar.advance(piece.size());
      });
      if (written != t.bytes)
        fail(ErrorKind::kInternal, "tensor '{}': producer wrote {} of its {} bytes", t.entry.name, written, t.bytes);
      tensors[i]["xxh3"] = checksum_hex(sum.digest());
    }
    meta["blobs"] = blobs;
    meta["tensors"] = tensors;
    std::string meta_text = meta.dump();
    NINFER_CHECK(meta_text.size() == meta_bytes);

    std::array<std::byte, af::kHeaderBytes> header{};
    std::memcpy(header.data(), af::kMagic.data(), af::kMagic.size());
    put_u32(header.data() + af::kOffVersion, af::kVersion);
    put_u32(header.data() + af::kOffHeaderBytes, static_cast<uint32_t>(af::kHeaderBytes));
    put_u64(header.data() + af::kOffMetaOffset, af::kHeaderBytes);
    put_u64(header.data() + af::kOffMetaBytes, meta_bytes);
    put_u64(header.data() + af::kOffDataOffset, data_offset);
    put_u64(header.data() + af::kOffDataBytes, data_bytes);
    put_u64(header.data() + af::kOffMetaChecksum, checksum64(std::as_bytes(std::span(meta_text))));
    uint64_t end = out.pos();
    out.seek(0);
    out.write(header.data(), header.size());
    out.write(meta_text.data(), meta_text.size());
    out.zeros(data_offset - out.pos());
    out.close_synced();
    bar.finish();

    std::error_code ec;
    std::filesystem::rename(path_from_utf8(partial), final_path, ec);
    if (ec) fail(ErrorKind::kIo, "{}: cannot rename {} over it: {}", utf8_path, partial, ec.message());
    return std::max(end, data_offset);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(path_from_utf8(partial), ec);
    throw;
  }
}

}  // namespace ninfer
