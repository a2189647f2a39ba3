"""The program a batch run's pod runs (``batch.py``), run here as the pod would run it, on loopback.

What a user reads afterwards: the files delivered where the spec says, and the result contract in
the termination message (the counts the run's status shows).
"""

from __future__ import annotations

import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from modelplane.batch import pods
from tests.loopback import HOST, free_port
from tests.pki import CA

_SCRIPT = Path(pods.__file__).parent / "scripts" / "batch.py"
_LINES = [
    {"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "one"}},
    {"custom_id": "b", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "two"}},
    {"custom_id": "c", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "fail"}},
]
# An engine that answers every line but those asking to fail, as vllm run-batch writes its output.
_ENGINE = """
import json, os, sys
with open(os.environ["MODELPLANE_BATCH_INPUT_FILE"]) as f, open(os.environ["MODELPLANE_BATCH_OUTPUT_FILE"], "w") as out:
    for i, line in enumerate(l for l in f if l.strip()):
        req = json.loads(line)
        bad = req["body"]["input"] == "fail"
        response = {"status_code": 400 if bad else 200, "request_id": f"r{i}", "body": {"data": [i]}}
        entry = {"id": f"b{i}", "custom_id": req["custom_id"], "response": response, "error": None}
        out.write(json.dumps(entry) + "\\n")
sys.exit(int(sys.argv[1]))
"""


