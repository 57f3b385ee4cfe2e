// Owns Python-compatible value formatting for chat templates: json.dumps(ensure_ascii=False) and str().
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ninfer::py {

// json.dumps(value, ensure_ascii=False) with the default separators (", ", ": "), keys in stored order: what
// Jinja's `tojson` filter produces in transformers' chat templates. Floats use Python's repr.
std::string dumps(const nlohmann::ordered_json& value);

// Python str(value) for scalars: True/False/None, int, repr(float), the string itself. Containers: dumps().
std::string str(const nlohmann::ordered_json& value);

// Python repr(float): the shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16, else exponent.
std::string float_repr(double x);

// Python str.strip() / lstrip(chars) / rstrip(chars) for UTF-8 text (whitespace = str.isspace()).
std::string_view strip(std::string_view s);
std::string_view lstrip_char(std::string_view s, char c);
std::string_view rstrip_char(std::string_view s, char c);

}  // namespace ninfer::py
