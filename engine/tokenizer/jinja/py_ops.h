// Owns the Python string and number semantics the builtins share (code points, strip/split, case, conversions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/tokenizer/jinja/interpreter.h"
#include "engine/tokenizer/jinja/value.h"

namespace ninfer::jinja {

// Byte offset of each code point of UTF-8 text, plus s.size() (Python indexes str by code point).
std::vector<size_t> cp_offsets(const std::string& s);
int64_t cp_count(const std::string& s);

// str.upper() / str.lower() for ASCII, Latin-1, Greek and Cyrillic letters (other code points unchanged).
std::string upper_case(const std::string& s);
std::string lower_case(const std::string& s);
// jinja2's title filter / str.title() (words start after whitespace and -({[<) and str.capitalize().
std::string title_case(const std::string& s);
std::string capitalize(const std::string& s);

// str.strip(chars) family as the kept byte range [first, second); chars null/None/undefined: whitespace.
std::pair<size_t, size_t> strip_range(const std::string& s, const Value* chars, bool left, bool right);
// A substring of str(v) that keeps the origins of a string's bytes; strip on it.
Value sub(const Value& v, size_t pos, size_t len);
Value stripped(const Value& v, const Value* chars, bool left, bool right);

using Ranges = std::vector<std::pair<size_t, size_t>>;  // (byte offset, length)
// str.split() (whitespace runs, maxsplit < 0: all) and str.split(sep) / str.rsplit(sep).
Ranges split_ws(const std::string& s, int64_t maxsplit);
Ranges split_sep(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right);
std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count);

// A string computed from `from`: plain when `from` is not a string or has a plain byte.
Value derived(std::string s, const Value& from);
// str(v) for filters that take text (Undefined -> "").
std::string sstr(const Value& v);
Value tuple_of(Value a, Value b);

// json.dumps(ensure_ascii=True) applied to JSON text; jinja2's escape (HTML).
std::string ascii_escape(const std::string& s);
std::string html_escape(const std::string& s);

// jinja2's int / float filters: the value converted, else `fallback`.
int64_t parse_int(const Value& v, int64_t fallback);
double parse_float(const Value& v, double fallback);

// Call arguments by position or keyword.
const Value& arg_or(const CallArgs& a, size_t i, std::string_view name, const Value& fallback);
int64_t int_arg(const CallArgs& a, size_t i, std::string_view name, int64_t fallback);
bool bool_arg(const CallArgs& a, size_t i, std::string_view name, bool fallback);
std::string str_arg(const CallArgs& a, size_t i, std::string_view name, const char* what);

}  // namespace ninfer::jinja
