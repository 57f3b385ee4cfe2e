// Owns the jinja2 filters of chat templates, transformers' tojson (Python json.dumps) included.
#include <algorithm>
#include <climits>
#include <cmath>

#include "engine/tokenizer/jinja/builtins.h"
#include "engine/tokenizer/jinja/py_ops.h"
#include "engine/tokenizer/py_json.h"

namespace ninfer::jinja {
namespace {


struct JsonStyle {
  int indent = -1;
  bool sort_keys = false;
  std::string item_sep = ", ", key_sep = ": ";
};

void dump(std::string& out, const Value& v, const JsonStyle& st, int level) {
  const int indent = st.indent;
  switch (v.type) {
    case Type::kArray: {
      if (v.arr->empty()) {
        out += "[]";
        return;
      }
      out.push_back('[');
      for (size_t k = 0; k < v.arr->size(); ++k) {
        if (k) out += st.item_sep;
        if (indent >= 0) out += "\n" + std::string(static_cast<size_t>(indent * (level + 1)), ' ');
        dump(out, (*v.arr)[k], st, level + 1);
      }
      if (indent >= 0) out += "\n" + std::string(static_cast<size_t>(indent * level), ' ');
      out.push_back(']');
      return;
    }
    case Type::kObject: {
      if (v.is_namespace) throw TemplateError("Object of type Namespace is not JSON serializable");
      if (v.obj->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.obj->items) items.push_back(&kv);
      if (st.sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return less_than(key_value(a->first), key_value(b->first)); });
      out.push_back('{');
      bool first = true;
      for (const auto* kv : items) {
        if (!first) out += st.item_sep;
        first = false;
        if (indent >= 0) out += "\n" + std::string(static_cast<size_t>(indent * (level + 1)), ' ');
        out += py::dumps(nlohmann::ordered_json(key_text(kv->first)));
        out += st.key_sep;
        dump(out, kv->second, st, level + 1);
      }
      if (indent >= 0) out += "\n" + std::string(static_cast<size_t>(indent * level), ' ');
      out.push_back('}');
      return;
    }
    default:
      out += py::dumps(v.to_json());
  }
}


Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(lower_case(v.s.str()), false);
  return v;
}

Value attr_path(const Value& v, const std::string& path) {  // "a.b" or "0"
  Value cur = v;
  size_t b = 0;
  while (b <= path.size()) {
    size_t e = path.find('.', b);
    std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (cur.is_undefined()) return cur;
    cur = numeric && cur.is_array() ? get_item(cur, Value::integer(std::stoll(part))) : get_item(cur, Value::string(part, false));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return cur;
}

Array sorted(Array items, bool reverse, bool case_sensitive, const std::string& attribute) {
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    Value ka = sort_key(attribute.empty() ? a : attr_path(a, attribute), case_sensitive);
    Value kb = sort_key(attribute.empty() ? b : attr_path(b, attribute), case_sensitive);
    return reverse ? less_than(kb, ka) : less_than(ka, kb);
  });
  return items;
}

// select / reject / selectattr / rejectattr
Value select(Interpreter& in, const Value& seq, CallArgs& a, bool by_attr, bool keep_when) {
  size_t k = 0;
  std::string attr;
  if (by_attr) attr = str_arg(a, k++, "attribute", "attribute");
  std::string test;
  if (a.pos.size() > k) test = str_arg(a, k++, "", "test name");
  CallArgs targs;
  for (; k < a.pos.size(); ++k) targs.pos.push_back(a.pos[k]);
  Array out;
  if (!seq.truthy()) return Value::array();  // jinja2 skips falsy sequences (None included)
  for (const auto& item : iterate(seq)) {
    Value subject = by_attr ? attr_path(item, attr) : item;
    bool ok = test.empty() ? subject.truthy() : apply_test(in, test, subject, targs);
    if (ok == keep_when) out.push_back(item);
  }
  return Value::array(std::move(out));
}

}  // namespace

