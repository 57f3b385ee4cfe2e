"""The official `openai` Python client against the real ninfer-serve serving the embedded default model.

Run: python tests/serve/openai_real_server_test.py PATH/TO/ninfer-serve
Checks chat non-stream (reasoning split, usage), streaming with include_usage, completions, models, and the
error mapping of the real engine (context length, unknown model, api key).
"""
import json
import sys
import unittest
import urllib.error
import urllib.request

import openai

import real_server

SERVER = None
PORT = None
KEY = "real-key"


def setUpModule():
    global SERVER, PORT
    SERVER, PORT = real_server.start(sys.argv[1], "--api-key", KEY, "--max-context", "512", "--reasoning-budget", "24", "--threads", "2")


def tearDownModule():
    real_server.stop(SERVER)


def client(key=KEY):
    return openai.OpenAI(base_url=f"http://127.0.0.1:{PORT}/v1", api_key=key, max_retries=0, timeout=60)


MESSAGES = [{"role": "user", "content": "Write a Python function that adds two numbers."}]


class RealServer(unittest.TestCase):
    def test_chat_splits_reasoning_and_reports_usage(self):
        r = client().chat.completions.create(model="ninfer-tiny-nvfp4", messages=MESSAGES, max_tokens=64, temperature=0)
        msg = r.choices[0].message
        extra = msg.model_extra or {}
        self.assertTrue(extra.get("reasoning_content"), r)
        self.assertTrue(msg.content, r)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)
        self.assertGreater(r.usage.completion_tokens_details.reasoning_tokens, 0)
        self.assertIn(r.choices[0].finish_reason, ("stop", "length"))

    def test_stream_equals_non_stream(self):
        args = dict(model="ninfer-tiny-nvfp4", messages=MESSAGES, max_tokens=48, temperature=0)
        whole = client().chat.completions.create(**args)
        reasoning, content, usage = "", "", None
        for chunk in client().chat.completions.create(stream=True, stream_options={"include_usage": True}, **args):
            if chunk.usage:
                usage = chunk.usage
            for ch in chunk.choices:
                d = ch.delta
                reasoning += (d.model_extra or {}).get("reasoning_content") or ""
                content += d.content or ""
        self.assertEqual(reasoning, (whole.choices[0].message.model_extra or {}).get("reasoning_content") or "")
        self.assertEqual(content, whole.choices[0].message.content or "")
        self.assertEqual(usage.completion_tokens, whole.usage.completion_tokens)

    def test_completions_and_models(self):
        r = client().completions.create(model="ninfer-tiny-nvfp4", prompt="def add(a, b):", max_tokens=8, temperature=0)
        self.assertEqual(r.usage.completion_tokens, 8)
        self.assertEqual([m.id for m in client().models.list().data], ["ninfer-tiny-nvfp4"])

    def test_errors_map_to_openai_exceptions(self):
        with self.assertRaises(openai.BadRequestError) as e:
            client().chat.completions.create(model="ninfer-tiny-nvfp4", messages=MESSAGES, max_tokens=100000)
        self.assertEqual(e.exception.code, "context_length_exceeded")
        with self.assertRaises(openai.NotFoundError):
            client().chat.completions.create(model="no-such-model", messages=MESSAGES, max_tokens=4)
        with self.assertRaises(openai.AuthenticationError):
            client("wrong-key").chat.completions.create(model="ninfer-tiny-nvfp4", messages=MESSAGES, max_tokens=4)
        # and the server still serves
        r = client().chat.completions.create(model="ninfer-tiny-nvfp4", messages=MESSAGES, max_tokens=4)
        self.assertEqual(r.usage.completion_tokens, 4)

    def test_tokenize_counts_what_chat_prefills_and_detokenize_inverts_it(self):
        usage = client().chat.completions.create(model="ninfer-tiny-nvfp4", messages=MESSAGES, max_tokens=1).usage
        tok = post("/tokenize", {"model": "ninfer-tiny-nvfp4", "messages": MESSAGES})
        self.assertEqual(tok["count"], usage.prompt_tokens)
        self.assertEqual(len(tok["tokens"]), tok["count"])
        self.assertEqual(tok["max_model_len"], 512)
        text = "def add(a, b):\n    return a + b  # ünïcode ☀"
        ids = post("/tokenize", {"prompt": text})["tokens"]
        self.assertEqual(post("/detokenize", {"tokens": ids})["prompt"], text)
        with self.assertRaises(urllib.error.HTTPError) as e:
            post("/detokenize", {"tokens": [10 ** 9]})
        self.assertEqual(e.exception.code, 400)

    def test_logit_bias_forces_and_bans_tokens(self):
        prompt = "def add(a, b):"
        plain = client().completions.create(model="ninfer-tiny-nvfp4", prompt=prompt, max_tokens=4, temperature=0,
                                            logprobs=1)
        first = post("/tokenize", {"prompt": plain.choices[0].text})["tokens"][0]
        banned = client().completions.create(model="ninfer-tiny-nvfp4", prompt=prompt, max_tokens=4, temperature=0,
                                             logit_bias={str(first): -100})
        self.assertNotEqual(post("/tokenize", {"prompt": banned.choices[0].text})["tokens"][0], first)
        forced_id = post("/tokenize", {"prompt": " banana"})["tokens"][0]
        forced = client().completions.create(model="ninfer-tiny-nvfp4", prompt=prompt, max_tokens=3, temperature=0,
                                             logit_bias={str(forced_id): 100})
        self.assertEqual(forced.choices[0].text, post("/detokenize", {"tokens": [forced_id] * 3})["prompt"])
        with self.assertRaises(openai.BadRequestError) as e:
            client().completions.create(model="ninfer-tiny-nvfp4", prompt=prompt, max_tokens=2, logit_bias={"99999999": 1})
        self.assertEqual(e.exception.body.get("param"), "logit_bias")


def post(path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
