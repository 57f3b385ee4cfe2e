// Owns ninfer's text <-> token-id boundary: a byte-level BPE tokenizer loaded from a HF tokenizer.json string.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ninfer {

// One entry of tokenizer.json "added_tokens" (control tokens such as <|im_start|>, <think>).
struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;  // HF "special": skipped by decode(..., skip_special=true)
};

// A piece of a prompt: template text may contain control tokens (allow_special), message data never does.
struct PromptSegment {
  std::string text;
  bool allow_special = false;
};

// Byte-level BPE tokenizer equivalent to HF `tokenizers` (encode without post-processor tokens, decode) for the
// tokenizer.json shapes of the GPT-2, Llama-3, Qwen2/Qwen3/Qwen3.5 and DeepSeek-V3 families: model BPE (no unk, no
// byte fallback, optional ignore_merges, merges as "a b" or [a, b]), normalizer NFC (or none), pre_tokenizer
// Split (any regex, Isolated) / Digits / ByteLevel in a Sequence (pretokenizer_chain.h), decoder ByteLevel,
// post_processor ByteLevel / TemplateProcessing (never applied: see encode()). Anything else is rejected at load with
// ErrorKind::kUnsupported naming the field (docs/tokenizer.md).
//
// Special-token injection policy: encode() treats every added-token string in the text as plain text (a user who
// types "<|im_start|>" gets the ids of those characters, never the control token). Control tokens come only from
// code that asks for them: token_id()/the chat template's segments, or encode_with_special() for trusted text.
//
// Copies share the loaded tables; all methods are const and safe to call from several threads.
class Tokenizer {
 public:
  // Parses a tokenizer.json document. Throws ninfer::Error (kCorrupt for malformed JSON or tables,
  // kUnsupported for a tokenizer shape this implementation does not reproduce).
  static Tokenizer from_json(std::string_view tokenizer_json);

  // Plain text -> ids (no added-token recognition, nothing prepended: a post_processor's BOS is the chat
  // template's to render). Text that is not valid UTF-8 is
  // tokenized byte by byte where it is invalid.
  std::vector<int32_t> encode(std::string_view text) const;
  // Appends to `out`.
  void encode_append(std::string_view text, std::vector<int32_t>& out) const;

  // Trusted text -> ids, recognising added tokens (leftmost-longest) as HF's encode() does.
  std::vector<int32_t> encode_with_special(std::string_view text) const;

  // A rendered prompt -> ids: added tokens are recognised only inside segments with allow_special (a token must
  // lie within one such segment); all text between control tokens is pre-tokenized as one string, exactly as HF
  // encodes the concatenated prompt when the data holds no control-token strings.
  std::vector<int32_t> encode_segments(std::span<const PromptSegment> segments) const;

  // Ids -> text, as HF decode(): the tokens' bytes joined and decoded as UTF-8 with U+FFFD for invalid bytes.
  // With skip_special, added tokens marked special are dropped. Throws kInvalidArgument for an unknown id.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // The raw bytes a token stands for (an added token: its content). Throws kInvalidArgument for an unknown id.
  std::string_view token_bytes(int32_t id) const;

  // The id of an added token (by content) or of a vocabulary token (by its raw bytes); nullopt if none.
  std::optional<int32_t> token_id(std::string_view token) const;
  // Like token_id() but throws kNotFound naming the token: for control tokens the caller relies on.
  int32_t require_token_id(std::string_view token) const;

  bool is_added(int32_t id) const;
  bool is_special(int32_t id) const;
  // One past the largest id.
  int32_t vocab_size() const;
  const std::vector<AddedToken>& added_tokens() const;
  // Number of merges and vocabulary (model) tokens, for diagnostics.
  size_t merges_size() const;
  size_t model_vocab_size() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ninfer
