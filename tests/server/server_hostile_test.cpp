// Hostile-input corpus (issue 16): raw-socket requests, each with its exact status and error code, and the
// server still answering /health and a real completion after every one; plus concurrent hostile traffic.
#include <zlib.h>

#include <atomic>
#include <memory>
#include <set>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include "tests/server/raw_http.h"
#include "tests/server/server_fixture.h"

namespace ninfer::server::testing {
namespace {

constexpr size_t kBodyLimit = 64 * 1024;  // the corpus server's --max-body (small, so 413 is cheap to reach)

// One hostile request: exact bytes, the status and OpenAI error code expected ("" for a 200 answer), and the
// error's param when it names one.
struct Hostile {
  std::string name;
  std::string bytes;
  int status = 200;
  std::string code;
  std::string param{};      // "" = not checked
  bool half_close = false;  // shut the write side after sending (a body that never completes)
};

void PrintTo(const Hostile& h, std::ostream* os) { *os << h.name; }

// ---- builders -----------------------------------------------------------------------------------------------

std::string rpost(const std::string& path, const std::string& body, const std::string& headers = "") {
  return raw_post(path, body, headers);
}
// A chat body with one user message and `extra` members (raw JSON text, may be invalid on purpose).
std::string chat(const std::string& extra = "", const std::string& content = "\"hello\"") {
  return rpost("/v1/chat/completions",
              R"({"messages":[{"role":"user","content":)" + content + "}]" + (extra.empty() ? "" : "," + extra) + "}");
}
std::string chat_messages(const std::string& messages, const std::string& extra = "") {
  return rpost("/v1/chat/completions", R"({"messages":)" + messages + (extra.empty() ? "" : "," + extra) + "}");
}
std::string completion(const std::string& prompt, const std::string& extra = "") {
  return rpost("/v1/completions", R"({"prompt":)" + prompt + (extra.empty() ? "" : "," + extra) + "}");
}
std::string rget(const std::string& target, const std::string& headers = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n";
}
std::string chunked(const std::string& path, const std::vector<std::string>& chunks, const std::string& tail = "0\r\n\r\n",
                    const std::string& headers = "") {
  std::string s = "POST " + path + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" + headers + "\r\n";
  for (const std::string& c : chunks) s += fmt::format("{:x}\r\n{}\r\n", c.size(), c);
  return s + tail;
}
// zlib: gzip (window bits 31) or zlib-wrapped deflate (15).
std::string compress(const std::string& in, int window_bits) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, window_bits, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
std::string encoded_post(const std::string& body, const std::string& encoding) {
  return rpost("/v1/chat/completions", body, "Content-Encoding: " + encoding + "\r\n");
}
std::string repeat(const std::string& s, size_t n) {
  std::string r;
  r.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) r += s;
  return r;
}
// A JSON array of `n` copies of `item`.
std::string array_of(const std::string& item, size_t n) {
  std::string r = "[";
  for (size_t i = 0; i < n; ++i) r += (i ? "," : "") + item;
  return r + "]";
}
std::string stops(size_t n, size_t len) {
  std::string r = "[";
  for (size_t i = 0; i < n; ++i) r += (i ? ",\"" : "\"") + std::string(len, static_cast<char>('a' + i % 26)) + "\"";
  return "\"stop\":" + r + "]";
}

const std::string kChatBody = R"({"messages":[{"role":"user","content":"hi"}]})";
const std::string kPostHead = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n";

// ---- the corpus -----------------------------------------------------------------------------------------------

std::vector<Hostile> request_line_cases() {
  return {
      {"http10_health", "GET /health HTTP/1.0\r\n\r\n", 200, ""},
      {"lowercase_method", "get /health HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed_request"},
      {"unknown_method", "BREW /health HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed_request"},
      {"http12", "GET /health HTTP/1.2\r\nHost: x\r\n\r\n", 400, "malformed_request"},
      {"http09_no_version", "GET /health\r\n\r\n", 400, "malformed_request"},
      {"http2_preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "malformed_request"},
      {"only_crlf", "\r\n\r\n", 400, "malformed_request"},
      {"binary_garbage", std::string("\x00\x01\x02\x03\xff\xfe\r\n\r\n", 10), 400, "malformed_request"},
      {"tls_client_hello", std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 13), 400,
       "malformed_request"},
      {"space_in_target", "GET /he alth HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed_request"},
      {"long_method", std::string(9000, 'G') + " /health HTTP/1.1\r\n\r\n", 414, "uri_too_long"},  // a request line over 8192
      {"target_8000_bytes", rget("/" + std::string(8000, 'a')), 404, "not_found"},
      {"target_10k_bytes", rget("/" + std::string(10000, 'a')), 414, "uri_too_long"},
      {"request_line_100k", "GET /" + std::string(100000, 'a') + " HTTP/1.1\r\n\r\n", 431, "request_header_too_large"},
      {"invalid_utf8_path", rget("/%FF"), 404, "not_found"},
      {"raw_invalid_utf8_path", rget("/\xff\xfe\xfd"), 404, "not_found"},
      {"overlong_utf8_path", rget("/%C0%AF"), 404, "not_found"},
      {"nul_in_path", rget("/health%00"), 404, "not_found"},
      {"dot_dot_path", rget("/../../etc/passwd"), 404, "not_found"},
      {"bad_percent_escape", rget("/v1/%ZZmodels"), 404, "not_found"},
      {"absolute_form_target", rget("http://x/nowhere"), 404, "not_found"},
      {"asterisk_options", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 404, "not_found"},
      {"delete_models", "DELETE /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", 404, "not_found"},
      {"get_chat_completions", rget("/v1/chat/completions"), 404, "not_found"},
      {"put_completions", "PUT /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 404, "not_found"},
      {"post_health", "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 404, "not_found"},
      {"model_invalid_utf8", rget("/v1/models/%FF%FE"), 404, "model_not_found", "model"},
      {"model_other", rget("/v1/models/gpt-4o"), 404, "model_not_found", "model"},
      {"get_model_served", rget("/v1/models/fake-model"), 200, ""},
      {"query_string_health", rget("/health?x=%ZZ&y"), 200, ""},
  };
}

std::vector<Hostile> header_cases() {
  std::string many_small;
  for (int i = 0; i < 200; ++i) many_small += fmt::format("X-H{}: {}\r\n", i, i);
  std::string too_many;
  for (int i = 0; i < 2000; ++i) too_many += fmt::format("X-H{}: {}\r\n", i, std::string(30, 'v'));
  return {
      {"header_without_colon", "GET /health HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", 400, "malformed_request"},
      {"header_space_before_colon", rget("/health", "Host : x\r\n"), 400, "malformed_request"},
      {"te_space_before_colon", kPostHead + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400, "malformed_request"},
      {"header_obs_fold", rget("/health", "X-A: 1\r\n  folded\r\n"), 400, "malformed_request"},
      {"header_empty_name", rget("/health", ": nameless\r\n"), 400, "malformed_request"},
      {"header_name_with_slash", rget("/health", "X/Y: 1\r\n"), 400, "malformed_request"},
      {"header_nul_in_name", rget("/health", std::string("X\0Y: 1\r\n", 8)), 400, "malformed_request"},
      {"header_line_10k", rget("/health", "X-Big: " + std::string(10000, 'a') + "\r\n"), 431, "request_header_too_large"},
      {"headers_100k", rget("/health", "X-Big: " + std::string(100000, 'a') + "\r\n"), 431, "request_header_too_large"},
      {"headers_2000", rget("/health", too_many), 431, "request_header_too_large"},
      {"headers_200_small", rget("/health", many_small), 200, ""},
      {"invalid_utf8_header_value", rget("/health", "X-Name: \xff\xfe\r\n"), 200, ""},
      {"no_host_header", "GET /health HTTP/1.1\r\n\r\n", 200, ""},
      {"content_length_plus", kPostHead + "Content-Length: +2\r\n\r\n{}", 400, "malformed_request"},
      {"content_length_hex", kPostHead + "Content-Length: 0x2\r\n\r\n{}", 400, "malformed_request"},
      {"content_length_negative", kPostHead + "Content-Length: -1\r\n\r\n", 400, "malformed_request"},
      {"content_length_list", kPostHead + "Content-Length: 2, 2\r\n\r\n{}", 400, "malformed_request"},
      {"content_length_20_digits", kPostHead + "Content-Length: 18446744073709551616\r\n\r\n{}", 400,
       "malformed_request"},
      {"content_length_19_digits", kPostHead + "Content-Length: 9999999999999999999\r\n\r\n{}", 413, "request_too_large"},
      {"content_length_over_limit", kPostHead + fmt::format("Content-Length: {}\r\n\r\n{{", kBodyLimit + 1), 413,
       "request_too_large"},
      {"two_different_lengths", kPostHead + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400,
       "malformed_request"},
      {"post_without_length", kPostHead + "\r\n" + kChatBody, 411, "length_required"},
      {"length_and_chunked", kPostHead + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
       "unsupported_transfer_encoding"},
      {"two_transfer_encodings", kPostHead + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
       400, "unsupported_transfer_encoding"},
      {"transfer_encoding_gzip", kPostHead + "Transfer-Encoding: gzip\r\n\r\n", 501, "unsupported_transfer_encoding"},
      {"transfer_encoding_list", kPostHead + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501,
       "unsupported_transfer_encoding"},
      {"transfer_encoding_identity", kPostHead + "Transfer-Encoding: identity\r\n\r\n", 501,
       "unsupported_transfer_encoding"},
      {"content_encoding_compress", kPostHead + "Content-Encoding: compress\r\nContent-Length: 2\r\n\r\n{}", 415,
       "unsupported_content_encoding"},
      {"content_encoding_list", kPostHead + "Content-Encoding: gzip, gzip\r\nContent-Length: 2\r\n\r\n{}", 415,
       "unsupported_content_encoding"},
      {"content_type_text_plain",
       "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: " +
           std::to_string(kChatBody.size()) + "\r\n\r\n" + kChatBody,
       200, ""},
      {"authorization_garbage_without_keys", rpost("/v1/chat/completions", kChatBody, "Authorization: \xffzz\r\n"),
       200, ""},
      {"connection_close_request", rpost("/v1/chat/completions", kChatBody, "Connection: close\r\n"), 200, ""},
  };
}

std::vector<Hostile> body_cases() {
  const std::string big_chat = R"({"messages":[{"role":"user","content":")" + std::string(100000, 'a') + "\"}]}";
  std::vector<std::string> big_chunks;
  for (size_t off = 0; off < big_chat.size(); off += 4000) big_chunks.push_back(big_chat.substr(off, 4000));
  const std::string gz = compress(kChatBody, 31);
  const std::string zl = compress(kChatBody, 15);
  const std::string bomb = compress(R"({"messages":[{"role":"user","content":")" + std::string(1 << 20, ' ') + "\"}]}", 31);
  return {
      {"empty_body", rpost("/v1/chat/completions", ""), 400, "invalid_json"},
      {"truncated_json", rpost("/v1/chat/completions", "{\"messages\": ["), 400, "invalid_json"},
      {"trailing_garbage", rpost("/v1/chat/completions", kChatBody + " x"), 400, "invalid_json"},
      {"two_documents", rpost("/v1/chat/completions", kChatBody + kChatBody), 400, "invalid_json"},
      {"json_comment", rpost("/v1/chat/completions", "/*c*/" + kChatBody), 400, "invalid_json"},
      {"nan_literal", chat("\"temperature\":NaN"), 400, "invalid_json"},
      {"infinity_literal", chat("\"temperature\":Infinity"), 400, "invalid_json"},
      {"single_quotes", rpost("/v1/chat/completions", "{'messages':[]}"), 400, "invalid_json"},
      {"trailing_comma", rpost("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"},]})"), 400,
       "invalid_json"},
      {"body_null", rpost("/v1/chat/completions", "null"), 400, "invalid_type"},
      {"body_number", rpost("/v1/chat/completions", "42"), 400, "invalid_type"},
      {"body_string", rpost("/v1/completions", "\"prompt\""), 400, "invalid_type"},
      {"body_array", rpost("/v1/chat/completions", "[1,2]"), 400, "invalid_type"},
      {"body_true", rpost("/v1/completions", "true"), 400, "invalid_type"},
      {"utf8_bom", rpost("/v1/chat/completions", "\xef\xbb\xbf" + kChatBody), 200, ""},
      {"stray_byte_in_content", chat("", "\"ab\xff" "cd\""), 400, "invalid_json"},
      {"overlong_in_content", chat("", "\"\xc0\xaf\""), 400, "invalid_json"},
      {"cesu8_in_content", chat("", "\"\xed\xa0\x80\xed\xb0\x80\""), 400, "invalid_json"},
      {"truncated_utf8_in_content", chat("", "\"\xe2\x82\""), 400, "invalid_json"},
      {"invalid_utf8_in_key", rpost("/v1/chat/completions", R"({"mess)" "\xff" R"(ages":[]})"), 400, "invalid_json"},
      {"lone_high_surrogate_escape", chat("", R"("\ud800")"), 400, "invalid_json"},
      {"reversed_surrogates_escape", chat("", R"("\udc00\ud800")"), 400, "invalid_json"},
      {"valid_surrogate_pair", chat("", R"("\ud83d\ude00")"), 200, ""},
      {"nul_escape_in_content", chat("", R"("a\u0000b")"), 200, ""},
      {"raw_control_char_in_string", chat("", std::string("\"a\x01" "b\"")), 400, "invalid_json"},
      {"duplicate_keys_last_wins", chat("\"max_tokens\":-5,\"max_tokens\":5"), 200, ""},
      {"nesting_30000_unknown_field", chat("\"deep\":" + std::string(30000, '[') + std::string(30000, ']')), 200, ""},
      {"nesting_60000_unclosed", rpost("/v1/chat/completions", std::string(60000, '[')), 400, "invalid_json"},
      {"nesting_30000_body", rpost("/v1/chat/completions", std::string(30000, '[') + std::string(30000, ']')), 400,
       "invalid_type"},
      {"nested_objects_unknown", chat("\"deep\":" + repeat("{\"a\":", 10000) + "1" + std::string(10000, '}')), 200, ""},
      {"number_overflow", chat("\"temperature\":1e400"), 400, "invalid_json"},
      {"number_overflow_unknown_field", chat("\"whatever\":-1e400"), 400, "invalid_json"},
      {"number_underflow", chat("\"temperature\":1e-400"), 200, ""},
      {"number_5000_digits", chat("\"whatever\":" + std::string(5000, '9')), 400, "invalid_json"},
      {"chunked_ok", chunked("/v1/chat/completions", {kChatBody.substr(0, 10), kChatBody.substr(10)}), 200, ""},
      {"chunked_extension", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                fmt::format("{:x};name=value\r\n{}\r\n0\r\n\r\n", kChatBody.size(), kChatBody),
       200, ""},
      {"chunked_bad_size", chunked("/v1/chat/completions", {}, "zz\r\nabc\r\n0\r\n\r\n"), 400, "invalid_body"},
      {"chunked_huge_size", chunked("/v1/chat/completions", {}, "ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n"), 413,
       "request_too_large"},  // a chunk declared beyond the limit, refused at its size line
      {"chunked_negative_size", chunked("/v1/chat/completions", {}, "-5\r\nabc\r\n0\r\n\r\n"), 400, "invalid_body"},
      {"chunked_data_longer_than_size", chunked("/v1/chat/completions", {}, "2\r\nabcdef\r\n0\r\n\r\n"), 400,
       "invalid_body"},
      {"chunked_no_last_chunk", chunked("/v1/chat/completions", {kChatBody}, ""), 400, "invalid_body", "", true},
      {"chunked_declared_over_limit", chunked("/v1/chat/completions", {}, "200000\r\n{"), 413, "request_too_large"},
      {"chunked_17_digit_size", chunked("/v1/chat/completions", {}, "00000000000000002\r\n{}\r\n0\r\n\r\n"), 400,
       "invalid_body"},
      {"chunked_bare_lf", chunked("/v1/chat/completions", {}, "2\n{}\n0\n\n"), 400, "invalid_body"},
      {"chunked_trailer", chunked("/v1/chat/completions", {kChatBody}, "0\r\nX-Trailer: 1\r\n\r\n"), 400,
       "invalid_body"},
      {"chunked_no_crlf_after_data", chunked("/v1/chat/completions", {}, fmt::format("{:x}\r\n{}0\r\n\r\n", kChatBody.size(), kChatBody)),
       400, "invalid_body"},
      {"chunked_over_limit", chunked("/v1/chat/completions", big_chunks), 413, "request_too_large"},
      {"truncated_body", kPostHead + "Content-Length: 100\r\n\r\n{\"messages\":", 400, "invalid_body", "", true},
      {"body_over_limit", rpost("/v1/chat/completions", big_chat), 413, "request_too_large"},
      {"gzip_ok", encoded_post(gz, "gzip"), 200, ""},
      {"deflate_ok", encoded_post(zl, "deflate"), 200, ""},
      {"identity_ok", encoded_post(kChatBody, "identity"), 200, ""},
      {"gzip_invalid", encoded_post("notgzip", "gzip"), 400, "invalid_body"},
      // httplib's inflater does not report a stream that stops early: the JSON parser sees the cut
      {"gzip_truncated", encoded_post(gz.substr(0, gz.size() / 2), "gzip"), 400, "invalid_json"},
      {"deflate_invalid", encoded_post("\x01\x02\x03\x04", "deflate"), 400, "invalid_body"},
      {"brotli_invalid", encoded_post("\xff\xff\xff\xff\xff", "br"), 400, "invalid_body"},
      {"gzip_bomb_1MiB", encoded_post(bomb, "gzip"), 413, "request_too_large"},
      {"gzip_chunked", chunked("/v1/chat/completions", {gz}, "0\r\n\r\n", "Content-Encoding: gzip\r\n"), 200, ""},
  };
}

