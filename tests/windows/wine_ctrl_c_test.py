"""ninfer-serve.exe under Wine, driven from the Linux side: Ctrl-C, CJK paths given Windows-style, the JSONL log.

Run: python tests/windows/wine_ctrl_c_test.py PATH/TO/ninfer-serve.exe PATH/TO/ninfer-tiny.ninfer
(scripts/windows-mingw.sh runs it with WINEPREFIX set.) The model is copied to a folder with a CJK name and passed
as `Z:\\...\\模型-中文路径.ninfer` (Wine maps Z: to /); the official openai client sends a request; SIGINT to the
Wine process is Windows' Ctrl-C (Wine turns it into CTRL_C_EVENT for the console handler), after which the server
must exit 0 with the request's JSONL line on disk and its log naming the CJK path in UTF-8.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import openai

EXE, MODEL = sys.argv[1], sys.argv[2]


def windows_path(p):
    return "Z:" + os.path.abspath(p).replace("/", "\\")


class WineServe(unittest.TestCase):
    def test_ctrl_c_stops_after_serving_a_cjk_path_model(self):
        tmp = tempfile.mkdtemp(prefix="ninfer-wine-")
        self.addCleanup(shutil.rmtree, tmp, True)
        folder = os.path.join(tmp, "模型目录")
        os.mkdir(folder)
        model = os.path.join(folder, "模型-中文路径.ninfer")
        shutil.copyfile(MODEL, model)
        jsonl = os.path.join(folder, "计时.jsonl")
        log = os.path.join(tmp, "serve.log")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with open(log, "wb") as out:
            proc = subprocess.Popen(["wine", EXE, "--model", windows_path(model), "--port", str(port),
                                     "--log-jsonl", windows_path(jsonl), "--threads", "2", "--max-context", "256"],
                                    stdout=out, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except Exception:
                time.sleep(0.2)
        else:
            self.fail(f"ninfer-serve.exe did not become ready (exit code {proc.poll()}):\n" + open(log, encoding="utf-8", errors="replace").read())
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=120)
        served = [m.id for m in c.models.list().data]
        self.assertEqual(served, ["模型-中文路径"])  # the model is named after its (CJK) file
        r = c.chat.completions.create(model=served[0], messages=[{"role": "user", "content": "你好, write a function"}],
                                      max_tokens=8, temperature=0)
        self.assertEqual(r.usage.completion_tokens, 8)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        self.assertEqual(proc.wait(timeout=60), 0)
        text = open(log, encoding="utf-8").read()  # strict UTF-8: the log's bytes are UTF-8
        self.assertIn("模型-中文路径", text)
        self.assertIn("stopped", text)
        lines = [json.loads(x) for x in open(jsonl, encoding="utf-8").read().splitlines()]
        self.assertEqual(len(lines), 1, lines)
        self.assertEqual(lines[0]["completion_tokens"], 8, lines[0])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
