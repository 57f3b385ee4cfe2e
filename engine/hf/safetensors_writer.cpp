#include "engine/hf/safetensors_writer.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/artifact/dtype.h"
#include "engine/artifact/mapped_file.h"
#include "engine/core/error.h"
#include "engine/hf/safetensors.h"

namespace ninfer {

namespace {

uint64_t entry_bytes(const std::string& dtype, const std::vector<int64_t>& shape) {
  auto eb = safetensors_element_bytes(dtype);
  auto n = element_count(shape);
  if (!eb || !n) fail(ErrorKind::kInvalidArgument, "safetensors writer: bad dtype '{}' or shape", dtype);
  return *eb * *n;
}

std::string header_bytes(const nlohmann::json& header) {
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';  // the reference writer pads the header with spaces
  std::string out(8, '\0');
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + h;
}

}  // namespace

std::string make_safetensors(const std::map<std::string, SafetensorsEntry>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  return header_bytes(header) + data;
}

void write_safetensors(const std::string& utf8_path, const std::map<std::string, SafetensorsSpec>& tensors,
                       const std::function<void(const std::string&, std::string&)>& fill) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t cursor = 0;
  for (const auto& [name, t] : tensors) {
    uint64_t n = entry_bytes(t.dtype, t.shape);
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {cursor, cursor + n}}};
    cursor += n;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::ofstream out(path_from_utf8(utf8_path), std::ios::binary | std::ios::trunc);
  if (!out) fail(ErrorKind::kIo, "{}: cannot create", utf8_path);
  std::string h = header_bytes(header);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  std::string buf;
  for (const auto& [name, t] : tensors) {
    buf.clear();
    fill(name, buf);
    if (buf.size() != entry_bytes(t.dtype, t.shape))
      fail(ErrorKind::kInternal, "safetensors writer: tensor '{}' got {} bytes, needs {}", name, buf.size(),
           entry_bytes(t.dtype, t.shape));
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  }
  if (!out.flush()) fail(ErrorKind::kIo, "{}: write failed", utf8_path);
}

}  // namespace ninfer
