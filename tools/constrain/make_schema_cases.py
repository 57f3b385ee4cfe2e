#!/usr/bin/env python3
"""Writes tests/data/constrain/schema_cases.json: JSON Schemas with instances that the `jsonschema` package (an
independent validator, Draft 2020-12) judges valid or invalid, the reference for ninfer's schema grammars
(engine/constrain/json_grammar.h), and schemas that structured output refuses, with the keyword its error must name.

Valid instances are written the way ninfer's grammars write JSON: compact separators (optionally ", " / ": "),
object keys in schema order. Every case is checked here first: a valid instance that jsonschema rejects, or an
invalid one it accepts, stops the script.

Run (rerunnable, deterministic): scripts/tools-env.sh python tools/constrain/make_schema_cases.py
"""
import json
import os

import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "constrain", "schema_cases.json")

S = lambda **kw: kw  # noqa: E731 (keeps key order as written)

PERSON = S(type="object", properties=S(name=S(type="string"), age=S(type="integer")), required=["name", "age"],
           additionalProperties=False)

MATRIX = S(type="array", items=S(type="array", items=S(type="number")))
DEEP = S(type="object", required=["a"], properties=S(
    a=S(type="object", required=["b"], properties=S(
        b=S(type="object", required=["c"], properties=S(c=MATRIX))))))