std::vector<Hostile> field_cases() {
  return {
      // model
      {"model_wrong_type", chat("\"model\":5"), 400, "invalid_type", "model"},
      {"model_empty", chat("\"model\":\"\""), 404, "model_not_found", "model"},
      {"model_nul", chat(R"("model":"fake-model\u0000")"), 404, "model_not_found", "model"},
      {"model_50k", chat("\"model\":\"" + std::string(50000, 'm') + "\""), 404, "model_not_found", "model"},
      {"model_served", chat("\"model\":\"fake-model\""), 200, ""},
      {"model_null", chat("\"model\":null"), 200, ""},
      // messages
      {"messages_missing", rpost("/v1/chat/completions", "{}"), 400, "missing_required_parameter", "messages"},
      {"messages_object", chat_messages("{}"), 400, "invalid_type", "messages"},
      {"messages_empty", chat_messages("[]"), 400, "invalid_value", "messages"},
      {"message_number", chat_messages("[1]"), 400, "invalid_type", "messages[0]"},
      {"message_without_role", chat_messages(R"([{"content":"x"}])"), 400, "missing_required_parameter",
       "messages[0].role"},
      {"role_unknown", chat_messages(R"([{"role":"wizard","content":"x"}])"), 400, "invalid_value", "messages[0].role"},
      {"role_number", chat_messages(R"([{"role":5,"content":"x"}])"), 400, "invalid_type", "messages[0].role"},
      {"role_developer", chat_messages(R"([{"role":"developer","content":"be brief"},{"role":"user","content":"x"}])"),
       200, ""},
      {"user_without_content", chat_messages(R"([{"role":"user"}])"), 400, "missing_required_parameter",
       "messages[0].content"},
      {"content_number", chat("", "5"), 400, "invalid_type", "messages[0].content"},
      {"content_object", chat("", "{}"), 400, "invalid_type", "messages[0].content"},
      {"content_empty_parts", chat("", "[]"), 200, ""},
      {"content_image_part", chat("", R"([{"type":"image_url","image_url":{"url":"x"}}])"), 400,
       "unsupported_parameter", "messages[0].content[0].type"},
      {"content_part_without_text", chat("", R"([{"type":"text"}])"), 400, "missing_required_parameter",
       "messages[0].content[0].text"},
      {"content_part_text_number", chat("", R"([{"type":"text","text":5}])"), 400, "invalid_type",
       "messages[0].content[0].text"},
      {"content_part_not_object", chat("", R"(["text"])"), 400, "invalid_type", "messages[0].content[0]"},
      {"assistant_tool_calls", chat_messages(R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{}]}])"),
       400, "missing_required_parameter", "messages[1].tool_calls[0].function"},
      {"assistant_null_content", chat_messages(R"([{"role":"user","content":"x"},{"role":"assistant","content":null},)"
                                               R"({"role":"user","content":"y"}])"),
       200, ""},
      {"content_60k", chat("", "\"" + std::string(60000, 'a') + "\""), 200, ""},
      {"content_20k_words", chat("", "\"" + repeat("a ", 20000) + "\""), 400, "context_length_exceeded", "messages"},
      {"messages_2000", chat_messages(array_of(R"({"role":"user","content":"x"})", 2000)), 400,
       "context_length_exceeded", "messages"},
      // max_tokens
      {"max_tokens_zero", chat("\"max_tokens\":0"), 400, "invalid_value", "max_tokens"},
      {"max_tokens_negative", chat("\"max_tokens\":-1"), 400, "invalid_value", "max_tokens"},
      {"max_tokens_string", chat("\"max_tokens\":\"5\""), 400, "invalid_type", "max_tokens"},
      {"max_tokens_bool", chat("\"max_tokens\":true"), 400, "invalid_type", "max_tokens"},
      {"max_tokens_fraction", chat("\"max_tokens\":1.5"), 400, "invalid_type", "max_tokens"},
      {"max_tokens_integral_float", chat("\"max_tokens\":2.0"), 200, ""},
      {"max_tokens_2_pow_40_plus_1", chat("\"max_tokens\":1099511627777"), 400, "invalid_value", "max_tokens"},
      {"max_tokens_2_pow_64", chat("\"max_tokens\":18446744073709551616"), 400, "invalid_value", "max_tokens"},
      {"max_tokens_1e300", chat("\"max_tokens\":1e300"), 400, "invalid_value", "max_tokens"},
      {"max_tokens_fills_context", chat("\"max_tokens\":4096"), 400, "context_length_exceeded", "max_tokens"},
      {"max_completion_tokens_wins", chat("\"max_completion_tokens\":3,\"max_tokens\":0"), 400, "invalid_value",
       "max_tokens"},
      {"max_completion_tokens_bad", chat("\"max_completion_tokens\":-3"), 400, "invalid_value",
       "max_completion_tokens"},
      // n
      {"n_zero", chat("\"n\":0"), 400, "invalid_value", "n"},
      {"n_over_max", chat("\"n\":17"), 400, "invalid_value", "n"},
      {"n_huge", chat("\"n\":4294967296"), 400, "invalid_value", "n"},
      {"n_string", chat("\"n\":\"1\""), 400, "invalid_type", "n"},
      {"n_one_float", chat("\"n\":1.0"), 200, ""},
      // sampling
      {"temperature_negative", chat("\"temperature\":-0.1"), 400, "invalid_value", "temperature"},
      {"temperature_above_2", chat("\"temperature\":2.0001"), 400, "invalid_value", "temperature"},
      {"temperature_string", chat("\"temperature\":\"0.5\""), 400, "invalid_type", "temperature"},
      {"temperature_1e308", chat("\"temperature\":1e308"), 400, "invalid_value", "temperature"},
      {"temperature_negative_zero", chat("\"temperature\":-0.0"), 200, ""},
      {"top_p_zero", chat("\"top_p\":0"), 400, "invalid_value", "top_p"},
      {"top_p_array", chat("\"top_p\":[0.5]"), 400, "invalid_type", "top_p"},
      {"top_k_minus_two", chat("\"top_k\":-2"), 400, "invalid_value", "top_k"},
      {"top_k_minus_one", chat("\"top_k\":-1"), 200, ""},
      {"top_k_1e10", chat("\"top_k\":1e10"), 400, "invalid_value", "top_k"},
      {"top_k_fraction", chat("\"top_k\":2.5"), 400, "invalid_type", "top_k"},
      {"min_p_above_1", chat("\"min_p\":1.1"), 400, "invalid_value", "min_p"},
      {"presence_penalty_low", chat("\"presence_penalty\":-2.5"), 400, "invalid_value", "presence_penalty"},
      {"frequency_penalty_high", chat("\"frequency_penalty\":3"), 400, "invalid_value", "frequency_penalty"},
      {"repetition_penalty_zero", chat("\"repetition_penalty\":0"), 400, "invalid_value", "repetition_penalty"},
      {"repetition_penalty_high", chat("\"repetition_penalty\":11"), 400, "invalid_value", "repetition_penalty"},
      // seeds
      {"seed_negative", chat("\"seed\":-1"), 200, ""},
      {"seed_int64_max", chat("\"seed\":9223372036854775807"), 200, ""},
      {"seed_int64_min", chat("\"seed\":-9223372036854775808"), 200, ""},
      {"seed_uint64_max", chat("\"seed\":18446744073709551615"), 400, "invalid_value", "seed"},
      {"seed_fraction", chat("\"seed\":1.5"), 400, "invalid_type", "seed"},
      {"seed_string", chat("\"seed\":\"7\""), 400, "invalid_type", "seed"},
      {"seed_overflow", chat("\"seed\":1e400"), 400, "invalid_json"},
      // stop strings
      {"stop_16", chat(stops(16, 4)), 200, ""},
      {"stop_17", chat(stops(17, 4)), 400, "invalid_value", "stop"},
      {"stop_16_of_3000_bytes", chat(stops(16, 3000)), 200, ""},
      {"stop_empty_string", chat("\"stop\":\"\""), 400, "invalid_value", "stop"},
      {"stop_empty_in_list", chat("\"stop\":[\"a\",\"\"]"), 400, "invalid_value", "stop"},
      {"stop_number_in_list", chat("\"stop\":[\"a\",1]"), 400, "invalid_type", "stop[1]"},
      {"stop_object", chat("\"stop\":{}"), 400, "invalid_type", "stop"},
      {"stop_10000_strings", chat(stops(10000, 1)), 400, "invalid_value", "stop"},
      {"stop_nul", chat(R"("stop":"\u0000")"), 200, ""},
      {"stop_multibyte", chat("\"stop\":[\"\xe4\xb8\x96\",\"\xc3\xaf\"]"), 200, ""},
      {"stop_invalid_utf8", chat("\"stop\":\"\xff\""), 400, "invalid_json"},
      // stream
      {"stream_string", chat("\"stream\":\"true\""), 400, "invalid_type", "stream"},
      {"stream_options_array", chat("\"stream\":true,\"stream_options\":[]"), 400, "invalid_type", "stream_options"},
      {"stream_options_usage_number", chat("\"stream\":true,\"stream_options\":{\"include_usage\":1}"), 400,
       "invalid_type", "stream_options.include_usage"},
      // logprobs
      {"logprobs_string", chat("\"logprobs\":\"yes\""), 400, "invalid_type", "logprobs"},
      {"top_logprobs_21", chat("\"logprobs\":true,\"top_logprobs\":21"), 400, "invalid_value", "top_logprobs"},
      {"top_logprobs_without_logprobs", chat("\"top_logprobs\":5"), 400, "invalid_value", "top_logprobs"},
      {"top_logprobs_negative", chat("\"logprobs\":true,\"top_logprobs\":-1"), 400, "invalid_value", "top_logprobs"},
      {"top_logprobs_20", chat("\"logprobs\":true,\"top_logprobs\":20"), 200, ""},
      // tools, formats, the rest
      {"tools_nonempty", chat("\"tools\":[{}]"), 400, "missing_required_parameter", "tools[0].type"},
      {"tools_string", chat("\"tools\":\"x\""), 400, "invalid_type", "tools"},
      {"tools_empty", chat("\"tools\":[]"), 200, ""},
      {"functions_nonempty", chat("\"functions\":[{}]"), 400, "unsupported_parameter", "functions"},
      {"tool_choice_required", chat("\"tool_choice\":\"required\""), 400, "invalid_value", "tool_choice"},
      {"tool_choice_bogus", chat("\"tool_choice\":\"bogus\""), 400, "invalid_value", "tool_choice"},
      {"tool_choice_number", chat("\"tool_choice\":5"), 400, "invalid_type", "tool_choice"},
      {"response_format_json", chat("\"response_format\":{\"type\":\"json_object\"}"), 200, ""},
      {"response_format_yaml", chat("\"response_format\":{\"type\":\"yaml\"}"), 400, "invalid_value",
       "response_format.type"},
      {"response_format_string", chat("\"response_format\":\"json\""), 400, "invalid_type", "response_format"},
      {"logit_bias_nonempty", chat("\"logit_bias\":{\"5\":1}"), 200, ""},
      {"logit_bias_bad_key", chat("\"logit_bias\":{\"x\":1}"), 400, "invalid_value", "logit_bias.x"},
      {"logit_bias_range", chat("\"logit_bias\":{\"5\":101}"), 400, "invalid_value", "logit_bias.5"},
      {"logit_bias_type", chat("\"logit_bias\":{\"5\":\"1\"}"), 400, "invalid_type", "logit_bias.5"},
      {"logit_bias_array", chat("\"logit_bias\":[]"), 400, "invalid_type", "logit_bias"},
      {"logit_bias_one_id_twice", chat("\"logit_bias\":{\"7\":1,\"07\":-1}"), 400, "invalid_value", "logit_bias"},
      {"reasoning_effort_max", chat("\"reasoning_effort\":\"max\""), 400, "invalid_value", "reasoning_effort"},
      {"reasoning_effort_none", chat("\"reasoning_effort\":\"none\""), 200, ""},
      {"template_kwargs_array", chat("\"chat_template_kwargs\":[]"), 400, "invalid_type", "chat_template_kwargs"},
      {"enable_thinking_string", chat("\"chat_template_kwargs\":{\"enable_thinking\":\"no\"}"), 400, "invalid_type",
       "chat_template_kwargs.enable_thinking"},
      {"user_number", chat("\"user\":5"), 400, "invalid_type", "user"},
      {"unknown_fields_ignored", chat("\"frobnicate\":{\"deep\":[1,2,{\"x\":null}]},\"\":1"), 200, ""},
  };
}

