// Tests the Jinja chat-template interpreter piece by piece: syntax, filters, tests, methods, whitespace control,
// undefined values, error lines, resource limits and the plain/special origin of rendered text.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/tokenizer/jinja/template.h"

namespace ninfer::jinja {
namespace {

using ojson = nlohmann::ordered_json;

std::string render(const std::string& src, const ojson& ctx = ojson::object(), const Limits& limits = {}) {
  return Template(src).render(ctx, limits, 0).str();
}

// The error message of rendering (or parsing) `src`; empty when it renders.
std::string error_of(const std::string& src, const ojson& ctx = ojson::object(), const Limits& limits = {}) {
  try {
    render(src, ctx, limits);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  return {};
}

struct Case {
  const char* tpl;
  const char* ctx;
  const char* want;
};

// Expected outputs produced by jinja2 3.1.6 in transformers' chat-template environment (trim_blocks,
// lstrip_blocks, loopcontrols, transformers' tojson / namespace / raise_exception).
const Case kCases[] = {
    {R"J({{ d.bar }}|{{ d.get("x", 3) }})J",
     R"J({"d": {"items": 1}})J",
     R"J(|3)J"},
    {R"J({{ [1,"a",none,true,1.5] }}{{ {"a":1} }})J",
     R"J({})J",
     R"J([1, 'a', None, True, 1.5]{'a': 1})J"},
    {R"J({{ (1,) }}{{ 7/2 }}{{ 7//2 }}{{ -7//2 }}{{ 7%3 }}{{ -7%3 }}{{ 2**10 }}{{ 1e20 }}{{ 3.0 }})J",
     R"J({})J",
     R"J((1,)3.53-41210241e+203.0)J"},
    {R"J({{ x is iterable }}{{ x is sequence }}{{ x|length }}{{ x|string }}|{{ x ~ "a" }})J",
     R"J({})J",
     R"J(TrueTrue0|a)J"},
    {R"J({% macro m(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1) }}{{ m(1,3) }}{{ m(1,2,3,k=4) }})J",
     R"J({})J",
     R"J(12(){}13(){}12(3,){'k': 4})J"},
    {R"J({{ [3,1,"B","a"][2:]|sort }}{{ "héllo"[1:3] }}{{ "héllo"|length }}{{ "a b  c".split() }}{{ "a,b".split(",") }})J",
     R"J({})J",
     R"J(['a', 'B']él5['a', 'b', 'c']['a', 'b'])J"},
    {R"J({% for i in [1,2,3] %}{% if i==1 %}{% set x = 5 %}{% endif %}{{ x }},{% endfor %})J",
     R"J({})J",
     R"J(5,,,)J"},
    {R"J({% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = x + 1 %}{{ x }},{% endfor %}{{ x }})J",
     R"J({})J",
     R"J(12,12,1)J"},
    {R"J(  {% if true %}
    yes
  {% endif %}
  {{ 1 }}
  {# c #}
end
)J",
     R"J({})J",
     R"J(    yes
  1
end)J"},
    {R"J(a  {%- if true -%}  b  {%- endif %}

c {{- " d " -}} e)J",
     R"J({})J",
     R"J(ab
c d e)J"},
    {R"J({%+ if true %}x{% endif %}
  {%+ if true %}y{% endif %})J",
     R"J({})J",
     R"J(x  y)J"},
    {R"J({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in d|items %}{{ loop.first }}{{ loop.last }}{{ loop.revindex }}{% endfor %})J",
     R"J({"d": {"a": 1, "b": [1, 2]}})J",
     R"J(a=1;b=[1, 2];TrueFalse2FalseTrue1)J"},
    {R"J({% for x in xs if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% else %}none{% endfor %})J",
     R"J({"xs": [1, 2, 3]})J",
     R"J(1/2:2 2/2:3 )J"},
    {R"J({% for x in xs %}{{ x }}{% else %}empty{% endfor %})J",
     R"J({"xs": []})J",
     R"J(empty)J"},
    {R"J({% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %})J",
     R"J({"xs": [1, 2, 3, 4, 5]})J",
     R"J(13)J"},
    {R"J({% set ns = namespace(a=1, b="x") %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}{{ ns.b }})J",
     R"J({})J",
     R"J(4x)J"},
    {R"J({{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ l|tojson(indent=4) }}|{{ "é\n\"x"|tojson }}|{{ [] |tojson(indent=2)}}{{ {}|tojson }})J",
     R"J({"d": {"b": 1, "a": [1, 2.5, null, true], "c": {}}, "l": [{"x": 1e-07}, [], "s"]})J",
     R"J({"b": 1, "a": [1, 2.5, null, true], "c": {}}|{
  "b": 1,
  "a": [
    1,
    2.5,
    null,
    true
  ],
  "c": {}
}|[
    {
        "x": 1e-07
    },
    [],
    "s"
]|"é\n\"x"|[]{})J"},
    {R"J({{ d|tojson(sort_keys=true) }})J",
     R"J({"d": {"b": 1, "a": 2}})J",
     R"J({"a": 2, "b": 1})J"},
    {R"J({{ "  x  "|trim }}|{{ "xxhixx"|trim("x") }}|{{ "Hello World"|upper }}{{ "ABC"|lower }}|{{ "hello world-foo"|title }}|{{ "hELLO"|capitalize }})J",
     R"J({})J",
     R"J(x|hi|HELLO WORLDabc|Hello World-Foo|Hello)J"},
    {R"J({{ [1,2,3]|first }}{{ [1,2,3]|last }}{{ [1,2]|join(", ") }}{{ xs|map(attribute="a")|join }}{{ xs|selectattr("a", "equalto", 2)|list }}{{ xs|rejectattr("a")|list }})J",
     R"J({"xs": [{"a": 1}, {"a": 2}, {"a": 0}]})J",
     R"J(131, 2120[{'a': 2}][{'a': 0}])J"},
    {R"J({{ [1,0,2]|select|list }}{{ [1,0,2]|reject|list }}{{ [1,2,3,4]|select("odd")|list }}{{ ["a","B","a"]|unique|list }}{{ [-3]|first|abs }}{{ 2.567|round(2) }}{{ 2.5|round }}{{ 3.5|round }})J",
     R"J({})J",
     R"J([1, 2][0][1, 3]['a', 'B']32.572.04.0)J"},
    {R"J({{ "a" if x else "b" }}{{ "c" if y }}|{{ x and "t" or "f" }}{{ not x }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 5 }}{{ "a" in "cat" }}{{ "z" not in ["a"] }}{{ "k" in d }})J",
     R"J({"x": true, "y": false, "d": {"k": 1}})J",
     R"J(a|tFalseTrueFalseTrueTrueTrue)J"},
    {R"J({{ "a\tb\x41\u00e9" }}{{ 'it\'s' }}{{ "x" "y" }}{{ -3|abs }}{{ 10 - 2 * 3 }}{{ "ab" * 3 }}{{ [1] + [2] }}{{ "a" + "b" }})J",
     R"J({})J",
     R"J(a	bAéit'sxy34ababab[1, 2]ab)J"},
    {R"J({{ s.startswith("he") }}{{ s.endswith(("x","lo")) }}{{ s.split("l") }}{{ s.rsplit("l", 1) }}{{ s.strip("ho") }}{{ s.lstrip("h") }}{{ s.rstrip("o") }}{{ s.replace("l","L") }}{{ s.find("l") }}{{ s.count("l") }}{{ s.upper() }}{{ s.title() }})J",
     R"J({"s": "hello"})J",
     R"J(TrueTrue['he', '', 'o']['hel', 'o']ellellohellheLLo22HELLOHello)J"},
    {R"J({{ xs[-1] }}{{ xs[::-1] }}{{ xs[1:] }}{{ xs[:-1] }}{{ xs[::2] }}{{ s[::-1] }}{{ s[-3:] }}{{ xs[10] }})J",
     R"J({"xs": [1, 2, 3, 4], "s": "abcdef"})J",
     R"J(4[4, 3, 2, 1][2, 3, 4][1, 2, 3][1, 3]fedcbadef)J"},
    {R"J({% macro m(x) %}<{{ x }}>{{ caller() }}{% endmacro %}{% call m(1) %}body{% endcall %})J",
     R"J({})J",
     R"J(<1>body)J"},
    {R"J({% set x %}  block {{ 1 }} {% endset %}[{{ x }}]{% set y = "a", "b" %}{{ y }}{% set a, b = [1, 2] %}{{ a }}{{ b }})J",
     R"J({})J",
     R"J([  block 1 ]('a', 'b')12)J"},
    {R"J({{ d.items()|list }}{{ d.keys()|list }}{{ d.values()|list }}{{ d|dictsort }}{{ d|length }})J",
     R"J({"d": {"b": 1, "a": 2}})J",
     R"J([('b', 1), ('a', 2)]['b', 'a'][1, 2][('a', 2), ('b', 1)]2)J"},
    {R"J({{ x is defined }}{{ x is undefined }}{{ n is none }}{{ s is string }}{{ 1 is number }}{{ d is mapping }}{{ [] is iterable }}{{ true is boolean }}{{ 1 is integer }}{{ 1.0 is float }}{{ x is not defined }}{{ 3 is divisibleby 3 }}{{ 2 is even }}{{ s is lower }})J",
     R"J({"n": null, "s": "a", "d": {}})J",
     R"J(FalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrue)J"},
    {R"J({{ 1 == 1.0 }}{{ "1" == 1 }}{{ none == none }}{{ [1,2] == [1,2] }}{{ true == 1 }})J",
     R"J({})J",
     R"J(TrueFalseTrueTrueTrue)J"},
    {R"J({{ m.content }}|{{ m["content"] }}|{{ m.missing is defined }}|{{ m.missing|default("dflt") }}|{{ ""|default("x", true) }})J",
     R"J({"m": {"content": "hi"}})J",
     R"J(hi|hi|False|dflt|x)J"},
    {R"J({{ "x"|int }}{{ "42"|int }}{{ 3.9|int }}{{ "3.5"|float }}{{ 7|string ~ "!" }}{{ none|string }}{{ [1,2]|string }})J",
     R"J({})J",
     R"J(04233.57!None[1, 2])J"},
    {R"J({%- for m in messages %}{{ m.role }}{% if not loop.last %},{% endif %}{% endfor -%}
)J",
     R"J({"messages": [{"role": "a"}, {"role": "b"}]})J",
     R"J(a,b)J"},
    {R"J({{ "%s" % 1 }})J",
     R"J({})J",
     R"J(1)J"},
    {R"J({% if x %}a{% elif y %}b{% else %}c{% endif %}{% if not x and not y %}d{% endif %})J",
     R"J({"x": false, "y": false})J",
     R"J(cd)J"},
    {R"J({{ (1, 2)[0] }}{{ [[1,2],[3]]|map("length")|list }}{{ ["b","a"]|sort(reverse=true) }}{{ xs|sort(attribute="a")|map(attribute="a")|list }})J",
     R"J({"xs": [{"a": 2}, {"a": 1}]})J",
     R"J(1[2, 1]['b', 'a'][1, 2])J"},
    {R"J({{ 1.5 }}{{ 0.1 + 0.2 }}{{ 10 / 4 }}{{ 1e-5 }}{{ 100000000000000000.0 }}{{ -0.0 }}{{ 4 / 2 }})J",
     R"J({})J",
     R"J(1.50.300000000000000042.51e-051e+17-0.02.0)J"},
    {R"J({{ "Ünï"|upper }}{{ "{}-{}".format(1, "a") }}{{ "x\ny\n"|indent(2) }}|{{ "x\n\ny"|indent(2, true) }})J",
     R"J({})J",
     R"J(ÜNÏ1-ax
  y
|  x

  y)J"},
    {R"J({#- comment -#}
  x
{#- c2 #}
y)J",
     R"J({})J",
     R"J(xy)J"},
    {R"J({{ x.y }})J",
     R"J({"x": null})J",
     R"J()J"},
    {R"J({{ none.y }})J",
     R"J({})J",
     R"J()J"},
    {R"J({{ loop }})J",
     R"J({})J",
     R"J()J"},
    {R"J({{ tools is none }}{{ tools is defined }})J",
     R"J({"tools": null})J",
     R"J(TrueTrue)J"},
    {R"J({%- set x = "<|tok|>" %}{{ x ~ m }}{{ (x ~ m)|trim }}{{ x|trim }})J",
     R"J({"m": "<|m|>"})J",
     R"J(<|tok|><|m|><|tok|><|m|><|tok|>)J"},
    {R"J({{ d["a"]["b"] }}{{ d.a.b }}{{ d.get("zz") }})J",
     R"J({"d": {"a": {"b": 1}}})J",
     R"J(11None)J"},
    {R"J({{ [1,2,3]|sum }}{{ [1,5,3]|max }}{{ [4,2]|min }}{{ "abc"|list }}{{ "abc"|reverse }}{{ [1,2]|reverse|list }}{{ "abc" ~ 1 ~ none }})J",
     R"J({})J",
     R"J(652['a', 'b', 'c']cba[2, 1]abc1None)J"},
    {R"J({{ "a.b.c".split(".", 1) }}{{ "  a  b ".split() }}{{ "a b c".split(none, 1) }}{{ "abc".index("c") }})J",
     R"J({})J",
     R"J(['a', 'b.c']['a', 'b']['a', 'b c']2)J"},
    {R"J({% for m in msgs %}{{ m.content.split("</think>")[-1].lstrip("\n") }}|{% endfor %})J",
     R"J({"msgs": [{"content": "<think>x</think>\n\nans"}, {"content": "plain"}]})J",
     R"J(ans|plain|)J"},
    {R"J({{ "x" ~ 1.0 ~ True }}{{ 5 // 2.0 }}{{ 2 ** -1 }}{{ -2 ** 2 }}{{ not 1 == 2 }})J",
     R"J({})J",
     R"J(x1.0True2.00.54True)J"},
};

