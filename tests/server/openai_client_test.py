"""The official `openai` Python client against ninfer's HTTP layer (over the fake engine).

Run: python tests/server/openai_client_test.py PATH/TO/ninfer-fake-serve
Checks chat non-stream and stream, the reasoning split, usage, completions, models and error mapping, and tool
calling (recorded outputs of tests/server/tool_call_recordings.h, named in the prompt as __tool:NAME__).
"""
import contextlib
import json
import subprocess
import sys
import unittest

import openai

SERVER = None
PORT = None
KEY = "test-key"


def start_server(*extra):
    server = subprocess.Popen([sys.argv[1], "--api-key", KEY, "--served-model-name", "ninfer-test", *extra],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    assert line.startswith("PORT "), line
    return server, int(line.split()[1])


def setUpModule():
    global SERVER, PORT
    SERVER, PORT = start_server()


def tearDownModule():
    SERVER.stdin.close()
    SERVER.wait(timeout=30)
    SERVER.stdout.close()


def client(key=KEY, port=None):
    return openai.OpenAI(base_url=f"http://127.0.0.1:{port or PORT}/v1", api_key=key, max_retries=0, timeout=30)


def chat(**kw):
    args = dict(model="ninfer-test", messages=[{"role": "user", "content": "hello there"}], seed=5)
    args.update(kw)
    return client().chat.completions.create(**args)


class Chat(unittest.TestCase):
    def test_non_stream(self):
        r = chat()
        self.assertEqual(r.object, "chat.completion")
        self.assertTrue(r.id.startswith("chatcmpl-"))
        self.assertEqual(r.model, "ninfer-test")
        m = r.choices[0].message
        self.assertEqual(m.role, "assistant")
        self.assertTrue(m.content)
        extra = m.model_extra
        self.assertTrue(extra["reasoning_content"].startswith("Hmm,"))
        self.assertEqual(extra["reasoning"], extra["reasoning_content"])
        self.assertNotIn("Hmm", m.content)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        u = r.usage
        self.assertEqual(u.total_tokens, u.prompt_tokens + u.completion_tokens)
        self.assertGreater(u.completion_tokens_details.reasoning_tokens, 0)
        self.assertLess(u.completion_tokens_details.reasoning_tokens, u.completion_tokens)
        self.assertEqual(u.prompt_tokens_details.cached_tokens, 0)
        timings = r.model_extra["timings"]
        self.assertEqual(timings["predicted_n"], u.completion_tokens)
        self.assertIn("decode_tok_s", timings)

    def test_stream_matches_non_stream(self):
        whole = chat()
        content, reasoning, finish, usage = "", "", None, None
        for chunk in chat(stream=True, stream_options={"include_usage": True}):
            self.assertEqual(chunk.object, "chat.completion.chunk")
            if chunk.usage is not None:
                usage = chunk.usage
                self.assertEqual(chunk.choices, [])
                continue
            d = chunk.choices[0].delta
            content += d.content or ""
            reasoning += (d.model_extra or {}).get("reasoning_content") or ""
            finish = chunk.choices[0].finish_reason or finish
        self.assertEqual(content, whole.choices[0].message.content)
        self.assertEqual(reasoning, whole.choices[0].message.model_extra["reasoning_content"])
        self.assertEqual(finish, "stop")
        self.assertEqual(usage.completion_tokens, whole.usage.completion_tokens)

    def test_max_tokens_and_thinking_off(self):
        r = chat(max_completion_tokens=2)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertEqual(r.usage.completion_tokens, 2)
        off = chat(extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        self.assertIsNone(off.choices[0].message.model_extra.get("reasoning_content"))
        self.assertEqual(off.usage.completion_tokens_details.reasoning_tokens, 0)

    def test_logprobs(self):
        r = chat(logprobs=True, top_logprobs=2)
        lp = r.choices[0].logprobs.content
        self.assertEqual(len(lp), r.usage.completion_tokens)
        self.assertEqual(len(lp[0].top_logprobs), 2)


class SeveralChoices(unittest.TestCase):
    def test_n_non_stream_and_stream_by_index(self):
        r = chat(n=3, seed=7)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        content = {}
        finish = {}
        for chunk in chat(n=3, seed=7, stream=True):
            for c in chunk.choices:
                content[c.index] = content.get(c.index, "") + (c.delta.content or "")
                if c.finish_reason:
                    finish[c.index] = c.finish_reason
        self.assertEqual([content[i] for i in range(3)], [c.message.content for c in r.choices])
        self.assertEqual([finish[i] for i in range(3)], [c.finish_reason for c in r.choices])


class Other(unittest.TestCase):
    def test_completions(self):
        r = client().completions.create(model="ninfer-test", prompt="once upon a time", max_tokens=5)
        self.assertEqual(r.object, "text_completion")
        self.assertTrue(r.choices[0].text)
        self.assertEqual(r.usage.completion_tokens, 5)
        self.assertEqual(r.choices[0].finish_reason, "length")
        text = "".join(c.choices[0].text for c in client().completions.create(
            model="ninfer-test", prompt="once upon a time", max_tokens=5, stream=True) if c.choices)
        self.assertEqual(text, r.choices[0].text)

    def test_models(self):
        ids = [m.id for m in client().models.list()]
        self.assertEqual(ids, ["ninfer-test"])
        self.assertEqual(client().models.retrieve("ninfer-test").id, "ninfer-test")


class Errors(unittest.TestCase):
    def assert_error(self, exc, status, code, param=None):
        self.assertEqual(exc.status_code, status)
        self.assertEqual(exc.code, code)
        self.assertEqual(exc.param, param)
        self.assertIsInstance(exc.body, dict)
        self.assertTrue(exc.body["message"])

    def test_bad_request(self):
        with self.assertRaises(openai.BadRequestError) as e:
            chat(n=17)
        self.assert_error(e.exception, 400, "invalid_value", "n")
        with self.assertRaises(openai.BadRequestError) as e:
            chat(temperature=9)
        self.assert_error(e.exception, 400, "invalid_value", "temperature")
        with self.assertRaises(openai.BadRequestError) as e:
            chat(max_tokens=100000)
        self.assert_error(e.exception, 400, "context_length_exceeded", "max_tokens")

    def test_auth(self):
        with self.assertRaises(openai.AuthenticationError) as e:
            client("wrong").chat.completions.create(model="ninfer-test", messages=[{"role": "user", "content": "x"}])
        self.assert_error(e.exception, 401, "invalid_api_key")

    def test_not_found(self):
        with self.assertRaises(openai.NotFoundError) as e:
            chat(model="gpt-4o")
        self.assert_error(e.exception, 404, "model_not_found", "model")

    def test_server_error(self):
        with self.assertRaises(openai.InternalServerError) as e:
            chat(messages=[{"role": "user", "content": "__fail__ please"}])
        self.assert_error(e.exception, 500, "internal_error")
        # and the server keeps serving
        self.assertTrue(chat().choices[0].message.content)


TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {"name": "configure", "parameters": {"type": "object", "properties": {
        "options": {"type": "object"}, "tags": {"type": "array", "items": {"type": "string"}},
        "verbose": {"type": "boolean"}, "ratio": {"type": "number"}, "code": {"type": "string"},
        "count": {"type": "integer"}, "limit": {"type": ["integer", "null"]}}}}},
]


