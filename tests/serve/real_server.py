"""Starts the real ninfer-serve for the Python client tests of tests/serve and waits until it is ready."""
import socket
import subprocess
import time
import urllib.request


def start(binary, *flags, timeout_s=60):
    """Runs `binary --port P flags…` on a free port; returns (process, port) once /health answers 200."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([binary, "--port", str(port), *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return proc, port
        except Exception:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("ninfer-serve did not become ready")


def stop(proc):
    proc.terminate()
    proc.wait(timeout=30)
