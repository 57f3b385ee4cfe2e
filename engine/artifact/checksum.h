// Owns the checksum used by the artifact format: XXH3-64, printed as 16 lowercase hex digits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ninfer {

uint64_t checksum64(std::span<const std::byte> bytes);
std::string checksum_hex(uint64_t value);
std::optional<uint64_t> checksum_from_hex(std::string_view hex);

// Incremental form, for data that arrives in pieces (the packer streams tensors through it).
class Checksum64 {
 public:
  Checksum64();
  ~Checksum64();
  Checksum64(const Checksum64&) = delete;
  Checksum64& operator=(const Checksum64&) = delete;
  void update(std::span<const std::byte> bytes);
  uint64_t digest() const;

 private:
  void* state_;
};

}  // namespace ninfer
