// Owns loading tokenizer.json (validation of every field the encoding depends on) and encode/decode.
#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/pretokenizer_chain.h"
#include "engine/tokenizer/tokenizer_json.h"
#include "engine/tokenizer/unicode.h"

namespace ninfer {

struct Tokenizer::Impl {
  std::unique_ptr<BpeModel> bpe;
  bool nfc = false;
  std::optional<PreTokenizer> pre;
  bool qwen35_scanner = false;  // pre is the Qwen3.5 Split alone: call the hand scanner directly
  std::vector<std::string> id_bytes;  // raw bytes per id ("" for unused ids)
  std::vector<uint8_t> id_kind;       // 0 unused, 1 model, 2 added, 3 added+special
  std::vector<AddedToken> added;
  // added tokens grouped by first byte, longest first (leftmost-longest matching)
  std::vector<std::vector<const AddedToken*>> added_by_first = std::vector<std::vector<const AddedToken*>>(256);

  void encode_plain(std::string_view text, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    std::string normalized;
    if (nfc && unicode::may_need_nfc(text)) {
      normalized = unicode::nfc(text);
      text = normalized;
    }
    thread_local std::vector<std::string_view> pieces;
    pieces.clear();
    if (qwen35_scanner) {
      pretokenize_qwen35(text, pieces);
    } else {
      pre->split(text, pieces);
    }
    for (std::string_view p : pieces) bpe->encode_piece(p, out);
  }
};

namespace {

using json = nlohmann::json;

using tokenizer_json::field_type;
using tokenizer_json::flag;

// HF's ByteLevel decoder maps characters back to bytes and ignores add_prefix_space, trim_offsets and use_regex
// (pre-tokenizer settings that transformers' save_pretrained copies onto the decoder).
void check_decoder(const json& d) {
  if (field_type(d, "type") != "ByteLevel")
    fail(ErrorKind::kUnsupported, "tokenizer.json: decoder.type '{}' is not supported (only ByteLevel)",
         d.is_object() ? field_type(d, "type") : d.dump().substr(0, 120));
}

// The post-processor only adds tokens when HF encodes with add_special_tokens=True (ByteLevel: offsets only;
// TemplateProcessing: e.g. Llama-3's and DeepSeek's BOS). ninfer's encode() never adds them: its chat templates
// render BOS themselves (docs/tokenizer.md). Accepted: ByteLevel, TemplateProcessing, Sequence of those.
void check_post_processor(const json& p, const std::string& where) {
  if (p.is_null()) return;
  const std::string t = field_type(p, "type");
  if (t == "ByteLevel" || t == "TemplateProcessing") return;
  if (t == "Sequence" && p.contains("processors") && p["processors"].is_array()) {
    for (size_t i = 0; i < p["processors"].size(); ++i)
      check_post_processor(p["processors"][i], fmt::format("{}.processors[{}]", where, i));
    return;
  }
  fail(ErrorKind::kUnsupported,
       "tokenizer.json: {}.type '{}' is not supported (ByteLevel, TemplateProcessing or a Sequence of them)", where,
       t.empty() ? p.dump().substr(0, 120) : t);
}

void check_normalizer(const json& n, bool* nfc) {
  *nfc = false;
  if (n.is_null()) return;
  std::string t = field_type(n, "type");
  if (t == "NFC") {
    *nfc = true;
    return;
  }
  if (t == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    for (size_t i = 0; i < n["normalizers"].size(); ++i) {
      const json& x = n["normalizers"][i];
      if (field_type(x, "type") != "NFC")
        fail(ErrorKind::kUnsupported, "tokenizer.json: normalizer.normalizers[{}].type '{}' is not supported (only NFC)",
             i, field_type(x, "type"));
      *nfc = true;
    }
    return;
  }
  fail(ErrorKind::kUnsupported, "tokenizer.json: normalizer.type '{}' is not supported (only NFC, a Sequence of NFC, or none)",
       t.empty() ? n.dump().substr(0, 120) : t);
}

std::string vocab_bytes(const std::string& s, const char* what) {
  std::string out;
  if (!byte_level::vocab_string_to_bytes(s, out))
    fail(ErrorKind::kCorrupt, "tokenizer.json: {} '{}' has a character outside the ByteLevel alphabet", what, s);
  return out;
}

// Bytes the ByteLevel decoder produces for an added token's content: the alphabet mapping when every character
// is in the alphabet, else the content's own UTF-8 (HF's ByteLevel decoder rule).
std::string added_token_bytes(const std::string& content) {
  std::string out;
  if (byte_level::vocab_string_to_bytes(content, out)) return out;
  return content;
}

}  // namespace

Tokenizer Tokenizer::from_json(std::string_view text) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(ErrorKind::kCorrupt, "tokenizer.json: not valid JSON ({} bytes): {}", text.size(), e.what());
  }
  if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object())
    fail(ErrorKind::kCorrupt, "tokenizer.json: no 'model' object");
  auto impl = std::make_shared<Impl>();

  const json& model = doc["model"];
  if (field_type(model, "type") != "BPE")
    fail(ErrorKind::kUnsupported, "tokenizer.json: model.type '{}' is not supported (only BPE)",
         field_type(model, "type"));
  if (flag(model, "byte_fallback", false))
    fail(ErrorKind::kUnsupported, "tokenizer.json: model.byte_fallback=true is not supported");
  if (model.contains("dropout") && !model["dropout"].is_null())
    fail(ErrorKind::kUnsupported, "tokenizer.json: model.dropout is not supported");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(k) && !model[k].is_null() && !(model[k].is_string() && model[k].get<std::string>().empty()))
      fail(ErrorKind::kUnsupported, "tokenizer.json: model.{} is not supported", k);
  }
  bool ignore_merges = flag(model, "ignore_merges", false);
  check_normalizer(doc.value("normalizer", json()), &impl->nfc);
  if (!doc.contains("pre_tokenizer")) fail(ErrorKind::kCorrupt, "tokenizer.json: no pre_tokenizer");
  impl->pre = PreTokenizer::from_json(doc["pre_tokenizer"]);
  impl->qwen35_scanner = impl->pre->is_qwen35_scanner();
  if (!doc.contains("decoder")) fail(ErrorKind::kCorrupt, "tokenizer.json: no decoder");
  check_decoder(doc["decoder"]);
  check_post_processor(doc.value("post_processor", json()), "post_processor");

  if (!model.contains("vocab") || !model["vocab"].is_object())
    fail(ErrorKind::kCorrupt, "tokenizer.json: model.vocab is not an object");
  std::vector<std::pair<std::string, int32_t>> vocab, unreachable;
  vocab.reserve(model["vocab"].size());
  int32_t max_id = -1;
  for (const auto& [k, v] : model["vocab"].items()) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      fail(ErrorKind::kCorrupt, "tokenizer.json: vocab entry '{}' has a bad id {}", k, v.dump());
    std::string bytes;
    if (byte_level::vocab_string_to_bytes(k, bytes)) {
      vocab.emplace_back(std::move(bytes), v.get<int32_t>());
    } else {
      // Outside the ByteLevel alphabet (DeepSeek keeps its control tokens in the vocabulary too): no byte string
      // merges into it, so it is left out of the BPE tables; it decodes as an added token does.
      unreachable.emplace_back(added_token_bytes(k), v.get<int32_t>());
    }
    max_id = std::max(max_id, v.get<int32_t>());
  }
  std::vector<std::pair<std::string, std::string>> merges;
  if (model.contains("merges")) {
    if (!model["merges"].is_array()) fail(ErrorKind::kCorrupt, "tokenizer.json: model.merges is not an array");
    merges.reserve(model["merges"].size());
    for (const auto& m : model["merges"]) {
      std::string a, b;
      if (m.is_string()) {  // legacy "a b"
        const std::string& s = m.get_ref<const std::string&>();
        size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          fail(ErrorKind::kCorrupt, "tokenizer.json: merge '{}' is not two tokens", s);
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        a = m[0].get<std::string>();
        b = m[1].get<std::string>();
      } else {
        fail(ErrorKind::kCorrupt, "tokenizer.json: merge {} is neither \"a b\" nor [a, b]", m.dump());
      }
      merges.emplace_back(vocab_bytes(a, "merge token"), vocab_bytes(b, "merge token"));
    }
  }

  // added tokens
  if (doc.contains("added_tokens") && !doc["added_tokens"].is_null()) {
    if (!doc["added_tokens"].is_array()) fail(ErrorKind::kCorrupt, "tokenizer.json: added_tokens is not an array");
    for (const auto& t : doc["added_tokens"]) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
          !t["content"].is_string())
        fail(ErrorKind::kCorrupt, "tokenizer.json: malformed added token {}", t.dump());
      AddedToken a{t["id"].get<int32_t>(), t["content"].get<std::string>(), flag(t, "special", false)};
      if (a.id < 0 || a.content.empty())
        fail(ErrorKind::kCorrupt, "tokenizer.json: added token {} has a bad id or empty content", t.dump());
      for (const char* k : {"lstrip", "rstrip", "single_word"})
        if (flag(t, k, false))
          fail(ErrorKind::kUnsupported, "tokenizer.json: added token '{}' with {}=true is not supported", a.content, k);
      if (impl->nfc && flag(t, "normalized", !a.special) && unicode::may_need_nfc(a.content))
        fail(ErrorKind::kUnsupported, "tokenizer.json: normalized added token '{}' changes under NFC", a.content);
      max_id = std::max(max_id, a.id);
      impl->added.push_back(std::move(a));
    }
  }

  impl->id_bytes.assign(static_cast<size_t>(max_id) + 1, std::string());
  impl->id_kind.assign(static_cast<size_t>(max_id) + 1, 0);
  for (const auto* list : {&vocab, &unreachable}) {
    for (const auto& [bytes, id] : *list) {
      impl->id_bytes[id] = bytes;
      impl->id_kind[id] = 1;
    }
  }
  for (const auto& a : impl->added) {
    impl->id_bytes[a.id] = added_token_bytes(a.content);
    impl->id_kind[a.id] = a.special ? 3 : 2;
  }
  for (const auto& a : impl->added) impl->added_by_first[static_cast<unsigned char>(a.content[0])].push_back(&a);
  for (auto& v : impl->added_by_first)
    std::stable_sort(v.begin(), v.end(),
                     [](const AddedToken* x, const AddedToken* y) { return x->content.size() > y->content.size(); });

  impl->bpe = std::make_unique<BpeModel>(vocab, merges, ignore_merges);
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  impl_->encode_plain(text, out);
  return out;
}

void Tokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
  impl_->encode_plain(text, out);
}

std::vector<int32_t> Tokenizer::encode_with_special(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  size_t seg = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    for (const AddedToken* a : impl_->added_by_first[static_cast<unsigned char>(text[i])]) {
      if (text.compare(i, a->content.size(), a->content) == 0) {
        hit = a;
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    impl_->encode_plain(text.substr(seg, i - seg), out);
    out.push_back(hit->id);
    i += hit->content.size();
    seg = i;
  }
  impl_->encode_plain(text.substr(seg), out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_segments(std::span<const PromptSegment> segments) const {
  std::string text;
  size_t total = 0;
  for (const auto& s : segments) total += s.text.size();
  text.reserve(total);
  std::vector<int32_t> out;
  out.reserve(total / 3 + 4);
  size_t pending = 0;  // start of the text not yet encoded
  for (const auto& s : segments) {
    size_t base = text.size();
    text += s.text;
    if (!s.allow_special) continue;
    std::string_view seg = s.text;
    for (size_t i = 0; i < seg.size();) {
      const AddedToken* hit = nullptr;
      for (const AddedToken* a : impl_->added_by_first[static_cast<unsigned char>(seg[i])]) {
        if (seg.compare(i, a->content.size(), a->content) == 0) {
          hit = a;
          break;
        }
      }
      if (!hit) {
        ++i;
        continue;
      }
      impl_->encode_plain(std::string_view(text).substr(pending, base + i - pending), out);
      out.push_back(hit->id);
      i += hit->content.size();
      pending = base + i;
    }
  }
  impl_->encode_plain(std::string_view(text).substr(pending), out);
  return out;
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_kind.size() || impl_->id_kind[id] == 0)
    fail(ErrorKind::kInvalidArgument, "token id {} is not in the vocabulary (size {})", id, impl_->id_kind.size());
  return impl_->id_bytes[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    std::string_view b = token_bytes(id);
    if (skip_special && impl_->id_kind[id] == 3) continue;
    bytes.append(b);
  }
  std::string out;
  out.reserve(bytes.size());
  byte_level::append_lossy_utf8(bytes, out, true);
  return out;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (!token.empty()) {
    for (const AddedToken* a : impl_->added_by_first[static_cast<unsigned char>(token[0])])
      if (a->content == token) return a->id;
  }
  int32_t id = impl_->bpe->find(token);
  if (id >= 0) return id;
  return std::nullopt;
}

int32_t Tokenizer::require_token_id(std::string_view token) const {
  auto id = token_id(token);
  if (!id) fail(ErrorKind::kNotFound, "tokenizer has no token '{}'", token);
  return *id;
}

bool Tokenizer::is_added(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->id_kind.size() && impl_->id_kind[id] >= 2;
}
bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->id_kind.size() && impl_->id_kind[id] == 3;
}
int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_kind.size()); }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }
size_t Tokenizer::merges_size() const { return impl_->bpe->merges_size(); }
size_t Tokenizer::model_vocab_size() const { return impl_->bpe->vocab_size(); }

}  // namespace ninfer