std::vector<Hostile> completion_cases() {
  return {
      {"prompt_missing", rpost("/v1/completions", "{}"), 400, "missing_required_parameter", "prompt"},
      {"prompt_object", completion("{}"), 400, "invalid_type", "prompt"},
      {"prompt_empty_list", completion("[]"), 400, "invalid_value", "prompt"},
      {"prompt_empty_token_list", completion("[[]]"), 400, "invalid_value", "prompt[0]"},
      {"prompt_two_strings", completion(R"(["a","b"])"), 400, "unsupported_parameter", "prompt"},
      {"prompt_two_token_lists", completion("[[1],[2]]"), 400, "unsupported_parameter", "prompt"},
      {"prompt_bool_first", completion("[true]"), 400, "invalid_type", "prompt[0]"},
      {"prompt_string_number", completion("\"hello\"", "\"max_tokens\":3"), 200, ""},
      {"prompt_empty_string", completion("\"\""), 200, ""},
      {"token_ids_ok", completion("[1,2,999]"), 200, ""},
      {"token_ids_nested_ok", completion("[[1,2,3]]"), 200, ""},
      {"token_id_negative", completion("[5,-1]"), 400, "invalid_value", "prompt[1]"},
      {"token_id_int32_overflow", completion("[2147483648]"), 400, "invalid_value", "prompt[0]"},
      {"token_id_int32_max", completion("[2147483647]"), 400, "invalid_value", "prompt"},
      {"token_id_at_vocab", completion("[1000]"), 400, "invalid_value", "prompt"},
      {"token_id_fraction", completion("[1.5]"), 400, "invalid_type", "prompt[0]"},
      {"token_id_string_mixed", completion("[1,\"a\"]"), 400, "invalid_type", "prompt[1]"},
      {"token_id_2_pow_64", completion("[18446744073709551616]"), 400, "invalid_value", "prompt[0]"},
      {"token_ids_20000", completion(array_of("7", 20000)), 400, "context_length_exceeded", "prompt"},
      {"completion_logprobs_6", completion("\"x\"", "\"logprobs\":6"), 400, "invalid_value", "logprobs"},
      {"completion_logprobs_bool", completion("\"x\"", "\"logprobs\":true"), 400, "invalid_type", "logprobs"},
      {"completion_logprobs_5", completion("\"x\"", "\"logprobs\":5"), 200, ""},
      {"echo_true", completion("\"x\"", "\"echo\":true"), 400, "unsupported_parameter", "echo"},
      {"best_of_2", completion("\"x\"", "\"best_of\":2"), 400, "unsupported_parameter", "best_of"},
      {"suffix_text", completion("\"x\"", "\"suffix\":\"y\""), 400, "unsupported_parameter", "suffix"},
      {"suffix_empty", completion("\"x\"", "\"suffix\":\"\""), 200, ""},
      {"completion_n_over_max", completion("\"x\"", "\"n\":17"), 400, "invalid_value", "n"},
      {"completion_stop_17", completion("\"x\"", stops(17, 2)), 400, "invalid_value", "stop"},
      {"completion_model_other", completion("\"x\"", "\"model\":\"gpt-4o\""), 404, "model_not_found", "model"},
  };
}

