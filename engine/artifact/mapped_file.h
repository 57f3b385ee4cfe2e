// Owns a read-only memory mapping of a whole file (POSIX mmap or Win32 file mapping).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace ninfer {

// Paths are UTF-8 std::strings everywhere in ninfer; on Windows they are widened before the OS call.
std::filesystem::path path_from_utf8(const std::string& utf8);
std::string path_to_utf8(const std::filesystem::path& path);

class MappedFile {
 public:
  // Maps `utf8_path` read-only. Throws Error(kIo / kNotFound) naming the path and the OS reason.
  static MappedFile open(const std::string& utf8_path);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, static_cast<size_t>(size_)}; }
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;

  std::string path_;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
#ifdef _WIN32
  void* file_ = nullptr;
  void* mapping_ = nullptr;
#endif
};

}  // namespace ninfer