# (name, schema, valid instances (text), invalid instances (text))
CASES = [
    ("string", S(type="string"), ['"hello"', '""', '"ünï \\"q\\" \\\\ \\u00e9 ☀"'], ['3', 'null', '"unterminated', '"ctl\x01"']),
    ("integer", S(type="integer"), ['0', '-17', '1234567890123456'], ['1.5', '"3"', '01', '-', 'true']),
    ("number", S(type="number"), ['0', '-1.25', '3e10', '6.02E+23', '-0.5e-3'], ['"1"', '.5', '1.', '1e', '+1']),
    ("boolean", S(type="boolean"), ['true', 'false'], ['1', '"true"', 'True']),
    ("null", S(type="null"), ['null'], ['0', '"null"', 'None']),
    ("type_list", S(type=["string", "null"]), ['"x"', 'null'], ['1', 'true']),
    ("type_list_num", S(type=["integer", "boolean"]), ['5', 'false'], ['"5"', '1.5', 'null']),
    ("enum_strings", S(enum=["red", "green", "blue"]), ['"red"', '"blue"'], ['"Red"', '"yellow"', 'red']),
    ("enum_mixed", S(enum=[1, "one", None, True, [1, 2], S(a=1)]), ['1', '"one"', 'null', 'true', '[1,2]', '{"a":1}'],
     ['2', '"two"', 'false', '[2,1]']),
    ("const_string", S(const="fixed"), ['"fixed"'], ['"Fixed"', '"fixed "']),
    ("const_object", S(const=S(k="v", n=2)), ['{"k":"v","n":2}'], ['{"k":"v"}', '{"k":"w","n":2}']),
    ("person", PERSON, ['{"name":"Ada","age":36}', '{"name": "Ada", "age": 36}'],
     ['{"name":"Ada"}', '{"name":"Ada","age":"36"}', '{"name":"Ada","age":36,"x":1}']),
    ("optional_props", S(type="object", properties=S(a=S(type="integer"), b=S(type="string"), c=S(type="boolean")),
                         required=["b"]),
     ['{"b":"x"}', '{"a":1,"b":"x"}', '{"b":"x","c":true}', '{"a":1,"b":"x","c":false}'],
     ['{}', '{"a":1}', '{"a":"1","b":"x"}']),
    ("all_optional", S(type="object", properties=S(x=S(type="number"), y=S(type="number"))),
     ['{}', '{"x":1}', '{"y":2.5}', '{"x":1,"y":2}'], ['{"x":"1"}', '[]', '{"x":1,"y":"a"}']),
    ("empty_object_closed", S(type="object", additionalProperties=False), ['{}'], ['{"a":1}', '[]']),
    ("free_object", S(type="object"), ['{}', '{"a":1}', '{"a":{"b":[1,"x",null]},"c":true}'], ['[]', '"{}"', '1']),
    ("map_of_ints", S(type="object", additionalProperties=S(type="integer")), ['{}', '{"a":1,"b":-2}'],
     ['{"a":"1"}', '{"a":1.5}']),
    ("array_any", S(type="array"), ['[]', '[1,"a",null,{"k":[]}]'], ['{}', '"[]"']),
    ("array_ints", S(type="array", items=S(type="integer")), ['[]', '[1]', '[1,2,3]', '[1, 2]'], ['[1,"2"]', '[1.5]']),
    ("array_min", S(type="array", items=S(type="string"), minItems=2), ['["a","b"]', '["a","b","c"]'],
     ['[]', '["a"]', '["a",1]']),
    ("array_max", S(type="array", items=S(type="boolean"), maxItems=2), ['[]', '[true]', '[true,false]'],
     ['[true,true,true]', '[1]']),
    ("array_min_max", S(type="array", items=S(type="integer"), minItems=1, maxItems=3), ['[1]', '[1,2,3]'],
     ['[]', '[1,2,3,4]']),
    ("array_exact", S(type="array", items=S(type="null"), minItems=2, maxItems=2), ['[null,null]'],
     ['[null]', '[null,null,null]']),
    ("array_zero", S(type="array", maxItems=0), ['[]'], ['[1]']),
    ("string_min", S(type="string", minLength=3), ['"abc"', '"abcdef"', '"äöü"'], ['"ab"', '""', '"äö"']),
    ("string_max", S(type="string", maxLength=2), ['""', '"a"', '"ab"', '"é☀"'], ['"abc"', '"é☀x"']),
    ("string_range", S(type="string", minLength=1, maxLength=3), ['"a"', '"abc"', '"\\n"'], ['""', '"abcd"']),
    ("nested", S(type="object", properties=S(user=PERSON, tags=S(type="array", items=S(type="string"))),
                 required=["user", "tags"]),
     ['{"user":{"name":"A","age":1},"tags":[]}', '{"user":{"name":"A","age":1},"tags":["x","y"]}'],
     ['{"user":{"name":"A"},"tags":[]}', '{"user":{"name":"A","age":1},"tags":[1]}']),
    ("any_of", S(anyOf=[S(type="integer"), S(type="string", maxLength=1)]), ['1', '"a"'], ['"ab"', 'null']),
    ("one_of_disjoint", S(oneOf=[S(type="object", properties=S(kind=S(const="a"), x=S(type="integer")),
                                   required=["kind", "x"], additionalProperties=False),
                                 S(type="object", properties=S(kind=S(const="b"), y=S(type="string")),
                                   required=["kind", "y"], additionalProperties=False)]),
     ['{"kind":"a","x":1}', '{"kind":"b","y":"z"}'], ['{"kind":"a","y":"z"}', '{"kind":"c","x":1}']),
    ("all_of_one", S(allOf=[S(type="integer")]), ['3'], ['"3"']),
    ("nullable_ref", S(type="object", properties=S(next=S(anyOf=[S(**{"$ref": "#/$defs/node"}), S(type="null")])),
                       required=["next"], **{"$defs": S(node=S(type="object", properties=S(v=S(type="integer")),
                                                               required=["v"]))}),
     ['{"next":null}', '{"next":{"v":1}}'], ['{"next":{}}', '{}']),
    ("recursive_tree", S(**{"$defs": S(tree=S(type="object", properties=S(value=S(type="integer"), children=S(
        type="array", items=S(**{"$ref": "#/$defs/tree"}))), required=["value", "children"]))},
        **{"$ref": "#/$defs/tree"}),
     ['{"value":1,"children":[]}', '{"value":1,"children":[{"value":2,"children":[]}]}'],
     ['{"value":1}', '{"value":1,"children":[{"value":2}]}']),
    ("definitions_ref", S(definitions=S(color=S(enum=["r", "g"])), type="array", items=S(**{"$ref": "#/definitions/color"})),
     ['[]', '["r","g","r"]'], ['["b"]', '[1]']),
    ("root_ref", S(type="object", properties=S(child=S(anyOf=[S(**{"$ref": "#"}), S(type="null")])), required=["child"]),
     ['{"child":null}', '{"child":{"child":null}}'], ['{"child":1}', '{}']),
    ("annotations", S(title="T", description="D", type="object", properties=S(
        a=S(type="string", description="the a", default="x", examples=["y"])), required=["a"], **{"$schema": "https://json-schema.org/draft/2020-12/schema"}),
     ['{"a":"q"}'], ['{"a":1}']),
    ("true_schema", True, ['1', '"x"', '{"a":[true]}', 'null'], ['', '{', 'nul']),
    ("implied_object", S(properties=S(a=S(type="integer")), required=["a"]), ['{"a":1}'], ['{"a":"1"}', '{}']),
    ("implied_array", S(items=S(type="integer")), ['[1]', '[]'], ['["1"]']),
    ("implied_string", S(maxLength=1), ['"a"'], ['"ab"']),
    ("bool_items", S(type="array", items=True), ['[1,"a"]'], ['[1,]']),
    ("tool_args", S(type="object", properties=S(city=S(type="string"), unit=S(type="string", enum=["celsius", "fahrenheit"]),
                                                  days=S(type="integer")), required=["city"]),
     ['{"city":"Paris"}', '{"city":"Paris","unit":"celsius","days":3}'], ['{"unit":"celsius"}', '{"city":"Paris","unit":"kelvin"}']),
    ("deep_nesting", DEEP, ['{"a":{"b":{"c":[[1,2],[],[3.5]]}}}'], ['{"a":{"b":{"c":[[1,"2"]]}}}', '{"a":{"b":{}}}']),
    ("unicode_keys", S(type="object", properties={"clé": S(type="string"), "キー": S(type="integer")}, required=["clé", "キー"]),
     ['{"clé":"v","キー":1}'], ['{"cle":"v","キー":1}']),
    ("escaped_key", S(type="object", properties={"a\"b": S(type="boolean")}, required=["a\"b"]), ['{"a\\"b":true}'], ['{"a"b":true}']),
    ("enum_escape", S(enum=["line\nbreak", "tab\t"]), ['"line\\nbreak"', '"tab\\t"'], ['"line\nbreak"']),
    ("array_of_objects", S(type="array", items=PERSON, maxItems=2), ['[]', '[{"name":"a","age":1},{"name":"b","age":2}]'],
     ['[{"name":"a"}]', '[{"name":"a","age":1},{"name":"b","age":2},{"name":"c","age":3}]']),
    ("string_or_array", S(anyOf=[S(type="string"), S(type="array", items=S(type="string"))]), ['"a"', '["a"]'], ['[1]', '1']),
    ("number_or_null_prop", S(type="object", properties=S(score=S(type=["number", "null"])), required=["score"]),
     ['{"score":null}', '{"score":0.5}'], ['{"score":"0.5"}']),
    ("required_order", S(type="object", properties=S(z=S(type="integer"), a=S(type="integer")), required=["a", "z"]),
     ['{"z":1,"a":2}'], ['{"a":2}']),
    ("long_enum", S(enum=[f"v{i}" for i in range(40)]), ['"v0"', '"v39"', '"v17"'], ['"v40"', '"v"']),
]

