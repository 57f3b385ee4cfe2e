// Tests the tokenizer against HF tokenizers goldens (ids and decoded text) and its special-token policy.
#include "engine/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/pretokenizer.h"
#include "tests/tokenizer/fixtures.h"

namespace ninfer {
namespace {

using test::qwen35;
using test::read_jsonl;

std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

std::string show(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

TEST(Tokenizer, LoadsQwen35Fixture) {
  const Tokenizer& tok = qwen35();
  EXPECT_EQ(tok.vocab_size(), 248077);
  EXPECT_EQ(tok.model_vocab_size(), 248044u);
  EXPECT_EQ(tok.added_tokens().size(), 33u);
  EXPECT_GT(tok.merges_size(), 248044u - 256u);
}

TEST(Tokenizer, ControlTokenIds) {
  const Tokenizer& tok = qwen35();
  EXPECT_EQ(tok.require_token_id("<|endoftext|>"), 248044);
  EXPECT_EQ(tok.require_token_id("<|im_start|>"), 248045);
  EXPECT_EQ(tok.require_token_id("<|im_end|>"), 248046);
  EXPECT_EQ(tok.require_token_id("<tool_call>"), 248058);
  EXPECT_EQ(tok.require_token_id("</tool_call>"), 248059);
  EXPECT_EQ(tok.require_token_id("<tool_response>"), 248066);
  EXPECT_EQ(tok.require_token_id("</tool_response>"), 248067);
  EXPECT_EQ(tok.require_token_id("<think>"), 248068);
  EXPECT_EQ(tok.require_token_id("</think>"), 248069);
  EXPECT_EQ(tok.require_token_id("<|audio_pad|>"), 248076);
  EXPECT_TRUE(tok.is_special(248046));
  EXPECT_FALSE(tok.is_special(248068));  // <think> is an added token with special=false
  EXPECT_TRUE(tok.is_added(248068));
  EXPECT_FALSE(tok.is_added(100));
  EXPECT_EQ(tok.token_id("hello"), std::optional<int32_t>(tok.encode("hello")[0]));
  EXPECT_EQ(tok.token_id("no-such-token-\x01\x02\x03"), std::nullopt);
  try {
    tok.require_token_id("<|nope|>");
    FAIL() << "expected kNotFound";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

TEST(Tokenizer, SpecialTokenStringsArePlainText) {
  const Tokenizer& tok = qwen35();
  for (const char* s : {"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|endoftext|>"}) {
    std::vector<int32_t> plain = tok.encode(std::string("x ") + s + " y");
    int32_t control = tok.require_token_id(s);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), control), 0) << s;
    EXPECT_GT(plain.size(), 3u) << s;
    std::vector<int32_t> trusted = tok.encode_with_special(std::string("x ") + s + " y");
    EXPECT_EQ(std::count(trusted.begin(), trusted.end(), control), 1) << s;
    EXPECT_EQ(tok.decode(plain), tok.decode(trusted));
  }
}

TEST(Tokenizer, EncodeMatchesHfOnGoldenCorpus) {
  const Tokenizer& tok = qwen35();
  auto records = read_jsonl(test::fixture_path("encode.jsonl"));
  ASSERT_GE(records.size(), 5000u);
  size_t plain_bad = 0, special_bad = 0, decode_bad = 0;
  for (const auto& r : records) {
    const std::string text = r["t"].get<std::string>();
    std::vector<int32_t> want = ids_of(r["p"]);
    std::vector<int32_t> got = tok.encode(text);
    if (got != want && ++plain_bad <= 5)
      ADD_FAILURE() << "encode mismatch on " << show(text) << "\n got " << nlohmann::json(got).dump() << "\nwant "
                    << nlohmann::json(want).dump();
    std::vector<int32_t> want_s = r.contains("s") ? ids_of(r["s"]) : want;
    if (tok.encode_with_special(text) != want_s && ++special_bad <= 5)
      ADD_FAILURE() << "encode_with_special mismatch on " << show(text);
    if (tok.decode(want) != r["d"].get<std::string>() && ++decode_bad <= 5)
      ADD_FAILURE() << "decode mismatch on " << show(text);
  }
  EXPECT_EQ(plain_bad, 0u);
  EXPECT_EQ(special_bad, 0u);
  EXPECT_EQ(decode_bad, 0u);
}

TEST(Tokenizer, MergeLoopMatchesHfWithoutIgnoreMerges) {
  // The same vocabulary with ignore_merges=false: every pre-token goes through the merge loop.
  auto doc = nlohmann::json::parse(test::tokenizer_json());
  doc["model"]["ignore_merges"] = false;
  Tokenizer tok = Tokenizer::from_json(doc.dump());
  auto records = read_jsonl(test::fixture_path("encode.jsonl"));
  size_t bad = 0;
  for (const auto& r : records) {
    std::vector<int32_t> want = ids_of(r.contains("m") ? r["m"] : r["p"]);
    if (tok.encode(r["t"].get<std::string>()) != want && ++bad <= 5)
      ADD_FAILURE() << "merge-loop mismatch on " << show(r["t"].get<std::string>());
  }
  EXPECT_EQ(bad, 0u);
}

TEST(Tokenizer, DecodeAndStreamingMatchHf) {
  const Tokenizer& tok = qwen35();
  auto records = read_jsonl(test::fixture_path("decode.jsonl"));
  ASSERT_GE(records.size(), 1000u);
  size_t bad = 0;
  for (const auto& r : records) {
    std::vector<int32_t> ids = ids_of(r["i"]);
    const std::string want = r["d"].get<std::string>(), want_skip = r["k"].get<std::string>();
    std::string got = tok.decode(ids), got_skip = tok.decode(ids, true);
    Detokenizer stream(tok), stream_skip(tok, true);
    std::string streamed, streamed_skip;
    for (int32_t id : ids) {
      std::string piece = stream.push(id);
      // every emitted piece is valid UTF-8 on its own
      std::string check;
      streamed += piece;
      streamed_skip += stream_skip.push(id);
      EXPECT_LE(stream.pending_bytes(), 3u);
    }
    streamed += stream.finish();
    streamed_skip += stream_skip.finish();
    if ((got != want || got_skip != want_skip || streamed != want || streamed_skip != want_skip) && ++bad <= 5)
      ADD_FAILURE() << "decode mismatch on " << nlohmann::json(ids).dump() << "\n got " << show(got) << " / stream "
                    << show(streamed) << "\nwant " << show(want);
  }
  EXPECT_EQ(bad, 0u);
}

TEST(Tokenizer, StreamingHoldsSplitCharacters) {
  const Tokenizer& tok = qwen35();
  // "€" is E2 82 AC; feed it as three single-byte tokens
  std::vector<int32_t> ids;
  for (unsigned char b : std::string("\xE2\x82\xAC"))
    ids.push_back(tok.encode(std::string(1, static_cast<char>(b)))[0]);
  Detokenizer d(tok);
  EXPECT_EQ(d.push(ids[0]), "");
  EXPECT_EQ(d.push(ids[1]), "");
  EXPECT_EQ(d.pending_bytes(), 2u);
  EXPECT_EQ(d.push(ids[2]), "\xE2\x82\xAC");
  EXPECT_EQ(d.finish(), "");
  // a truncated character at the end becomes one U+FFFD, as decode() does
  EXPECT_EQ(d.push(ids[0]), "");
  EXPECT_EQ(d.push(ids[1]), "");
  EXPECT_EQ(d.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{ids[0], ids[1]}), "\xEF\xBF\xBD");
  // a lead byte followed by ASCII is replaced at once
  int32_t a = tok.encode("a")[0];
  EXPECT_EQ(d.push(ids[0]), "");
  EXPECT_EQ(d.push(a),
            "\xEF\xBF\xBD"
            "a");
}

TEST(Tokenizer, InvalidUtf8InputIsTokenizedByteByByte) {
  const Tokenizer& tok = qwen35();
  std::vector<int32_t> ids = tok.encode("ok\xFF\xFE!");
  EXPECT_EQ(tok.decode(ids), "ok\xEF\xBF\xBD\xEF\xBF\xBD!");
  std::string bytes;
  for (int32_t id : ids) bytes += tok.token_bytes(id);
  EXPECT_EQ(bytes, "ok\xFF\xFE!");
}

TEST(Tokenizer, RejectsUnsupportedShapes) {
  auto expect_kind = [](const std::string& json, ErrorKind kind) {
    try {
      Tokenizer::from_json(json);
      ADD_FAILURE() << "expected an error for " << json.substr(0, 80);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
    }
  };
  expect_kind("{not json", ErrorKind::kCorrupt);
  expect_kind("{}", ErrorKind::kCorrupt);
  auto doc = nlohmann::json::parse(test::tokenizer_json());
  auto with = [&](auto edit) {
    auto d = doc;
    edit(d);
    return d.dump();
  };
  expect_kind(with([](auto& d) { d["model"]["type"] = "WordPiece"; }), ErrorKind::kUnsupported);
  expect_kind(with([](auto& d) { d["model"]["byte_fallback"] = true; }), ErrorKind::kUnsupported);
  expect_kind(with([](auto& d) { d["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; }),
              ErrorKind::kUnsupported);
  expect_kind(with([](auto& d) { d["normalizer"] = {{"type", "NFKC"}}; }), ErrorKind::kUnsupported);
  expect_kind(with([](auto& d) { d["decoder"] = {{"type", "Metaspace"}}; }), ErrorKind::kUnsupported);
  expect_kind(with([](auto& d) { d["added_tokens"][0]["lstrip"] = true; }), ErrorKind::kUnsupported);
  expect_kind(with([](auto& d) {
                d["model"]["merges"][0] = nlohmann::json::array({"Ġ", "no-such-token"});
              }),
              ErrorKind::kCorrupt);
}

TEST(Pretokenizer, SplitsLikeTheRegex) {
  auto split = [](std::string_view s) {
    std::vector<std::string_view> v;
    pretokenize_qwen35(s, v);
    return std::vector<std::string>(v.begin(), v.end());
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split("I'm 12!"), (V{"I", "'m", " ", "1", "2", "!"}));
  EXPECT_EQ(split("it'S x'LL"), (V{"it", "'S", " x", "'LL"}));
  EXPECT_EQ(split("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(split("a\n\n  b"), (V{"a", "\n\n", " ", " b"}));
  EXPECT_EQ(split("x  "), (V{"x", "  "}));
  EXPECT_EQ(split("f(x);\n"), (V{"f", "(x", ");\n"}));
  EXPECT_EQ(split(" ( "), (V{" (", " "}));
  EXPECT_EQ(split("\t(x"), (V{"\t", "(x"}));
  EXPECT_EQ(split("na\xCC\x81ive"), (V{"na\xCC\x81ive"}));  // \p{M} stays inside words (Qwen3.5)
  EXPECT_EQ(split(""), V{});
}

}  // namespace
}  // namespace ninfer

namespace ninfer {
namespace {

TEST(Tokenizer, ConcurrentEncodeIsConsistent) {
  // The piece cache is shared; several threads encoding the same corpus must agree with one thread.
  const Tokenizer& tok = test::qwen35();
  auto doc = nlohmann::json::parse(test::tokenizer_json());
  doc["model"]["ignore_merges"] = false;  // every piece goes through the cache
  Tokenizer merging = Tokenizer::from_json(doc.dump());
  auto records = test::read_jsonl(test::fixture_path("encode.jsonl"));
  std::vector<std::string> texts;
  for (size_t i = 0; i < records.size(); i += 3) texts.push_back(records[i]["t"].get<std::string>());
  std::vector<std::vector<int32_t>> want;
  for (const auto& t : texts) want.push_back(tok.encode(t));
  std::vector<size_t> bad(4, 0);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < bad.size(); ++k) {
    threads.emplace_back([&, k] {
      for (size_t i = k; i < texts.size() + k; ++i) {
        size_t j = i % texts.size();
        if (merging.encode(texts[j]) != want[j]) ++bad[k];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < bad.size(); ++k) EXPECT_EQ(bad[k], 0u) << "thread " << k;
}

}  // namespace
}  // namespace ninfer