std::string to_json_text(const Value& v, int indent, bool sort_keys) {
  JsonStyle st;
  st.indent = indent;
  st.sort_keys = sort_keys;
  if (indent >= 0) st.item_sep = ",";
  std::string out;
  dump(out, v, st, 0);
  return out;
}

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& a) {
  static const Value kNone = Value::none();
  if (name == "default" || name == "d") {
    bool boolean = bool_arg(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return arg_or(a, 0, "default_value", Value::string("", false));
    return v;
  }
  if (name == "tojson") {
    const Value* ind = a.get(0, "indent");
    int64_t indent64 = ind && !ind->is_none() ? parse_int(*ind, 0) : -1;
    if (indent64 > 64) throw TemplateError("tojson indent above 64 is not supported");
    int indent = static_cast<int>(std::max<int64_t>(indent64, -1));
    JsonStyle st;
    st.indent = indent;
    st.sort_keys = bool_arg(a, 3, "sort_keys", false);
    if (indent >= 0) st.item_sep = ",";
    if (const Value* sep = a.get(2, "separators"); sep && !sep->is_none()) {
      if (!sep->is_array() || sep->arr->size() != 2) throw TemplateError("tojson separators must be a pair of strings");
      st.item_sep = (*sep->arr)[0].to_str();
      st.key_sep = (*sep->arr)[1].to_str();
    }
    std::string out;
    dump(out, v, st, 0);
    if (bool_arg(a, 4, "ensure_ascii", false)) out = ascii_escape(out);
    return Value::string(std::move(out), true);
  }
  if (name == "safe") return v;
  if (name == "string") return v.is_string() ? v : Value::string(v.to_str(), true);
  if (name == "trim") return stripped(v, a.get(0, "chars"), true, true);
  if (name == "upper") return derived(upper_case(sstr(v)), v);
  if (name == "lower") return derived(lower_case(sstr(v)), v);
  if (name == "title") return derived(title_case(sstr(v)), v);
  if (name == "capitalize") return derived(capitalize(sstr(v)), v);
  if (name == "e" || name == "escape") return derived(html_escape(sstr(v)), v);
  if (name == "length" || name == "count") return Value::integer(length(v));
  if (name == "items") {
    if (v.is_undefined()) return Value::array();
    if (!v.is_object()) throw TemplateError("Can only get item pairs from a mapping.");
    return dict_items(v);
  }
  if (name == "list") return Value::array(iterate(v));
  if (name == "first") {
    Array items = iterate(v);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
  }
  if (name == "last") {
    Array items = iterate(v);
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      Array cps = iterate(v);
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += it->s.str();
      return derived(std::move(out), v);
    }
    Array items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::array(std::move(items));
  }
  if (name == "join") {
    const Value* sep = a.get(0, "d");
    const Value* attr = a.get(1, "attribute");
    Text t;
    bool first = true;
    for (const auto& x : iterate(v)) {
      if (!first && sep) t.append(sep->to_text());
      first = false;
      t.append((attr ? attr_path(x, attr->to_str()) : x).to_text());
    }
    return Value::text(std::move(t));
  }
  if (name == "replace") {
    std::string old_s = sstr(arg_or(a, 0, "old", kNone)), new_s = sstr(arg_or(a, 1, "new", kNone));
    bool plain = v.is_string() ? v.s.any_plain() : true;
    if (const Value* nw = a.get(1, "new"); nw && nw->is_string() && nw->s.any_plain()) plain = true;
    return Value::string(replace_all(sstr(v), old_s, new_s, int_arg(a, 2, "count", -1)), plain);
  }
  if (name == "int") return Value::integer(parse_int(v, int_arg(a, 0, "default", 0)));
  if (name == "float") {
    const Value* d = a.get(0, "default");
    return Value::number(parse_float(v, d ? d->as_double() : 0.0));
  }
  if (name == "abs") {
    if (v.type == Type::kInt) {
      if (v.i == INT64_MIN) throw TemplateError("integer overflow");
      return Value::integer(v.i < 0 ? -v.i : v.i);
    }
    if (v.type == Type::kFloat) return Value::number(std::fabs(v.f));
    throw TemplateError("bad operand type for abs(): '" + v.type_name() + "'");
  }
  if (name == "round") {
    int64_t precision = int_arg(a, 0, "precision", 0);
    std::string method = a.get(1, "method") ? a.get(1, "method")->to_str() : "common";
    double scale = std::pow(10.0, static_cast<double>(precision)), x = v.as_double() * scale;
    double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);  // Python's round(): half to even
    return Value::number(r / scale);
  }
  if (name == "sort") {
    const Value* attr = a.get(2, "attribute");
    return Value::array(sorted(iterate(v), bool_arg(a, 0, "reverse", false), bool_arg(a, 1, "case_sensitive", false),
                               attr ? attr->to_str() : std::string()));
  }
  if (name == "dictsort") {
    if (!v.is_object()) throw TemplateError("dictsort requires a mapping");
    bool cs = bool_arg(a, 0, "case_sensitive", false);
    std::string by = a.get(1, "by") ? a.get(1, "by")->to_str() : "key";
    bool rev = bool_arg(a, 2, "reverse", false);
    Array items = *dict_items(v).arr;
    size_t pos = by == "value" ? 1 : 0;
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      Value kx = sort_key((*x.arr)[pos], cs), ky = sort_key((*y.arr)[pos], cs);
      return rev ? less_than(ky, kx) : less_than(kx, ky);
    });
    return Value::array(std::move(items));
  }
  if (name == "unique") {
    bool cs = bool_arg(a, 0, "case_sensitive", false);
    const Value* attr = a.get(1, "attribute");
    Array out, seen;
    for (const auto& x : iterate(v)) {
      Value key = sort_key(attr ? attr_path(x, attr->to_str()) : x, cs);
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      out.push_back(x);
    }
    return Value::array(std::move(out));
  }
  if (name == "map") {
    Array out;
    if (!v.truthy()) return Value::array();
    if (const Value* attr = a.get(SIZE_MAX, "attribute")) {
      const Value* dflt = a.get(SIZE_MAX, "default");
      for (const auto& x : iterate(v)) {
        Value r = attr_path(x, attr->to_str());
        out.push_back(r.is_undefined() && dflt ? *dflt : r);
      }
    } else {
      std::string filter = str_arg(a, 0, "", "map filter name");
      CallArgs rest;
      rest.pos.assign(a.pos.begin() + 1, a.pos.end());
      rest.kw = a.kw;
      for (const auto& x : iterate(v)) out.push_back(apply_filter(in, filter, x, rest));
    }
    return Value::array(std::move(out));
  }
  if (name == "select") return select(in, v, a, false, true);
  if (name == "reject") return select(in, v, a, false, false);
  if (name == "selectattr") return select(in, v, a, true, true);
  if (name == "rejectattr") return select(in, v, a, true, false);
  if (name == "sum") {
    const Value* attr = a.get(SIZE_MAX, "attribute");
    Value total = arg_or(a, 1, "start", Value::integer(0));
    for (const auto& x : iterate(v)) {
      Value y = attr ? attr_path(x, attr->to_str()) : x;
      total = (total.type == Type::kInt && y.type == Type::kInt) ? Value::integer(total.i + y.i)
                                                                  : Value::number(total.as_double() + y.as_double());
    }
    return total;
  }
  if (name == "min" || name == "max") {
    Array items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    bool cs = bool_arg(a, 0, "case_sensitive", false);
    const Value* best = &items[0];
    for (const auto& x : items) {
      bool better = name == "min" ? less_than(sort_key(x, cs), sort_key(*best, cs)) : less_than(sort_key(*best, cs), sort_key(x, cs));
      if (better) best = &x;
    }
    return *best;
  }
  if (name == "indent") {
    const Value* w = a.get(0, "width");
    int64_t width = w && !w->is_string() ? parse_int(*w, 4) : 4;
    if (width < 0 || width > 1024) throw TemplateError("indent width must be between 0 and 1024");
    std::string ind = w && w->is_string() ? w->s.str() : std::string(static_cast<size_t>(width), ' ');
    bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
    std::string s = sstr(v) + "\n";
    std::vector<std::string> lines;
    size_t b = 0;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == '\n' || s[i] == '\r') {
        lines.push_back(s.substr(b, i - b));
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        b = i + 1;
      }
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k) out += "\n";
      if ((k > 0 || first) && (blank || !lines[k].empty())) out += ind;
      out += lines[k];
    }
    if (first && !blank && !lines.empty() && lines[0].empty()) out = ind + out;
    return derived(std::move(out), v);
  }
  if (name == "format") {
    Value args = Value::array(a.pos);
    args.is_tuple = true;
    if (!v.is_string()) throw TemplateError("format filter needs a string");
    return percent_format(v, args);
  }
  if (name == "attr") return get_attr(v, str_arg(a, 0, "name", "attribute name"));
  if (name == "batch" || name == "slice" || name == "groupby" || name == "truncate" ||
      name == "wordwrap" || name == "center" || name == "pprint" || name == "urlencode" || name == "xmlattr" ||
      name == "striptags" || name == "filesizeformat" || name == "wordcount" || name == "urlize" || name == "forceescape")
    throw TemplateError("filter '" + name + "' is not supported");
  throw TemplateError("No filter named '" + name + "'.");
}

}  // namespace ninfer::jinja
