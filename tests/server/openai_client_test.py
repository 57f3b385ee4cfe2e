"""The official `openai` Python client against ninfer's HTTP layer (over the fake engine).

Run: python tests/server/openai_client_test.py PATH/TO/ninfer-fake-serve
Checks chat non-stream and stream, the reasoning split, usage, completions, models and error mapping.
"""
import subprocess
import sys
import unittest

import openai

SERVER = None
PORT = None
KEY = "test-key"


def setUpModule():
    global SERVER, PORT
    SERVER = subprocess.Popen([sys.argv[1], "--api-key", KEY, "--served-model-name", "ninfer-test"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = SERVER.stdout.readline()
    assert line.startswith("PORT "), line
    PORT = int(line.split()[1])


def tearDownModule():
    SERVER.stdin.close()
    SERVER.wait(timeout=30)


def client(key=KEY):
    return openai.OpenAI(base_url=f"http://127.0.0.1:{PORT}/v1", api_key=key, max_retries=0, timeout=30)


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
            chat(n=2)
        self.assert_error(e.exception, 400, "unsupported_parameter", "n")
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


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
