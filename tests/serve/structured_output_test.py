"""Structured output and forced tool calls with the official `openai` client against the real ninfer-serve and the
embedded default model (ninfer-tiny-nvfp4), judged by the `jsonschema` package (an independent validator).

Run: python tests/serve/structured_output_test.py PATH/TO/ninfer-serve   (needs openai and jsonschema)
Every schema of tests/data/constrain/schema_cases.json is asked for with sampling (seeds varied, thinking on for some):
each answer must end by itself (finish_reason "stop"), parse, and validate. Also the client's parse() helper with a
Pydantic model, response_format json_object, streaming, tool_choice "required" and named (the call's arguments
validate against the tool's parameters), and the 400s for what cannot be constrained.
"""
import json
import os
import sys
import unittest

import jsonschema
import openai
import pydantic

import real_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = json.load(open(os.path.join(ROOT, "tests", "data", "constrain", "schema_cases.json"), encoding="utf-8"))
SERVER = None
PORT = None


def setUpModule():
    global SERVER, PORT
    SERVER, PORT = real_server.start(sys.argv[1], "--max-context", "1024", "--reasoning-budget", "16", "--threads", "2")


def tearDownModule():
    real_server.stop(SERVER)


def client():
    return openai.OpenAI(base_url=f"http://127.0.0.1:{PORT}/v1", api_key="x", max_retries=0, timeout=120)


def ask(messages, **kw):
    return client().chat.completions.create(model="ninfer-tiny-nvfp4", messages=messages, **kw)


USER = [{"role": "user", "content": "Answer in JSON."}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string"}, "days": {"type": "integer"},
                                               "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                                               "required": ["city"]}}},
         {"type": "function", "function": {"name": "add", "parameters": {
             "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
             "required": ["a", "b"]}}}]


class StructuredOutput(unittest.TestCase):
    def test_every_schema_case_is_answered_with_a_valid_instance(self):
        self.assertGreaterEqual(len(CASES["cases"]), 50)
        for i, case in enumerate(CASES["cases"]):
            with self.subTest(case["name"]):
                r = ask(USER, max_tokens=160, temperature=1.0, seed=100 + i,
                        response_format={"type": "json_schema",
                                         "json_schema": {"name": case["name"], "schema": case["schema"], "strict": True}},
                        extra_body={"chat_template_kwargs": {"enable_thinking": i % 5 == 0}})
                choice = r.choices[0]
                self.assertEqual(choice.finish_reason, "stop", choice.message.content)
                value = json.loads(choice.message.content)
                jsonschema.validate(value, case["schema"])

    def test_parse_helper_with_a_pydantic_model(self):
        class Person(pydantic.BaseModel):
            name: str
            age: int
            tags: list[str]

        for seed in range(3):
            r = client().chat.completions.parse(model="ninfer-tiny-nvfp4", messages=USER, response_format=Person,
                                                max_tokens=200, seed=seed, temperature=1.0)
            person = r.choices[0].message.parsed
            self.assertIsInstance(person, Person, r.choices[0].message.content)

    def test_json_object_and_streaming(self):
        r = ask(USER, max_tokens=120, seed=3, response_format={"type": "json_object"})
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertIsInstance(json.loads(r.choices[0].message.content), dict)
        schema = CASES["cases"][0]["schema"]
        text = ""
        for chunk in ask(USER, max_tokens=120, seed=4, stream=True,
                         response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}):
            for ch in chunk.choices:
                text += ch.delta.content or ""
        jsonschema.validate(json.loads(text), schema)

    def test_forced_tool_calls_validate_against_the_tool(self):
        params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
        choices = ["required", {"type": "function", "function": {"name": "add"}},
                   {"type": "function", "function": {"name": "get_weather"}}]
        for n, tool_choice in enumerate(choices):
            for seed in range(2):
                with self.subTest(tool_choice=tool_choice, seed=seed):
                    r = ask([{"role": "user", "content": "Use a tool."}], tools=TOOLS, tool_choice=tool_choice,
                            max_tokens=300, seed=seed, temperature=1.0)
                    choice = r.choices[0]
                    self.assertEqual(choice.finish_reason, "tool_calls", choice.message)
                    self.assertTrue(choice.message.tool_calls)
                    for call in choice.message.tool_calls:
                        if isinstance(tool_choice, dict):
                            self.assertEqual(call.function.name, tool_choice["function"]["name"])
                        jsonschema.validate(json.loads(call.function.arguments), params[call.function.name])

    def test_what_cannot_be_constrained_is_a_400_naming_it(self):
        with self.assertRaises(openai.BadRequestError) as e:
            ask(USER, response_format={"type": "json_schema",
                                       "json_schema": {"name": "s", "schema": {"type": "string", "pattern": "^a"}}})
        self.assertIn("pattern", str(e.exception))
        self.assertEqual(e.exception.body.get("param"), "response_format.json_schema.schema")
        with self.assertRaises(openai.BadRequestError) as e:
            ask(USER, tools=TOOLS, tool_choice="required", response_format={"type": "json_object"})
        self.assertEqual(e.exception.body.get("param"), "response_format")
        with self.assertRaises(openai.BadRequestError) as e:
            ask(USER, response_format={"type": "yaml"})
        self.assertEqual(e.exception.body.get("param"), "response_format.type")
        r = ask(USER, max_tokens=8)  # and the server keeps serving
        self.assertTrue(r.choices)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
