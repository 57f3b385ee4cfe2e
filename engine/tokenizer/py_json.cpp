// Owns the Python json.dumps / str / repr(float) / strip emulation used by the chat template renderer.
#include "engine/tokenizer/py_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/tokenizer/unicode.h"

namespace ninfer::py {
namespace {

void dump_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

void dump(std::string& out, const nlohmann::ordered_json& v) {
  using T = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case T::null:
      out += "null";
      break;
    case T::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case T::number_integer:
      out += std::to_string(v.get<int64_t>());
      break;
    case T::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      break;
    case T::number_float:
      out += float_repr(v.get<double>());
      break;
    case T::string:
      dump_string(out, v.get_ref<const std::string&>());
      break;
    case T::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& x : v) {
        if (!first) out += ", ";
        first = false;
        dump(out, x);
      }
      out.push_back(']');
      break;
    }
    case T::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        if (!first) out += ", ";
        first = false;
        dump_string(out, k);
        out += ": ";
        dump(out, x);
      }
      out.push_back('}');
      break;
    }
    default:
      out += "null";
      break;  // binary / discarded values do not come from JSON text
  }
}

}  // namespace

std::string float_repr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+17"
  std::string out;
  size_t pos = 0;
  if (sci[0] == '-') {
    out.push_back('-');
    pos = 1;
  }
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < e; ++i)
    if (sci[i] != '.') digits.push_back(sci[i]);
  int exp10 = std::stoi(sci.substr(e + 1));
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  if (digits == "0") decpt = 1;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out.push_back('.');
      out += digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out += digits.substr(1);
    }
    int pe = decpt - 1;
    out.push_back('e');
    out.push_back(pe < 0 ? '-' : '+');
    int a = pe < 0 ? -pe : pe;
    if (a < 10) out.push_back('0');
    out += std::to_string(a);
  }
  return out;
}

std::string dumps(const nlohmann::ordered_json& value) {
  std::string out;
  dump(out, value);
  return out;
}

std::string str(const nlohmann::ordered_json& v) {
  using T = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case T::null:
      return "None";
    case T::boolean:
      return v.get<bool>() ? "True" : "False";
    case T::string:
      return v.get<std::string>();
    default:
      return dumps(v);
  }
}

namespace {

bool is_py_space_at(std::string_view s, size_t i, int* len) {
  char32_t cp;
  *len = unicode::decode_utf8(s, i, &cp);
  return cp != unicode::kInvalid && (unicode::char_class(cp) & unicode::kPySpace);
}

}  // namespace

std::string_view strip(std::string_view s) {
  size_t b = 0;
  int n;
  while (b < s.size() && is_py_space_at(s, b, &n)) b += static_cast<size_t>(n);
  size_t e = s.size();
  while (e > b) {
    // step back to the start of the previous code point
    size_t p = e - 1;
    while (p > b && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
    if (!is_py_space_at(s, p, &n) || p + static_cast<size_t>(n) != e) break;
    e = p;
  }
  return s.substr(b, e - b);
}

std::string_view lstrip_char(std::string_view s, char c) {
  size_t b = 0;
  while (b < s.size() && s[b] == c) ++b;
  return s.substr(b);
}

std::string_view rstrip_char(std::string_view s, char c) {
  size_t e = s.size();
  while (e > 0 && s[e - 1] == c) --e;
  return s.substr(0, e);
}

}  // namespace ninfer::py
