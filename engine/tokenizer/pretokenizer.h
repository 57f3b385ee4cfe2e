// Owns the Qwen3.5 pre-tokenizer: a hand-written scanner equivalent to the tokenizer.json Split regex.
#pragma once

#include <string_view>
#include <vector>

namespace ninfer {

// The Split regex of the Qwen3.5 tokenizer.json (behavior "Isolated"); the scanner below implements exactly it,
// with Oniguruma's Unicode semantics (\p{L}, \p{M}, \p{N} general categories, \s = White_Space, (?i) folding):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*
//   |\s*[\r\n]+|\s+(?!\S)|\s+
inline constexpr std::string_view kQwen35SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Appends to `out` the pieces of `text` in order; together they cover `text` exactly. Bytes that are not valid
// UTF-8 count as one character each of no class (like punctuation), so any byte string splits.
void pretokenize_qwen35(std::string_view text, std::vector<std::string_view>& out);

}  // namespace ninfer
