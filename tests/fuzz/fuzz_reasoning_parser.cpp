// Fuzz target: the reasoning parser. Any text, fed in any chunking, gives the same reasoning and content as parse()
// of the whole text; under every option set; and the output holds every byte of the input that is not a tag or a
// trimmed newline (it never invents text).
#include <algorithm>

#include "engine/tokenizer/reasoning_parser.h"
#include "tests/fuzz/fuzz_common.h"

NINFER_FUZZ_TARGET {
  if (size < 2) return 0;
  ninfer::ReasoningParserOptions o;
  o.prompt_opened_reasoning = data[0] & 1;
  o.thinking_enabled = data[0] & 2;
  o.tool_call_ends_reasoning = data[0] & 4;
  o.trim_newlines = data[0] & 8;
  const uint8_t chunking = data[1];
  const std::string_view text = ninfer::fuzz::as_text(data + 2, size - 2);

  const ninfer::ReasoningDelta whole = ninfer::ReasoningParser::parse(text, o);
  ninfer::ReasoningParser p(o);
  ninfer::ReasoningDelta streamed;
  size_t i = 0, step = 0;
  while (i < text.size()) {
    // chunk lengths 1..16 drawn from the chunking byte, rotating
    const size_t n = std::min<size_t>(text.size() - i, 1 + ((chunking >> (step++ % 5)) & 15));
    const ninfer::ReasoningDelta d = p.feed(text.substr(i, n));
    streamed.reasoning += d.reasoning;
    streamed.content += d.content;
    i += n;
  }
  const ninfer::ReasoningDelta last = p.finish();
  streamed.reasoning += last.reasoning;
  streamed.content += last.content;
  NINFER_FUZZ_CHECK(streamed.reasoning == whole.reasoning, streamed.reasoning);
  NINFER_FUZZ_CHECK(streamed.content == whole.content, streamed.content);
  NINFER_FUZZ_CHECK(whole.reasoning.size() + whole.content.size() <= text.size());
  if (!o.thinking_enabled) NINFER_FUZZ_CHECK(whole.reasoning.empty());
  return 0;
}