# Valid instances (for jsonschema) that ninfer's grammars never write, by design: keys out of schema order, whitespace
# other than one space after ':' and ','. The test checks that the grammar rejects them, so the documented form holds.
OUTSIDE = {
    "person": ['{"age":36,"name":"Ada"}', '{ "name":"Ada","age":36}', '{"name":"Ada",\n"age":36}'],
    "array_ints": ['[1 ,2]', '[ 1]'],
    "free_object": ['{"a" :1}'],
}

# Schemas structured output refuses, and the keyword (or phrase) the error must name.
REFUSED = [
    ("pattern", S(type="string", pattern="^a+$"), "pattern"),
    ("format", S(type="string", format="email"), "format"),
    ("minimum", S(type="integer", minimum=0), "minimum"),
    ("multiple_of", S(type="number", multipleOf=2), "multipleOf"),
    ("unique_items", S(type="array", uniqueItems=True), "uniqueItems"),
    ("not", S(**{"not": S(type="string")}), "not"),
    ("if_then", S(**{"if": S(type="string"), "then": S(maxLength=1)}), "if"),
    ("all_of_two", S(allOf=[S(type="object"), S(required=["a"])]), "allOf"),
    ("max_items_big", S(type="array", maxItems=1000), "maxItems"),
    ("max_length_big", S(type="string", maxLength=100000), "maxLength"),
    ("external_ref", S(**{"$ref": "https://example.com/schema.json"}), "$ref"),
    ("required_unknown", S(type="object", properties=S(a=S(type="string")), required=["b"]), "'b'"),
    ("false_schema", False, "false"),
    ("bad_type", S(type="text"), "text"),
    ("pattern_properties", S(type="object", patternProperties={"^x": S(type="string")}), "patternProperties"),
    ("nested_refusal", S(type="object", properties=S(a=S(type="string", pattern="x"))), "/properties/a"),
]


def main():
    out = {"cases": [], "refused": []}
    for name, schema, valid, invalid in CASES:
        v = jsonschema.Draft202012Validator(schema)
        for text in valid:
            inst = json.loads(text)
            if not v.is_valid(inst):
                raise SystemExit(f"{name}: jsonschema rejects the valid instance {text!r}")
        for text in invalid:
            try:
                inst = json.loads(text)
            except json.JSONDecodeError:
                continue  # not JSON at all: invalid for every schema
            if v.is_valid(inst):
                raise SystemExit(f"{name}: jsonschema accepts the invalid instance {text!r}")
        outside = OUTSIDE.get(name, [])
        for text in outside:
            if not v.is_valid(json.loads(text)):
                raise SystemExit(f"{name}: jsonschema rejects the valid (outside) instance {text!r}")
        out["cases"].append({"name": name, "schema": schema, "valid": valid, "invalid": invalid, "outside": outside})
    for name, schema, keyword in REFUSED:
        out["refused"].append({"name": name, "schema": schema, "error_names": keyword})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {len(out['cases'])} schemas, {sum(len(c['valid']) for c in out['cases'])} valid and "
          f"{sum(len(c['invalid']) for c in out['cases'])} invalid instances, {len(out['refused'])} refused schemas")


if __name__ == "__main__":
    main()