std::vector<Hostile> all_cases() {
  std::vector<Hostile> all;
  for (auto part : {request_line_cases(), header_cases(), body_cases(), field_cases(), completion_cases()})
    for (Hostile& h : part) all.push_back(std::move(h));
  return all;
}

// Error codes produced by the HTTP layer: their answer ends the connection.
bool http_level(const std::string& code) {
  for (const char* c : {"malformed_request", "invalid_body", "request_header_too_large", "uri_too_long",
                        "request_too_large", "length_required", "unsupported_transfer_encoding",
                        "unsupported_content_encoding"})
    if (code == c) return true;
  return false;
}

// ---- the table-driven test ------------------------------------------------------------------------------------

class HostileTest : public ServerTest, public ::testing::WithParamInterface<Hostile> {
 protected:
  void SetUp() override {
    FakeEngine::Config ec;
    ec.step = std::chrono::microseconds(50);
    HttpServerConfig sc;
    sc.max_body_bytes = kBodyLimit;
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ninfer_server_hostile_test";
    std::filesystem::create_directories(dir);
    sc.log_jsonl_path = (dir / (GetParam().name + ".jsonl")).string();  // the test's full name holds '/'
    std::filesystem::remove(sc.log_jsonl_path);
    start(ec, sc);
  }

  // /health and a real chat completion, on fresh raw connections.
  void expect_serving_raw() {
    RawResponse h = raw_exchange(port_, rget("/health"), std::chrono::seconds(5));
    EXPECT_EQ(h.status, 200) << "health after the case: " << h.head << h.body;
    RawResponse c = raw_exchange(port_, chat(), std::chrono::seconds(5));
    EXPECT_EQ(c.status, 200) << "completion after the case: " << c.head << c.body;
    EXPECT_EQ(c.json["object"], "chat.completion") << c.body;
  }
};

