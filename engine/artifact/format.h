// Owns the on-disk layout constants of a .ninfer artifact (docs/artifact-format.md is the prose twin).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ninfer::artifact_format {

// File = [64-byte header][metadata JSON][zero padding to 4096][data region].
// All integers little-endian. Tensor and blob offsets in the metadata are relative to data_offset.
constexpr std::array<unsigned char, 8> kMagic = {'N', 'I', 'N', 'F', 'E', 'R', 0x1A, '\n'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kAlignment = 4096;  // data_offset and every tensor/blob offset are multiples of this

// Header field offsets (bytes from the start of the file).
constexpr uint64_t kOffMagic = 0;
constexpr uint64_t kOffVersion = 8;        // u32
constexpr uint64_t kOffHeaderBytes = 12;   // u32, = 64
constexpr uint64_t kOffMetaOffset = 16;    // u64, = 64
constexpr uint64_t kOffMetaBytes = 24;     // u64
constexpr uint64_t kOffDataOffset = 32;    // u64
constexpr uint64_t kOffDataBytes = 40;     // u64
constexpr uint64_t kOffMetaChecksum = 48;  // u64, XXH3-64 of the metadata bytes
constexpr uint64_t kOffReserved = 56;      // u64, zero

// Sections a tensor can belong to. "vision" is carried but never loaded by the text engine.
constexpr std::array<std::string_view, 5> kSections = {"main", "mtp", "dflash2", "draft_lm_head", "vision"};

constexpr uint64_t align_up(uint64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace ninfer::artifact_format
