// Tests the Unicode primitives: classes, NFC (against known compositions) and UTF-8 stepping.
#include "engine/tokenizer/unicode.h"

#include <gtest/gtest.h>

#include "engine/tokenizer/byte_level.h"

namespace ninfer {
namespace {

TEST(Unicode, Classes) {
  using namespace unicode;
  EXPECT_TRUE(char_class(U'a') & kLetter);
  EXPECT_TRUE(char_class(U'中') & kLetter);
  EXPECT_TRUE(char_class(0x0301) & kMark);
  EXPECT_TRUE(char_class(0xFE0F) & kMark);  // variation selector 16 is Mn
  EXPECT_TRUE(char_class(U'7') & kNumber);
  EXPECT_TRUE(char_class(0x00B2) & kNumber);  // superscript two (No)
  EXPECT_TRUE(char_class(0x2167) & kNumber);  // roman numeral (Nl)
  EXPECT_TRUE(char_class(0x3000) & kSpace);
  EXPECT_FALSE(char_class(0x200B) & kSpace);  // zero width space is not White_Space
  EXPECT_TRUE(char_class(0x1F) & kPySpace);
  EXPECT_FALSE(char_class(0x1F) & kSpace);
  EXPECT_EQ(char_class(U'!'), 0);
  EXPECT_EQ(char_class(0x110000), 0);
}

TEST(Unicode, Nfc) {
  using unicode::nfc;
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");                                 // e + acute -> é
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");                              // Angstrom sign -> Å (singleton)
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> 각
  EXPECT_EQ(nfc("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");                // reordering by combining class
  EXPECT_EQ(nfc("\xE0\xA5\x98"), "\xE0\xA4\x95\xE0\xA4\xBC");              // U+0958 is composition-excluded
  EXPECT_EQ(nfc("\xEF\xA4\x80"), "\xE8\xB1\x88");                          // CJK compatibility ideograph U+F900
  EXPECT_EQ(nfc("abc"), "abc");
  EXPECT_EQ(nfc("a\xFF"
                "\xCC\x81"),
            "a\xFF\xCC\x81");  // invalid byte blocks composition
  EXPECT_FALSE(unicode::may_need_nfc("plain ascii and 中文"));
  EXPECT_TRUE(unicode::may_need_nfc("e\xCC\x81"));
}

TEST(Unicode, LossyUtf8) {
  auto lossy = [](std::string_view s) {
    std::string out;
    byte_level::append_lossy_utf8(s, out, true);
    return out;
  };
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(lossy("a\x80"
                  "b"),
            "a" + r + "b");
  EXPECT_EQ(lossy("\xE2\x82"), r);  // truncated: one replacement for the maximal subpart
  EXPECT_EQ(lossy("\xE2\x82"
                  "a"),
            r + "a");
  EXPECT_EQ(lossy("\xED\xA0\x80"), r + r + r);  // surrogate: ED allows only 80..9F next
  EXPECT_EQ(lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(lossy("\xF0\x9F\x98"), r);
  EXPECT_EQ(lossy("\xC0\xAF"), r + r);
  std::string held;
  EXPECT_EQ(byte_level::append_lossy_utf8("ab\xF0\x9F", held, false), 2u);
  EXPECT_EQ(held, "ab");
}

TEST(Unicode, ByteLevelAlphabet) {
  EXPECT_EQ(byte_level::byte_to_char(' '), 0x120u);  // 'Ġ'
  EXPECT_EQ(byte_level::byte_to_char('a'), static_cast<char32_t>('a'));
  EXPECT_EQ(byte_level::char_to_byte(0x10A), '\n');  // 'Ċ'
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(byte_level::char_to_byte(byte_level::byte_to_char(static_cast<uint8_t>(b))), b);
  EXPECT_EQ(byte_level::char_to_byte(0x4E2D), -1);
}

}  // namespace
}  // namespace ninfer
