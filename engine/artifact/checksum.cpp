#include "engine/artifact/checksum.h"

#include <fmt/format.h>
#include <xxhash.h>

#include "engine/core/error.h"

namespace ninfer {

uint64_t checksum64(std::span<const std::byte> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::string checksum_hex(uint64_t value) { return fmt::format("{:016x}", value); }

std::optional<uint64_t> checksum_from_hex(std::string_view hex) {
  if (hex.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : hex) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return std::nullopt;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

Checksum64::Checksum64() : state_(XXH3_createState()) {
  if (!state_) fail(ErrorKind::kOutOfMemory, "cannot allocate an XXH3 state");
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

Checksum64::~Checksum64() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Checksum64::update(std::span<const std::byte> bytes) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}

uint64_t Checksum64::digest() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_)); }

}  // namespace ninfer
