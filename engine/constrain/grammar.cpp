#include "engine/constrain/grammar.h"

#include <fmt/format.h>

#include "engine/core/error.h"

namespace ninfer::constrain {

namespace {

std::shared_ptr<Expr::Node> make(Expr::Kind kind) {
  auto n = std::make_shared<Expr::Node>();
  n->kind = kind;
  return n;
}

}  // namespace

// Expr holds a shared_ptr<const Node>; the factories fill a fresh node through this friend-free path.
#define NINFER_EXPR_FROM(node_ptr) \
  Expr e;                          \
  e.node_ = std::move(node_ptr);   \
  return e

Expr Expr::bytes(const ByteSet& set) {
  auto n = make(Kind::kBytes);
  n->set = set;
  NINFER_EXPR_FROM(n);
}

Expr Expr::literal(std::string_view text) {
  std::vector<Expr> items;
  items.reserve(text.size());
  for (char c : text) items.push_back(bytes(ByteSet::of(static_cast<uint8_t>(c))));
  return seq(std::move(items));
}

Expr Expr::rule(uint32_t id) {
  auto n = make(Kind::kRule);
  n->rule = id;
  NINFER_EXPR_FROM(n);
}

Expr Expr::seq(std::vector<Expr> items) {
  if (items.size() == 1) return items[0];
  auto n = make(Kind::kSeq);
  n->items = std::move(items);
  NINFER_EXPR_FROM(n);
}

Expr Expr::choice(std::vector<Expr> options) {
  if (options.size() == 1) return options[0];
  auto n = make(Kind::kChoice);
  n->items = std::move(options);
  NINFER_EXPR_FROM(n);
}

Expr Expr::repeat(Expr item, int32_t min, int32_t max) {
  if (min < 0 || (max != kUnbounded && max < min))
    fail(ErrorKind::kInternal, "grammar: a repetition {{{},{}}} is not a valid range", min, max);
  auto n = make(Kind::kRepeat);
  n->items = {std::move(item)};
  n->min = min;
  n->max = max;
  NINFER_EXPR_FROM(n);
}

#undef NINFER_EXPR_FROM

uint32_t Grammar::declare(std::string name) {
  rules_.push_back({std::move(name), {}, false});
  return static_cast<uint32_t>(rules_.size() - 1);
}

uint32_t Grammar::set_index(const ByteSet& s) {
  for (size_t i = 0; i < sets_.size(); ++i)
    if (sets_[i] == s) return static_cast<uint32_t>(i);
  sets_.push_back(s);
  return static_cast<uint32_t>(sets_.size() - 1);
}

uint32_t Grammar::helper_rule(const Expr& body, const std::string& owner) {
  return add(fmt::format("{}_{}", owner, rules_.size()), body);
}

void Grammar::flatten(const Expr& e, std::vector<Element>& out, const std::string& owner) {
  const Expr::Node& n = e.node();
  switch (n.kind) {
    case Expr::Kind::kBytes: out.push_back({Element::Kind::kBytes, set_index(n.set)}); break;
    case Expr::Kind::kRule: out.push_back({Element::Kind::kRef, n.rule}); break;
    case Expr::Kind::kSeq:
      for (const Expr& item : n.items) flatten(item, out, owner);
      break;
    case Expr::Kind::kChoice:
      out.push_back({Element::Kind::kRef, shared_helper(e, [&] { return helper_rule(e, owner); })});
      break;
    case Expr::Kind::kRepeat: {
      const Expr& item = n.items[0];
      if ((n.max != Expr::kUnbounded && n.max >= 2) || (n.max == Expr::kUnbounded && n.min >= 2)) {
        out.push_back({Element::Kind::kRef, shared_helper(e, [&] { return counted_chain(e, owner); })});
        break;
      }
      for (int32_t i = 0; i < n.min; ++i) flatten(item, out, owner);
      if (n.max == Expr::kUnbounded) {
        // R := item R | ε: the reference is the last element, so a matcher loops without growing its stack.
        out.push_back({Element::Kind::kRef, shared_helper(e, [&] {
                         const uint32_t r = declare(fmt::format("{}_{}", owner, rules_.size()));
                         define(r, Expr::choice({Expr::seq({item, Expr::rule(r)}), Expr::empty()}));
                         return r;
                       })});
      } else if (n.max > n.min) {
        out.push_back({Element::Kind::kRef, shared_helper(e, [&] {  // {min, min + 1}
                         return helper_rule(Expr::choice({item, Expr::empty()}), owner);
                       })});
      }
      break;
    }
  }
}

template <typename F>
uint32_t Grammar::shared_helper(const Expr& e, F&& make) {
  if (auto it = helpers_.find(&e.node()); it != helpers_.end()) return it->second.second;
  const uint32_t r = make();
  helpers_.emplace(&e.node(), std::make_pair(e, r));
  return r;
}

// X{min,max} as the chain of Repeat (grammar.h): A_d := I A_(d+1) [| ε where d ≥ min], A_max := ε; unbounded, the
// last rule A_min loops. Every A_d's item alternative is [I, A_(d+1), end], so its counter is the position after I's.

uint32_t Grammar::counted_chain(const Expr& repeat, const std::string& owner) {
  const Expr& item = repeat.node().items[0];
  const int32_t min = repeat.node().min, max = repeat.node().max;
  const uint32_t item_rule = item.node().kind == Expr::Kind::kRule ? item.node().rule : helper_rule(item, owner);
  const bool loop = max == Expr::kUnbounded;
  const int32_t states = loop ? min + 1 : max;  // rules with an item alternative: d = 0 .. states-1
  std::vector<uint32_t> a(static_cast<size_t>(states) + (loop ? 0 : 1));
  for (uint32_t& r : a) r = declare(fmt::format("{}_{}", owner, rules_.size()));
  Repeat rep{item_rule, min, max, {}};
  for (int32_t d = 0; d < states; ++d) {
    const uint32_t next = loop && d == states - 1 ? a[static_cast<size_t>(d)] : a[static_cast<size_t>(d) + 1];
    const Expr more = Expr::seq({Expr::rule(item_rule), Expr::rule(next)});
    define(a[static_cast<size_t>(d)], d >= min ? Expr::choice({more, Expr::empty()}) : more);
    rep.counters.push_back(rules_[a[static_cast<size_t>(d)]].alts[0] + 1);
  }
  if (!loop) define(a.back(), Expr::empty());
  repeats_.push_back(std::move(rep));
  return a[0];
}

uint32_t Grammar::emit_alternative(const std::vector<Expr>& items, const std::string& owner) {
  std::vector<Element> local;
  for (const Expr& item : items) flatten(item, local, owner);
  const uint32_t start = static_cast<uint32_t>(elements_.size());
  elements_.insert(elements_.end(), local.begin(), local.end());
  elements_.push_back({Element::Kind::kEnd, 0});
  return start;
}

void Grammar::define(uint32_t rule, const Expr& body) {
  if (rule >= rules_.size()) fail(ErrorKind::kInternal, "grammar: rule {} was never declared", rule);
  if (rules_[rule].defined) fail(ErrorKind::kInternal, "grammar: rule '{}' is defined twice", rules_[rule].name);
  rules_[rule].defined = true;
  const std::string owner = rules_[rule].name;
  std::vector<uint32_t> alts;
  if (body.node().kind == Expr::Kind::kChoice) {
    for (const Expr& option : body.node().items) alts.push_back(emit_alternative({option}, owner));
  } else {
    alts.push_back(emit_alternative({body}, owner));
  }
  rules_[rule].alts = std::move(alts);
}

void Grammar::check_complete() const {
  for (const Rule& r : rules_)
    if (!r.defined) fail(ErrorKind::kInternal, "grammar: rule '{}' is declared but never defined", r.name);
}

namespace {

std::string set_text(const ByteSet& s) {
  std::string out = "[";
  auto put = [&](unsigned b) {
    if (b >= 0x21 && b < 0x7f && b != ']' && b != '\\' && b != '-') out += static_cast<char>(b);
    else out += fmt::format("\\x{:02x}", b);
  };
  for (unsigned b = 0; b < 256;) {
    if (!s.has(static_cast<uint8_t>(b))) { ++b; continue; }
    unsigned e = b;
    while (e + 1 < 256 && s.has(static_cast<uint8_t>(e + 1))) ++e;
    put(b);
    if (e > b) out += '-', put(e);
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

std::string Grammar::to_string() const {
  std::string out;
  for (size_t r = 0; r < rules_.size(); ++r) {
    out += fmt::format("{}{} ::=", r == root_ ? "*" : "", rules_[r].name);
    for (size_t a = 0; a < rules_[r].alts.size(); ++a) {
      if (a > 0) out += " |";
      for (uint32_t p = rules_[r].alts[a]; elements_[p].kind != Element::Kind::kEnd; ++p) {
        const Element& el = elements_[p];
        out += ' ';
        out += el.kind == Element::Kind::kRef ? rules_[el.arg].name : set_text(sets_[el.arg]);
      }
      if (elements_[rules_[r].alts[a]].kind == Element::Kind::kEnd) out += " ε";
    }
    out += '\n';
  }
  return out;
}

}  // namespace ninfer::constrain