TEST_P(HostileTest, ExactAnswerThenStillServing) {
  const Hostile& h = GetParam();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.connected());
  const auto t0 = std::chrono::steady_clock::now();
  conn.send(h.bytes);  // the server may answer and close before it has read everything
  if (h.half_close) conn.shutdown_write();
  RawResponse r = conn.read_response(std::chrono::seconds(5));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, h.status) << r.head << r.body.substr(0, 2000);
  EXPECT_LT(s, 2.0) << "answered after " << s << " s";
  if (h.code.empty()) {
    EXPECT_EQ(r.code(), "") << r.body.substr(0, 2000);
  } else {
    EXPECT_EQ(r.code(), h.code) << r.body.substr(0, 2000);
    EXPECT_EQ(r.header("Content-Type"), "application/json; charset=utf-8") << r.head;
    ASSERT_TRUE(r.json.is_object()) << r.body.substr(0, 2000);
    const nlohmann::json& e = r.json["error"];
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body.substr(0, 2000);
    EXPECT_TRUE(e["type"].is_string()) << r.body.substr(0, 2000);
    if (!h.param.empty()) {
      EXPECT_EQ(e["param"], h.param) << r.body.substr(0, 2000);
    }
    if (http_level(h.code)) {
      EXPECT_EQ(r.header("Connection"), "close") << r.head;
      EXPECT_TRUE(conn.closed_within(std::chrono::seconds(2)));
    }
  }
  expect_serving_raw();
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostileTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Hostile>& info) { return info.param.name; });