TEST(JinjaInterpreter, MatchesJinja2) {
  size_t k = 0;
  for (const Case& c : kCases) {
    SCOPED_TRACE("case " + std::to_string(k++) + ": " + c.tpl);
    EXPECT_EQ(render(c.tpl, ojson::parse(c.ctx)), c.want);
  }
}

TEST(JinjaInterpreter, NewlinesAndTrailingNewline) {
  EXPECT_EQ(render("{% if true %}\r\nwin\r\n{% endif %}\r\n"), "win\n");
  EXPECT_EQ(render("a\n"), "a");
  EXPECT_EQ(render("a\n\n"), "a\n");
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
}

TEST(JinjaInterpreter, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("a\n\n{{ raise_exception('bad input') }}"), "chat template line 3: bad input");
  EXPECT_EQ(error_of("line 1\n{% if x %}\nno end"), "chat template line 3: unexpected end of template, expected 'elif'");
  EXPECT_EQ(error_of("x\ny\n{{ 1 + }}"), "chat template line 3: unexpected '}}'");
  EXPECT_EQ(error_of("{{ 'unterminated }}"), "chat template line 1: unexpected end of string literal");
  EXPECT_EQ(error_of("\n{{ x"), "chat template line 2: unexpected end of template, expected '}}'");
  EXPECT_EQ(error_of("{# open comment"), "chat template line 1: Missing end of comment tag");
  EXPECT_EQ(error_of("{% extends 'base' %}"), "chat template line 1: unsupported statement 'extends'");
  EXPECT_EQ(error_of("\n\n{{ m.content.strip() }}", ojson::parse(R"({"m": {}})")),
            "chat template line 3: 'dict object' has no attribute 'content'");
  EXPECT_EQ(error_of("{{ x | bogus }}"), "chat template line 1: No filter named 'bogus'.");
  EXPECT_EQ(error_of("{% for a, b in [[1, 2, 3]] %}{% endfor %}"),
            "chat template line 1: too many values to unpack (expected 2)");
  EXPECT_EQ(error_of("{{ 1 + 'a' }}"), "chat template line 1: unsupported operand type(s) for +: 'int object' and 'str object'");
  EXPECT_EQ(error_of("{{ [1].append(2) }}"), "chat template line 1: access to attribute 'append' of 'list object' is unsafe.");
  EXPECT_EQ(error_of("{% set x = 1 %}{% set x.a = 2 %}"),
            "chat template line 1: can only assign attributes to namespace objects, 'x' is a int object");
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "chat template line 1: integer division or modulo by zero");
  // Python ints are unbounded; ninfer's are 64-bit and refuse to overflow
  EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"), "chat template line 1: integer overflow");
  EXPECT_EQ(error_of("{{ 3 ** 99 }}"), "chat template line 1: integer overflow");
  EXPECT_EQ(error_of("{{ -(-9223372036854775807 - 1) }}"), "chat template line 1: integer overflow");
  EXPECT_EQ(render("{{ 2 ** 62 }} {{ (-1) ** 1000001 }} {{ [1, 2, 3][1:9223372036854775807:4611686018427387904] }}"),
            "4611686018427387904 -1 [2]");
}

