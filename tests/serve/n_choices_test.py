"""n > 1 with the official `openai` client against the real ninfer-serve and the embedded default model (ninfer-tiny-nvfp4).

Run: python tests/serve/n_choices_test.py PATH/TO/ninfer-serve   (needs openai)
A seeded n=3 request gives 3 choices with indices 0..2, the same answers again, usage summed over the choices;
streamed, the chunks accumulated by choice index give the same 3 answers, each with its own finish_reason, and one
usage chunk; n above --max-n is a 400 naming `n`; the JSONL line shows the other choices reusing choice 0's prefill.
"""
import json
import os
import sys
import tempfile
import unittest

import openai

import real_server

SERVER = None
PORT = None
LOG = os.path.join(tempfile.mkdtemp(prefix="ninfer-n-"), "timings.jsonl")
# Long enough for whole 16-token prefix blocks, so that choices 1.. can start from choice 0's cached prefill.
MESSAGES = [{"role": "user", "content": "Write three short lines about the sea, the wind and the harbour at dawn, "
                                        "one line each, plain words, no rhyme needed please."}]


def setUpModule():
    global SERVER, PORT
    SERVER, PORT = real_server.start(sys.argv[1], "--max-context", "1024", "--threads", "2", "--max-n", "4",
                                     "--log-jsonl", LOG)


def tearDownModule():
    real_server.stop(SERVER)


def client():
    return openai.OpenAI(base_url=f"http://127.0.0.1:{PORT}/v1", api_key="x", max_retries=0, timeout=120)


def ask(**kw):
    return client().chat.completions.create(model="ninfer-tiny-nvfp4", messages=MESSAGES, max_tokens=24, temperature=1.0,
                                            reasoning_effort="none", **kw)


def log_lines():
    with open(LOG, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class NChoices(unittest.TestCase):
    def test_seeded_n3_non_streaming_and_streaming(self):
        r = ask(n=3, seed=1234)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        answers = [c.message.content for c in r.choices]
        for c in r.choices:
            self.assertIn(c.finish_reason, ("stop", "length"))
        again = ask(n=3, seed=1234)
        self.assertEqual([c.message.content for c in again.choices], answers, "a seeded request is reproducible")
        self.assertEqual(again.usage.prompt_tokens, r.usage.prompt_tokens)
        self.assertLessEqual(r.usage.completion_tokens, 3 * 24)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)

        content, finish, usage = {}, {}, []
        for chunk in ask(n=3, seed=1234, stream=True, stream_options={"include_usage": True}):
            if chunk.usage is not None:
                usage.append(chunk.usage)
            for c in chunk.choices:
                content[c.index] = content.get(c.index, "") + (c.delta.content or "")
                if c.finish_reason is not None:
                    self.assertNotIn(c.index, finish, "one finish_reason per choice")
                    finish[c.index] = c.finish_reason
        self.assertEqual(sorted(content), [0, 1, 2])
        self.assertEqual([content[i] for i in range(3)], answers, "stream accumulated by index = non-streamed")
        self.assertEqual([finish[i] for i in range(3)], [c.finish_reason for c in r.choices])
        self.assertEqual(len(usage), 1)
        self.assertEqual(usage[0].completion_tokens, r.usage.completion_tokens)

        # one JSONL line per request; choices 1 and 2 start from choice 0's prefill (prefix reuse is on by default)
        line = [l for l in log_lines() if l["request_id"] == r.id][0]
        self.assertEqual(line["n"], 3)
        self.assertEqual(sum(c["completion_tokens"] for c in line["choices"]), r.usage.completion_tokens)
        prompt = line["prompt_tokens"]
        for c in line["choices"][1:]:
            self.assertEqual(c["cached_tokens"], (prompt - 1) // 16 * 16, line)

    def test_completions_n_and_the_bound(self):
        r = client().completions.create(model="ninfer-tiny-nvfp4", prompt="The harbour at dawn", n=2, max_tokens=8, seed=5,
                                        temperature=1.0)
        self.assertEqual([c.index for c in r.choices], [0, 1])
        with self.assertRaises(openai.BadRequestError) as e:
            ask(n=5)
        self.assertEqual(e.exception.body.get("param"), "n")
        self.assertEqual(e.exception.body.get("code"), "invalid_value")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