TEST(HostileCorpus, HasAtLeast100DistinctCases) {
  std::vector<Hostile> all = all_cases();
  EXPECT_GE(all.size(), 100u);
  std::set<std::string> names;
  for (const Hostile& h : all) EXPECT_TRUE(names.insert(h.name).second) << "duplicate case name " << h.name;
}

// ---- concurrency ----------------------------------------------------------------------------------------------

// Every case of the corpus at once from 16 threads, with ordinary requests in between: each still gets its exact
// answer, and afterwards nothing is in flight and the server serves.
TEST_F(ServerTest, HostileCorpusConcurrentlyWithGoodTraffic) {
  FakeEngine::Config ec;
  ec.step = std::chrono::microseconds(50);
  HttpServerConfig sc;
  sc.max_body_bytes = kBodyLimit;
  start(ec, sc);
  const std::vector<Hostile> all = all_cases();
  std::atomic<size_t> next{0};
  std::atomic<int> wrong{0}, good_failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&] {
      for (size_t i; (i = next++) < all.size();) {
        const Hostile& h = all[i];
        RawConnection conn(port_);
        conn.send(h.bytes);
        if (h.half_close) conn.shutdown_write();
        RawResponse r = conn.read_response(std::chrono::seconds(10));
        if (r.status != h.status || r.code() != h.code) {
          ++wrong;
          ADD_FAILURE() << h.name << ": " << r.status << " " << r.code();
        }
        if (i % 4 == 0 && raw_exchange(port_, chat(), std::chrono::seconds(10)).status != 200) ++good_failed;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(good_failed.load(), 0);
  EXPECT_TRUE(eventually([&] { return server_->in_flight() == 0; }));
  EXPECT_TRUE(engine_->wait_idle(std::chrono::seconds(5)));
  expect_still_serving();
}

// 32 streaming clients that hang up after the first event, 32 that send half a request and vanish, and 32 that
// disconnect before the answer of a blocking request: every generation is cancelled, nothing stays in flight.
TEST_F(ServerTest, ConcurrentDisconnectsLeaveNothingBehind) {
  HttpServerConfig sc;
  sc.max_in_flight = 256;
  start({}, sc);
  std::vector<std::thread> threads;
  for (int i = 0; i < 32; ++i)
    threads.emplace_back([&, i] {
      RawConnection c(port_);
      c.send(chat("\"stream\":true", "\"__endless__ " + std::to_string(i) + "\""));
      RawResponse head;
      (void)c.closed_within(std::chrono::milliseconds(50));  // let some events arrive, then drop the socket
    });
  for (int i = 0; i < 32; ++i)
    threads.emplace_back([&] {
      RawConnection c(port_);
      const std::string full = chat();
      c.send(full.substr(0, full.size() / 2));
    });
  for (int i = 0; i < 32; ++i)
    threads.emplace_back([&, i] {
      RawConnection c(port_);
      c.send(chat("\"max_tokens\":500", "\"__endless__ b" + std::to_string(i) + "\""));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(eventually([&] { return server_->in_flight() == 0; }, std::chrono::seconds(10)));
  EXPECT_TRUE(engine_->wait_idle(std::chrono::seconds(10)));
  EXPECT_GE(engine_->cancelled_finishes().size(), 32u);
  expect_still_serving();
}

// Pipelined hostile requests: a good request, then a malformed one: the first is answered, the second gets its
// error and the connection closes; nothing after it is served on that connection.
TEST_F(ServerTest, PipelinedGoodThenHostile) {
  start();
  RawConnection c(port_);
  ASSERT_TRUE(c.send(chat() + "BREW /health HTTP/1.1\r\n\r\n" + rget("/health")));
  RawResponse a = c.read_response(std::chrono::seconds(3));
  EXPECT_EQ(a.status, 200);
  RawResponse b = c.read_response(std::chrono::seconds(3));
  EXPECT_EQ(b.status, 400);
  EXPECT_EQ(b.code(), "malformed_request");
  EXPECT_TRUE(c.closed_within(std::chrono::seconds(2)));
  expect_still_serving();
}

// A chunk not followed by CRLF used to end the body there, and the rest was served as the next request (a desync
// that smuggles a request past a proxy): now the body is refused and nothing after it is served.
TEST_F(ServerTest, ChunkedFramingCannotSmuggleARequest) {
  start();
  RawConnection c(port_);
  const std::string smuggled = "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(c.send(kPostHead + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}X\r\n" + smuggled + "0\r\n\r\n"));
  RawResponse a = c.read_response(std::chrono::seconds(3));
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_EQ(a.code(), "invalid_body") << a.body;
  EXPECT_EQ(a.header("Connection"), "close");
  RawResponse b = c.read_response(std::chrono::seconds(1));
  EXPECT_EQ(b.status, 0) << "a second answer, to the smuggled request: " << b.head << b.body;
  expect_still_serving();
}

// A Content-Length shorter than the body: the rest is read as the next request, and garbage there is its own 400.
TEST_F(ServerTest, BodyLongerThanContentLength) {
  start();
  RawConnection c(port_);
  ASSERT_TRUE(c.send(kPostHead + "Content-Length: 2\r\n\r\n{}garbage-here\r\n\r\n"));
  RawResponse a = c.read_response(std::chrono::seconds(3));
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.code(), "missing_required_parameter");
  RawResponse b = c.read_response(std::chrono::seconds(3));
  EXPECT_EQ(b.status, 400);
  EXPECT_EQ(b.code(), "malformed_request");
  expect_still_serving();
}