def tool_chat(recording, port=None, **kw):
    args = dict(model="ninfer-test", messages=[{"role": "user", "content": f"__tool:{recording}__ please"}],
                tools=TOOLS, seed=5)
    args.update(kw)
    return client(port=port).chat.completions.create(**args)


def accumulate(stream):
    """OpenAI's documented accumulation of streamed tool calls (by index; arguments concatenated)."""
    content, finish, calls = "", None, {}
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        finish = chunk.choices[0].finish_reason or finish
        for tool_call in delta.tool_calls or []:
            index = tool_call.index
            if index not in calls:
                calls[index] = tool_call
            else:
                calls[index].function.arguments += tool_call.function.arguments
    return content, finish, [calls[i] for i in sorted(calls)]


@contextlib.contextmanager
def hermes_server():
    server, port = start_server("--tool-call-parser", "hermes")
    try:
        yield port
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        server.stdout.close()


class ToolCalling(unittest.TestCase):
    def test_non_stream_two_calls(self):
        r = tool_chat("xml_two")
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        self.assertIsNone(choice.message.content)
        calls = choice.message.tool_calls
        self.assertEqual([c.function.name for c in calls], ["get_weather", "get_time"])
        self.assertEqual(json.loads(calls[0].function.arguments), {"city": "Paris"})
        self.assertEqual(calls[1].function.arguments, "{}")
        self.assertTrue(all(c.id.startswith("call_") and c.type == "function" for c in calls))
        self.assertEqual(len({c.id for c in calls}), 2)
        self.assertTrue(choice.message.model_extra["reasoning_content"])  # reasoning before the calls is kept

    def test_schema_typed_arguments(self):
        r = tool_chat("xml_typed")
        args = json.loads(r.choices[0].message.tool_calls[0].function.arguments)
        self.assertEqual(args, {"options": {"a": [1, 2, {"b": None}], "c": "x"}, "tags": ["x", "y"], "verbose": True,
                                "ratio": 2.5, "code": "42", "count": "many", "limit": None, "extra": "7"})

    def test_text_before_the_call(self):
        r = tool_chat("xml_text_before")
        self.assertEqual(r.choices[0].message.content, "Let me check the weather for you.")
        self.assertEqual(r.choices[0].message.tool_calls[0].function.name, "get_weather")

    def test_stream_accumulation_matches_non_stream(self):
        for recording in ["xml_single", "xml_two", "xml_unicode", "xml_text_before", "xml_malformed"]:
            with self.subTest(recording=recording):
                whole = tool_chat(recording).choices[0]
                content, finish, calls = accumulate(tool_chat(recording, stream=True))
                self.assertEqual(finish, whole.finish_reason)
                self.assertEqual(content, whole.message.content or "")
                if whole.message.tool_calls:
                    self.assertNotIn("<tool_call", content)
                expected = whole.message.tool_calls or []
                self.assertEqual([(c.function.name, c.function.arguments) for c in calls],
                                 [(c.function.name, c.function.arguments) for c in expected])
                self.assertTrue(all(c.id.startswith("call_") and c.type == "function" for c in calls))

    def test_stream_helper_final_completion(self):
        # The client's own stream accumulation (chat.completions.stream → get_final_completion()).
        with client().chat.completions.stream(
                model="ninfer-test", messages=[{"role": "user", "content": "__tool:xml_unicode__ please"}],
                tools=TOOLS, seed=5) as stream:
            final = stream.get_final_completion()
        calls = final.choices[0].message.tool_calls
        self.assertEqual(len(calls), 1)
        self.assertEqual(json.loads(calls[0].function.arguments)["city"], '東京 — naïve 🌸 "quoted" \\ back')
        self.assertEqual(final.choices[0].finish_reason, "tool_calls")

    def test_history_round_trip(self):
        first = tool_chat("xml_single").choices[0].message
        messages = [{"role": "user", "content": "weather in Paris?"},
                    first.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "sunny, 21 C"}]
        r = client().chat.completions.create(model="ninfer-test", messages=messages, tools=TOOLS, seed=5)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertTrue(r.choices[0].message.content)

    def test_parallel_tool_calls_false(self):
        r = tool_chat("xml_two", parallel_tool_calls=False)
        self.assertEqual([c.function.name for c in r.choices[0].message.tool_calls], ["get_weather"])

    def test_strict_is_accepted(self):
        strict = [dict(t, function=dict(t["function"], strict=True)) for t in TOOLS]
        r = tool_chat("xml_single", tools=strict)
        self.assertEqual(json.loads(r.choices[0].message.tool_calls[0].function.arguments), {"city": "Paris", "days": 3})

    def test_tool_choice_none_leaves_text(self):
        r = tool_chat("xml_single", tool_choice="none")
        self.assertIsNone(r.choices[0].message.tool_calls)
        self.assertIn("<tool_call>", r.choices[0].message.content)
        self.assertEqual(r.choices[0].finish_reason, "stop")

    def test_hermes(self):
        with hermes_server() as port:
            r = tool_chat("hermes_two_with_text", port=port)
            self.assertEqual(r.choices[0].message.content, "I will call two tools.")
            self.assertEqual([c.function.name for c in r.choices[0].message.tool_calls], ["get_weather", "get_time"])
            content, finish, calls = accumulate(tool_chat("hermes_two_with_text", port=port, stream=True))
            self.assertEqual(content, "I will call two tools.")
            self.assertEqual(finish, "tool_calls")
            self.assertEqual(json.loads(calls[0].function.arguments), {"city": "Zürich"})

    def test_errors(self):
        with self.assertRaises(openai.BadRequestError) as e:
            tool_chat("xml_single", tool_choice={"type": "function", "function": {"name": "nope"}})
        Errors.assert_error(self, e.exception, 400, "invalid_value", "tool_choice.function.name")
        with self.assertRaises(openai.BadRequestError) as e:
            tool_chat("xml_single", tools=[{"type": "function", "function": {"description": "no name"}}])
        Errors.assert_error(self, e.exception, 400, "missing_required_parameter", "tools[0].function.name")

    def test_utf8_content_types(self):
        raw = client().chat.completions.with_raw_response.create(
            model="ninfer-test", messages=[{"role": "user", "content": "héllo"}])
        self.assertEqual(raw.headers["content-type"], "application/json; charset=utf-8")
        with client().chat.completions.with_streaming_response.create(
                model="ninfer-test", messages=[{"role": "user", "content": "héllo"}], stream=True) as r:
            self.assertEqual(r.headers["content-type"], "text/event-stream; charset=utf-8")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
