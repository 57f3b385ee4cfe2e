// Owns the Python string and number semantics the builtins share: code-point indexing, strip/split/replace, case
// mapping, int()/float() conversion, HTML and ASCII escaping, and readers of call arguments.
#include "engine/tokenizer/jinja/py_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/tokenizer/py_json.h"
#include "engine/tokenizer/unicode.h"

namespace ninfer::jinja {
namespace {

bool is_space_cp(std::string_view s, size_t i, int* len) {
  char32_t cp;
  *len = unicode::decode_utf8(s, i, &cp);
  return cp != unicode::kInvalid && (unicode::char_class(cp) & unicode::kPySpace);
}

// Case mapping for ASCII, Latin-1, Greek and Cyrillic letters (other scripts are left as they are).
char32_t map_case(char32_t c, bool upper) {
  if (upper) {
    if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2))
      return c - 32;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
  } else {
    if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2))
      return c + 32;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
  }
  return c;
}

void put_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string convert_case(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(map_case(c, upper)));
      ++i;
      continue;
    }
    char32_t cp;
    int n = unicode::decode_utf8(s, i, &cp);
    if (cp != unicode::kInvalid && cp < 0x800) {
      put_utf8(out, map_case(cp, upper));
    } else {
      out.append(s, i, static_cast<size_t>(n));
    }
    i += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace

std::vector<size_t> cp_offsets(const std::string& s) {
  std::vector<size_t> off;
  off.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) off.push_back(i);
  off.push_back(s.size());
  return off;
}

int64_t cp_count(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string upper_case(const std::string& s) { return convert_case(s, true); }
std::string lower_case(const std::string& s) { return convert_case(s, false); }

// Python str.strip(chars) family as a byte range [first, second); chars == nullptr strips whitespace.
std::pair<size_t, size_t> strip_range(const std::string& s, const Value* chars, bool left, bool right) {
  if (!chars || chars->is_none() || chars->is_undefined()) {
    std::string_view v = s;
    size_t b = 0, e = v.size();
    int n;
    if (left)
      while (b < e && is_space_cp(v, b, &n)) b += static_cast<size_t>(n);
    if (right)
      while (e > b) {
        size_t p = e - 1;
        while (p > b && (static_cast<unsigned char>(v[p]) & 0xC0) == 0x80) --p;
        if (!is_space_cp(v, p, &n) || p + static_cast<size_t>(n) != e) break;
        e = p;
      }
    return {b, e};
  }
  std::vector<std::string> set;
  const std::string cs = chars->to_str();
  auto off = cp_offsets(cs);
  for (size_t k = 0; k + 1 < off.size(); ++k) set.push_back(cs.substr(off[k], off[k + 1] - off[k]));
  auto so = cp_offsets(s);
  size_t b = 0, e = so.size() - 1;
  auto in_set = [&](size_t k) {
    std::string c = s.substr(so[k], so[k + 1] - so[k]);
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  if (left)
    while (b < e && in_set(b)) ++b;
  if (right)
    while (e > b && in_set(e - 1)) --e;
  return {so[b], so[e]};
}

// A substring of a value's str() keeping the origins of a string's bytes.
Value sub(const Value& v, size_t pos, size_t len) {
  if (v.is_string()) return Value::text(v.s.substr(pos, len));
  return Value::string(v.to_str().substr(pos, len), true);
}

Value stripped(const Value& v, const Value* chars, bool left, bool right) {
  std::string s = v.to_str();
  auto [b, e] = strip_range(s, chars, left, right);
  return sub(v, b, e - b);
}

Ranges split_ws(const std::string& s, int64_t maxsplit) {
  Ranges out;
  std::string_view v = s;
  size_t i = 0;
  int n;
  while (i < v.size()) {
    while (i < v.size() && is_space_cp(v, i, &n)) i += static_cast<size_t>(n);
    if (i >= v.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      auto [b, e] = strip_range(s, nullptr, false, true);
      (void)b;
      out.push_back({i, e - i});
      break;
    }
    size_t b = i;
    while (i < v.size() && !is_space_cp(v, i, &n)) i += static_cast<size_t>(n);
    out.push_back({b, i - b});
  }
  return out;
}

Ranges split_sep(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right) {
  if (sep.empty()) throw TemplateError("empty separator");
  Ranges out;
  if (!from_right) {
    size_t b = 0;
    for (size_t p = s.find(sep); p != std::string::npos && (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit);
         p = s.find(sep, b)) {
      out.push_back({b, p - b});
      b = p + sep.size();
    }
    out.push_back({b, s.size() - b});
    return out;
  }
  size_t e = s.size();
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    if (e < sep.size()) break;
    size_t p = s.rfind(sep, e - sep.size());
    if (p == std::string::npos) break;
    out.push_back({p + sep.size(), e - p - sep.size()});
    e = p;
  }
  out.push_back({0, e});
  std::reverse(out.begin(), out.end());
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between code points
    auto off = cp_offsets(s);
    int64_t done = 0;
    for (size_t k = 0; k + 1 < off.size(); ++k) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += s.substr(off[k], off[k + 1] - off[k]);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t b = 0;
  int64_t done = 0;
  for (size_t p = s.find(from); p != std::string::npos && (count < 0 || done < count); p = s.find(from, b)) {
    out += s.substr(b, p - b);
    out += to;
    b = p + from.size();
    ++done;
  }
  return out + s.substr(b);
}

const Value& arg_or(const CallArgs& a, size_t i, std::string_view name, const Value& fallback) {
  const Value* v = a.get(i, name);
  return v ? *v : fallback;
}

int64_t int_arg(const CallArgs& a, size_t i, std::string_view name, int64_t fallback) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return fallback;
  if (v->type == Type::kInt) return v->i;
  if (v->type == Type::kBool) return v->b;
  throw TemplateError("'" + v->type_name() + "' object cannot be interpreted as an integer");
}

