// Owns the interface of the chat-template builtins: filters (filters.cpp), tests and globals (builtins.cpp),
// attribute/item access with str/dict/list methods (methods.cpp).
#pragma once

#include <string>

#include "engine/tokenizer/jinja/interpreter.h"
#include "engine/tokenizer/jinja/value.h"

namespace ninfer::jinja {

// `subject | name(args)`. Throws TemplateError for an unknown filter or bad arguments.
Value apply_filter(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args);

// `subject is name(args)`. Throws TemplateError for an unknown test.
bool apply_test(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args);

// `obj.name` as jinja2 resolves it: methods of str/dict/list first, then the dict key; Undefined when absent.
Value get_attr(const Value& obj, const std::string& name);

// `obj[key]`: dict key, list/str index (negative from the end), then attribute; Undefined when absent.
Value get_item(const Value& obj, const Value& key);

// `obj[start:stop:step]` for lists and strings (code points).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// dict.items() as a list of (key, value) tuples.
Value dict_items(const Value& dict);

// Python iteration: list items, dict keys, str code points, Undefined as empty.
Array iterate(const Value& v);

// Python len(): code points of a str, items of a list, keys of a dict.
int64_t length(const Value& v);

// The global functions: range, namespace, dict, raise_exception, strftime_now.
void add_globals(std::unordered_map<std::string, Value>& globals);

// json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys) with Python's separators.
std::string to_json_text(const Value& v, int indent, bool sort_keys);

}  // namespace ninfer::jinja