TEST(JinjaInterpreter, LimitsStopRunawayTemplates) {
  Limits small;
  small.max_steps = 1000;
  EXPECT_NE(error_of("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", ojson::object(), small)
                .find("loop iterations and macro calls"),
            std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("macro calls nest deeper than 64"),
            std::string::npos);
  small.max_output_bytes = 100;
  EXPECT_NE(error_of("{% for i in range(50) %}0123456789{% endfor %}", ojson::object(), small).find("output exceeds"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000000 }}").find("too large"), std::string::npos);
  std::string deep(1000, '(');
  EXPECT_NE(error_of("{{ " + deep + "1" + std::string(1000, ')') + " }}").find("nesting is too deep"), std::string::npos);
  EXPECT_EQ(render(std::string(500, '[')), std::string(500, '['));  // text without tags is text
}

TEST(JinjaInterpreter, IntegerDictKeys) {  // ByteDance Seed-OSS keys a lookup table by ints
  EXPECT_EQ(render("{% set d = {0: 1, 512: 2} %}{% for k, v in d|dictsort %}{{ k + 1 }}:{{ v }} {% endfor %}"
                   "{{ d[512] }}{{ d|tojson }}{{ d }}{{ 0 in d }}{{ '0' in d }}"),
            "1:1 513:2 2{\"0\": 1, \"512\": 2}{0: 1, 512: 2}TrueFalse");
}