// With --api-key: hostile requests to /v1 without the key are 401 (not 500, not a crash), routing first.
TEST_F(ServerTest, HostileRequestsWithAnApiKey) {
  HttpServerConfig sc;
  sc.api_keys = {"k1"};
  start({}, sc);
  auth_ = {{"Authorization", "Bearer k1"}};
  struct Case {
    std::string bytes;
    int status;
    std::string code;
  };
  const std::vector<Case> cases = {
      {chat(), 401, "invalid_api_key"},
      {chat("", "\"\xff\""), 401, "invalid_api_key"},
      {rpost("/v1/chat/completions", kChatBody, "Authorization: Bearer k1\xff\r\n"), 401, "invalid_api_key"},
      {rpost("/v1/chat/completions", kChatBody, "Authorization: Bearer \r\n"), 401, "invalid_api_key"},
      {rpost("/v1/chat/completions", kChatBody, "Authorization: Bearer " + std::string(8000, 'k') + "\r\n"), 401,
       "invalid_api_key"},
      {rpost("/v1/chat/completions", kChatBody, "X-Api-Key: k\r\n"), 401, "invalid_api_key"},
      {rpost("/v1/chat/completions", kChatBody, "Authorization: bearer k1\r\n"), 401, "invalid_api_key"},
      {rget("/%FF"), 404, "not_found"},
      {rget("/health"), 200, ""},
      {rpost("/v1/chat/completions", kChatBody, "Authorization: Bearer k1\r\n"), 200, ""},
      {rpost("/v1/chat/completions", "{", "Authorization: Bearer k1\r\n"), 400, "invalid_json"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bytes.substr(0, 200));
    RawResponse r = raw_exchange(port_, c.bytes, std::chrono::seconds(5));
    EXPECT_EQ(r.status, c.status) << r.body;
    EXPECT_EQ(r.code(), c.code) << r.body;
  }
  expect_still_serving();
}

}  // namespace
}  // namespace ninfer::server::testing
