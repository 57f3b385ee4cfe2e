#include "engine/artifact/artifact_summary.h"

#include <fmt/format.h>

namespace ninfer {

ArtifactSummary summarize(const Artifact& a) {
  ArtifactSummary s;
  s.architecture = a.metadata().value("architecture", std::string("?"));
  s.file_bytes = a.file_bytes();
  s.tensors = a.tensors().size();
  for (const auto& t : a.tensors()) {
    s.bytes_per_section[t.section] += t.bytes;
    s.tensors_per_section[t.section]++;
    s.bytes_per_dtype[std::string(dtype_name(t.dtype))] += t.bytes;
  }
  for (const auto& b : a.blobs()) s.blob_bytes[b.name] = b.bytes;
  s.has_chat_template = a.metadata().contains("chat_template") && a.metadata()["chat_template"].is_string();
  return s;
}

std::string format_summary(const Artifact& a, const ArtifactSummary& s) {
  std::string out;
  auto line = [&](const std::string& l) { out += l + "\n"; };
  line(fmt::format("artifact      {}", a.path()));
  line(fmt::format("format        ninfer v{}, {} bytes ({:.2f} GiB)", a.version(), s.file_bytes,
                   s.file_bytes / double(1ull << 30)));
  line(fmt::format("architecture  {}", s.architecture));
  const auto& cfg = a.config();
  const auto& text = cfg.contains("text_config") && cfg["text_config"].is_object() ? cfg["text_config"] : cfg;
  line("config:");
  for (const char* key : {"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                          "num_attention_heads", "num_key_value_heads", "head_dim", "linear_num_key_heads",
                          "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                          "tie_word_embeddings", "mtp_num_hidden_layers", "max_position_embeddings"})
    if (text.contains(key)) line(fmt::format("  {:<24}{}", key, text[key].dump()));
  line(fmt::format("chat template {}", s.has_chat_template ? "yes" : "no"));
  line(fmt::format("tensors       {}", s.tensors));
  line("bytes per section:");
  for (const auto& [sec, bytes] : s.bytes_per_section)
    line(fmt::format("  {:<14}{:>6} tensors {:>16} bytes{}", sec, s.tensors_per_section.at(sec), bytes,
                     sec == "vision" ? "  (kept, not loaded)" : ""));
  line("bytes per dtype:");
  for (const auto& [dt, bytes] : s.bytes_per_dtype) line(fmt::format("  {:<14}{:>16} bytes", dt, bytes));
  if (!s.blob_bytes.empty()) {
    line("blobs:");
    for (const auto& [name, bytes] : s.blob_bytes) line(fmt::format("  {:<22}{:>10} bytes", name, bytes));
  }
  return out;
}

}  // namespace ninfer