bool bool_arg(const CallArgs& a, size_t i, std::string_view name, bool fallback) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : fallback;
}

std::string str_arg(const CallArgs& a, size_t i, std::string_view name, const char* what) {
  const Value* v = a.get(i, name);
  if (!v || !v->is_string()) throw TemplateError(std::string(what) + " must be a string");
  return v->s.str();
}

Value derived(std::string s, const Value& from) { return Value::string(std::move(s), from.is_string() ? from.s.any_plain() : true); }

// Python str of a value as text for filters that take strings (Undefined -> "").
std::string sstr(const Value& v) { return v.to_str(); }

Value tuple_of(Value a, Value b) {
  Value t = Value::array({std::move(a), std::move(b)});
  t.is_tuple = true;
  return t;
}

// json.dumps(ensure_ascii=True): non-ASCII code points as \\uXXXX (UTF-16 surrogate pairs above U+FFFF).
std::string ascii_escape(const std::string& s) {
  std::string out;
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    char32_t cp;
    int n = unicode::decode_utf8(s, i, &cp);
    if (cp == unicode::kInvalid) cp = 0xFFFD;
    if (cp >= 0x10000) {
      char32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                    static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
    }
    out += buf;
    i += static_cast<size_t>(n);
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string title_case(const std::string& s) {
  std::string out = s;
  bool start = true;
  for (auto& c : out) {
    bool sep = c == '-' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      start = true;
      continue;
    }
    if (start && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    else if (!start && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    start = false;
  }
  return out;
}

std::string capitalize(const std::string& s) {
  std::string out = lower_case(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

int64_t parse_int(const Value& v, int64_t fallback) {
  switch (v.type) {
    case Type::kInt: return v.i;
    case Type::kBool: return v.b;
    case Type::kFloat: return std::isfinite(v.f) && std::fabs(v.f) < 9.2e18 ? static_cast<int64_t>(v.f) : fallback;
    case Type::kString: {
      std::string t(py::strip(v.s.str()));
      try {
        size_t n;
        int64_t r = std::stoll(t, &n, 10);
        if (n == t.size()) return r;
        double d = std::stod(t, &n);
        if (n == t.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
      } catch (const std::exception&) {
      }
      return fallback;
    }
    default: return fallback;
  }
}

double parse_float(const Value& v, double fallback) {
  if (v.is_number() || v.type == Type::kBool) return v.as_double();
  if (v.is_string()) {
    std::string t(py::strip(v.s.str()));
    try {
      size_t n;
      double d = std::stod(t, &n);
      if (n == t.size()) return d;
    } catch (const std::exception&) {
    }
  }
  return fallback;
}


}  // namespace ninfer::jinja