def _jsonl(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _run(tmp: Path, argv: list[str], env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    data, log = tmp / "data", tmp / "termination-log"
    base = {
        "PATH": os.environ.get("PATH", ""),
        "MODELPLANE_BATCH_DATA": str(data),
        "MODELPLANE_BATCH_INPUT_FILE": str(data / "input.jsonl"),
        "MODELPLANE_BATCH_OUTPUT_FILE": str(data / "output.jsonl"),
        "MODELPLANE_BATCH_PVC_ROOT": str(tmp / "pvc"),
        "MODELPLANE_BATCH_ENDPOINT": "/v1/embeddings",
        "MODELPLANE_TERMINATION_LOG": str(log),
    }
    done = subprocess.run([sys.executable, str(_SCRIPT), *argv], env={**base, **env}, timeout=60, check=False)
    return done.returncode, json.loads(log.read_text())


def _worker(code: int = 0) -> list[str]:
    return ["worker", "--", sys.executable, "-c", _ENGINE, str(code)]


def test_a_worker_delivers_into_claims_and_reports_its_counts(tmp_path: Path) -> None:
    _jsonl(tmp_path / "pvc" / "corpus" / "in.jsonl", _LINES)
    env = {
        "MODELPLANE_BATCH_INPUT": "pvc://corpus/in.jsonl",
        "MODELPLANE_BATCH_INPUT_FILE": str(tmp_path / "pvc" / "corpus" / "in.jsonl"),
        "MODELPLANE_BATCH_OUTPUT": "pvc://results/out.jsonl",
        "MODELPLANE_BATCH_ERRORS": "pvc://results/errors.jsonl",
    }
    code, message = _run(tmp_path, _worker(), env)
    assert code == 0
    assert message == {
        "total": 3,
        "completed": 2,
        "failed": 1,
        "results": "pvc://results/out.jsonl",
        "errors": "pvc://results/errors.jsonl",
    }
    results = [json.loads(line) for line in (tmp_path / "pvc" / "results" / "out.jsonl").read_text().splitlines()]
    errors = [json.loads(line) for line in (tmp_path / "pvc" / "results" / "errors.jsonl").read_text().splitlines()]
    assert [r["custom_id"] for r in results] == ["a", "b"]
    assert [e["custom_id"] for e in errors] == ["c"]


def test_a_failed_engine_reports_what_it_did_and_delivers_nothing(tmp_path: Path) -> None:
    _jsonl(tmp_path / "data" / "input.jsonl", _LINES)  # as the stage-in container leaves an s3:// input
    env = {"MODELPLANE_BATCH_INPUT": "s3://corpus/in.jsonl", "MODELPLANE_BATCH_OUTPUT": "s3://corpus/out.jsonl"}
    code, message = _run(tmp_path, _worker(3), env)
    assert code == 3
    assert message == {"total": 3, "completed": 2, "failed": 1}
    # The stage-out container is told to give up, not to upload.
    assert (tmp_path / "data" / "out" / ".failed").exists()
    assert not (tmp_path / "data" / "out" / ".done").exists()


def test_an_s3_output_is_staged_for_the_upload(tmp_path: Path) -> None:
    _jsonl(tmp_path / "data" / "input.jsonl", _LINES)
    env = {"MODELPLANE_BATCH_INPUT": "s3://corpus/in.jsonl", "MODELPLANE_BATCH_OUTPUT": "s3://corpus/out.jsonl"}
    code, message = _run(tmp_path, _worker(), env)
    assert (code, message["results"]) == (0, "s3://corpus/out.jsonl")
    assert (tmp_path / "data" / "out" / ".done").exists()
    assert len((tmp_path / "data" / "out" / "results.jsonl").read_text().splitlines()) == 3


class _Store(http.server.BaseHTTPRequestHandler):
    """GET and PUT files in memory; POST answers like an OpenAI embeddings endpoint (400 for "fail")."""

    files: dict[str, bytes]
    seen: list[tuple[str, str, dict[str, Any]]]

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _answer(self, code: int, body: bytes = b"") -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", "req-1")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        found = self.files.get(self.path)
        self._answer(200 if found is not None else 404, found or b"")

    def do_PUT(self) -> None:
        self.files[self.path] = self._body()
        self.seen.append(("PUT", self.path, {"authorization": self.headers.get("Authorization", "")}))
        self._answer(200)

    def do_POST(self) -> None:
        body = json.loads(self._body())
        headers = {
            "authorization": self.headers.get("Authorization", ""),
            "objective": self.headers.get("x-gateway-inference-objective", ""),
        }
        self.seen.append(("POST", self.path, {**headers, **body}))
        bad = body.get("input") == "fail"
        self._answer(400 if bad else 200, json.dumps({"error": "no"} if bad else {"data": [1]}).encode())

    def log_message(self, *_: Any) -> None:
        return  # quiet: the test reads what was stored, not the server's log


@contextmanager
def _serving(tls: Path | None) -> Iterator[tuple[str, type[_Store]]]:
    handler = type("Store", (_Store,), {"files": {}, "seen": []})
    port = free_port()
    server = http.server.ThreadingHTTPServer((HOST, port), handler)
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(tls / "tls.crt", tls / "tls.key")
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://{HOST}:{port}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CA:
    return CA(tmp_path_factory.mktemp("ca"))


def test_a_client_posts_every_line_and_fetches_and_puts_over_https(tmp_path: Path, ca: CA) -> None:
    tls = ca.issue("store").path
    lines = [*_LINES, {"custom_id": "d", "method": "POST", "url": "/v1/chat/completions", "body": {}}]
    with _serving(tls) as (files_url, files), _serving(None) as (service_url, service):
        files.files["/in.jsonl"] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        env = {
            "SSL_CERT_FILE": str(ca.cert_path),  # the store's CA, as a cluster's trust bundle would carry it
            "MODELPLANE_BATCH_INPUT": f"{files_url}/in.jsonl",
            "MODELPLANE_BATCH_OUTPUT": f"{files_url}/out.jsonl",
            "MODELPLANE_BATCH_OUTPUT_AUTHORIZATION": "Bearer upload",
            "MODELPLANE_BATCH_URL": f"{service_url}/ml/assistant/v1/embeddings",
            "MODELPLANE_BATCH_CONCURRENCY": "2",
            "MODELPLANE_BATCH_MODEL": "bge",
            "MODELPLANE_BATCH_API_KEY": "k",
            "MODELPLANE_BATCH_OBJECTIVE": "modelplane-batch-scoring",
        }
        code, message = _run(tmp_path, ["client"], env)
        assert code == 0
        assert message == {"total": 4, "completed": 2, "failed": 2, "results": f"{files_url}/out.jsonl"}
        out = [json.loads(line) for line in files.files["/out.jsonl"].decode().splitlines()]
        assert [o["custom_id"] for o in out] == ["a", "b", "c", "d"]  # in input order
        assert [(o["response"] or {}).get("status_code") for o in out] == [200, 200, 400, None]
        assert out[3]["error"]["code"] == "invalid_request"  # its url is not the run's endpoint
        posts = [s for s in service.seen if s[0] == "POST"]
        assert {p[2]["model"] for p in posts} == {"bge"}
        assert {p[2]["authorization"] for p in posts} == {"Bearer k"}
        # Every request names the run's InferenceObjective, for the pool's endpoint picker.
        assert {p[2]["objective"] for p in posts} == {"modelplane-batch-scoring"}
        assert [s[2]["authorization"] for s in files.seen if s[0] == "PUT"] == ["Bearer upload"]


def test_the_program_says_how_to_call_it() -> None:
    done = subprocess.run([sys.executable, str(_SCRIPT), "worker"], capture_output=True, timeout=60, check=False)
    assert done.returncode == 2
    assert b"usage: batch.py worker -- <engine command...> | batch.py client" in done.stderr