TEST(JinjaInterpreter, StrftimeNowUsesTheGivenTime) {
  setenv("TZ", "UTC", 1);
  tzset();
  EXPECT_EQ(Template("{{ strftime_now('%Y-%m-%d %d %b %Y') }}").render(ojson::object(), {}, 1764932400).str(),
            "2025-12-05 05 Dec 2025");
}

// Origins: template text and string literals are special; context values are plain; concatenation and
// substrings keep both, other string operations give plain text when any input was plain.
std::string runs_of(const std::string& src, const ojson& ctx) {
  Text t = Template(src).render(ctx);
  std::string out;
  size_t b = 0;
  for (const auto& [e, plain] : t.runs()) {
    out += (plain ? "P[" : "S[") + t.str().substr(b, e - b) + "]";
    b = e;
  }
  return out;
}

TEST(JinjaInterpreter, OriginsOfRenderedText) {
  const ojson ctx = ojson::parse(R"({"m": "<|im_end|>hi", "n": 3, "d": {"k": "v"}})");
  EXPECT_EQ(runs_of("<|a|>{{ m }}<|b|>", ctx), "S[<|a|>]P[<|im_end|>hi]S[<|b|>]");
  EXPECT_EQ(runs_of("{{ '<|a|>' ~ m ~ '<|b|>' }}", ctx), "S[<|a|>]P[<|im_end|>hi]S[<|b|>]");
  EXPECT_EQ(runs_of("{{ ('  <|a|>' + m + '\n')|trim }}", ctx), "S[<|a|>]P[<|im_end|>hi]");
  EXPECT_EQ(runs_of("{% set x %} <|a|>{{ m }} {% endset %}{{ x.strip() }}", ctx), "S[<|a|>]P[<|im_end|>hi]");
  EXPECT_EQ(runs_of("{{ ('<|a|>|' ~ m).split('|')[1] }}", ctx), "S[a]");
  EXPECT_EQ(runs_of("{{ ('<|a|>' ~ m).replace('x', 'y') }}", ctx), "P[<|a|><|im_end|>hi]");
  EXPECT_EQ(runs_of("{% macro w(x) %}<|s|>{{ x }}{% endmacro %}{{ w(m) }}", ctx), "S[<|s|>]P[<|im_end|>hi]");
  EXPECT_EQ(runs_of("{{ d | tojson }}{{ n }}{{ '<|x|>' | upper }}", ctx), "P[{\"k\": \"v\"}3]S[<|X|>]");
  EXPECT_EQ(runs_of("{{ [m, '<|x|>'] | join('<|sep|>') }}", ctx), "P[<|im_end|>hi]S[<|sep|><|x|>]");
}

TEST(JinjaInterpreter, UndefinedValues) {
  EXPECT_EQ(render("[{{ missing }}][{{ missing ~ 'a' }}][{{ missing | length }}][{{ missing is defined }}]"),
            "[][a][0][False]");
  EXPECT_EQ(render("{% for x in missing %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{{ d.missing is defined }}{{ d['missing'] | default('dflt') }}", ojson::parse(R"({"d": {}})")),
            "Falsedflt");
  EXPECT_EQ(error_of("{{ missing.attr }}"), "chat template line 1: 'missing' is undefined");
  EXPECT_EQ(error_of("{{ missing + 1 }}"), "chat template line 1: 'missing' is undefined");
  EXPECT_EQ(error_of("{{ missing | tojson }}"), "chat template line 1: Object of type Undefined is not JSON serializable");
}

}  // namespace
}  // namespace ninfer::jinja
