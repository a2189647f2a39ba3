"""The program a ModelBatchRun's pod runs: fetch the input, run the batch, deliver the output, report the counts.

Shipped to the workload cluster in the run's ConfigMap and run with the image's own ``python3``
(standard library only, Python 3.9 or newer). Two commands:

- ``batch.py worker -- <engine command...>``: mode Dedicated. Runs the engine (``vllm run-batch -i
  <input file> -o <output file> --model <model> ...``), which reads the input file and writes
  OpenAI's batch output format, one line per request.
- ``batch.py client``: mode Service. Posts each input line's body to the service
  (``MODELPLANE_BATCH_URL``) with ``MODELPLANE_BATCH_CONCURRENCY`` requests in flight, and writes the
  same output format itself, naming ``MODELPLANE_BATCH_OBJECTIVE`` (the run's low-priority
  InferenceObjective) in each request's ``x-gateway-inference-objective`` header when it is set.

Then both count the requests, split out the errors when ``MODELPLANE_BATCH_ERRORS`` is set, deliver
the files, and write the result contract as the container's termination message: one JSON object
``{"total": n, "completed": n, "failed": n, "results": uri, "errors": uri}`` (docs/batch.md). Any
engine that writes that message plugs into ModelBatchRun the same way.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20
_RETRIES = 3  # a request answered 429 or 5xx, or not answered, is tried this many times in all
_TIMEOUT = 600.0  # seconds one request may take
# Markers the stage-out container (s3:// outputs) waits for in the output directory.
DONE, FAILED = ".done", ".failed"
# The Gateway API Inference Extension's header naming the request's InferenceObjective.
OBJECTIVE_HEADER = "x-gateway-inference-objective"


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def _open(url: str, *, method: str = "GET", data: bytes | None = None, authorization: str = "") -> Any:  # noqa: ANN401
    """An HTTPS request; the URI came from the ModelBatchRun's spec, which admission holds to https://."""
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - https:// only, by admission
    if authorization:
        request.add_header("Authorization", authorization)
    return urllib.request.urlopen(request, timeout=_TIMEOUT)  # noqa: S310 - as above


def fetch(uri: str, local: Path) -> None:
    """Download an https:// input to ``local``; s3:// was staged by an init container, pvc:// is mounted."""
    if not uri.startswith("https://"):
        return
    local.parent.mkdir(parents=True, exist_ok=True)
    with _open(uri, authorization=_env("MODELPLANE_BATCH_INPUT_AUTHORIZATION")) as answer, local.open("wb") as out:
        shutil.copyfileobj(answer, out, _CHUNK)


def lines(path: Path) -> Iterator[str]:
    """The non-empty lines of a JSONL file."""
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield line.rstrip("\n")


def succeeded(line: str) -> bool:
    """Whether an output line answers its request: no error, and a 2xx response."""
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    if not isinstance(entry, dict) or entry.get("error"):
        return False
    response = entry.get("response")
    status = response.get("status_code") if isinstance(response, dict) else None
    return isinstance(status, int) and 200 <= status < 300


def split(output: Path, results: Path, errors: Path | None) -> int:
    """Copy ``output`` into ``results`` (and failed lines into ``errors`` when set); return the lines that succeeded."""
    completed = 0
    results.parent.mkdir(parents=True, exist_ok=True)
    with results.open("w", encoding="utf-8") as ok, (errors or Path(os.devnull)).open("w", encoding="utf-8") as bad:
        for line in lines(output) if output.is_file() else ():
            good = succeeded(line)
            completed += good
            (ok if good or errors is None else bad).write(line + "\n")
    return completed


def deliver(local: Path, uri: str, staged: Path) -> None:
    """Put ``local`` where ``uri`` says: PUT for https://, the mounted claim for pvc://, ``staged`` for s3://."""
    if uri.startswith("https://"):
        with local.open("rb") as f:
            body = f.read()
        authorization = _env("MODELPLANE_BATCH_OUTPUT_AUTHORIZATION")
        with _open(uri, method="PUT", data=body, authorization=authorization):
            return
    target = Path(_env("MODELPLANE_BATCH_PVC_ROOT", "/modelplane/pvc")) / uri.removeprefix("pvc://")
    if uri.startswith("s3://"):
        target = staged
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(local, target)


def report(total: int, completed: int, *, delivered: bool) -> None:
    """Write the result contract as the termination message (and to stdout, for the logs)."""
    message: dict[str, Any] = {"total": total, "completed": completed, "failed": max(0, total - completed)}
    if delivered:
        message["results"] = _env("MODELPLANE_BATCH_OUTPUT")
        if _env("MODELPLANE_BATCH_ERRORS"):
            message["errors"] = _env("MODELPLANE_BATCH_ERRORS")
    text = json.dumps(message, sort_keys=True)
    sys.stdout.write(text + "\n")
    try:
        Path(_env("MODELPLANE_TERMINATION_LOG", "/dev/termination-log")).write_text(text)
    except OSError as err:
        sys.stderr.write(f"cannot write the termination message: {err}\n")


def _post(url: str, body: bytes, authorization: str) -> tuple[int, str, Any]:
    """POST one request: (status, request id, answer), retrying 429, 5xx and network errors."""
    status, request_id, answer = 0, "", {"message": "not sent"}
    for attempt in range(_RETRIES):
        request = urllib.request.Request(url, data=body, method="POST")  # noqa: S310 - the service's own URL
        request.add_header("Content-Type", "application/json")
        if authorization:
            request.add_header("Authorization", authorization)
        objective = _env("MODELPLANE_BATCH_OBJECTIVE")
        if objective:
            # The endpoint picker of the pool serving the request ranks it by this InferenceObjective's priority.
            request.add_header(OBJECTIVE_HEADER, objective)
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT) as got:  # noqa: S310 - as above
                return got.status, got.headers.get("x-request-id", ""), json.loads(got.read() or b"null")
        except urllib.error.HTTPError as err:
            status, request_id = err.code, err.headers.get("x-request-id", "") if err.headers else ""
            try:
                answer = json.loads(err.read() or b"null")
            except ValueError:
                answer = {"message": err.reason}
            if status != 429 and status < 500:
                break
        except (urllib.error.URLError, OSError, ValueError) as err:
            status, answer = 0, {"message": str(err)}
        time.sleep(min(30.0, 2.0**attempt))
    return status, request_id, answer


def answer(index: int, line: str, url: str, endpoint: str, model: str, authorization: str) -> str:
    """The output line of input line ``index`` (OpenAI's batch output format)."""
    try:
        request = json.loads(line)
        custom_id = str(request.get("custom_id", ""))
        body = request.get("body")
        if request.get("url") != endpoint or not isinstance(body, dict):
            message = f"line {index + 1}: url must be {endpoint} and body an object"
            return _line(index, custom_id, None, {"code": "invalid_request", "message": message})
    except (ValueError, AttributeError):
        return _line(index, "", None, {"code": "invalid_json", "message": f"line {index + 1} is not a JSON object"})
    if model:
        body["model"] = model
    status, request_id, got = _post(url, json.dumps(body).encode(), authorization)
    if status == 0:
        return _line(index, custom_id, None, {"code": "connection_error", "message": str(got.get("message", ""))})
    return _line(index, custom_id, {"status_code": status, "request_id": request_id, "body": got}, None)


def _line(index: int, custom_id: str, response: Any, error: Any) -> str:  # noqa: ANN401
    entry = {"id": f"batch_req_{index}", "custom_id": custom_id, "response": response, "error": error}
    return json.dumps(entry, sort_keys=True)


def _windows(items: Iterable[str], size: int) -> Iterator[list[str]]:
    window: list[str] = []
    for item in items:
        window.append(item)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window


def post_all(source: Path, output: Path) -> None:
    """Mode Service: post every line of ``source`` to the service, in order, writing each answer to ``output``."""
    concurrency = max(1, int(_env("MODELPLANE_BATCH_CONCURRENCY", "8")))
    url = _env("MODELPLANE_BATCH_URL")
    endpoint, model = _env("MODELPLANE_BATCH_ENDPOINT"), _env("MODELPLANE_BATCH_MODEL")
    key = _env("MODELPLANE_BATCH_API_KEY")
    authorization = f"Bearer {key}" if key else ""
    output.parent.mkdir(parents=True, exist_ok=True)
    index = 0
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool, output.open("w", encoding="utf-8") as out:
        # At most a few windows of lines in memory, whatever the file's size; answers in input order.
        for window in _windows(lines(source), concurrency * 4):
            starts = range(index, index + len(window))
            done = pool.map(lambda i, line: answer(i, line, url, endpoint, model, authorization), starts, window)
            for entry in done:
                out.write(entry + "\n")
            index += len(window)


def main(argv: list[str]) -> int:
    """Run ``worker -- <engine...>`` or ``client``; return the exit code."""
    command = argv[0] if argv else ""
    engine = argv[argv.index("--") + 1 :] if "--" in argv else []
    if command not in ("worker", "client") or (command == "worker" and not engine):
        sys.stderr.write("usage: batch.py worker -- <engine command...> | batch.py client\n")
        return 2
    data = Path(_env("MODELPLANE_BATCH_DATA", "/modelplane/data"))
    source = Path(_env("MODELPLANE_BATCH_INPUT_FILE", str(data / "input.jsonl")))
    output = Path(_env("MODELPLANE_BATCH_OUTPUT_FILE", str(data / "output.jsonl")))
    staged = data / "out"
    code, total, completed, delivered = 1, 0, 0, False
    try:
        fetch(_env("MODELPLANE_BATCH_INPUT"), source)
        total = sum(1 for _ in lines(source))
        output.parent.mkdir(parents=True, exist_ok=True)
        if command == "worker":
            code = subprocess.run(engine, check=False).returncode  # noqa: S603 - the run's own engine command
        else:
            post_all(source, output)
            code = 0
        errors_uri = _env("MODELPLANE_BATCH_ERRORS")
        results, errors = data / "results.jsonl", (data / "errors.jsonl" if errors_uri else None)
        completed = split(output, results, errors)
        if code == 0:
            deliver(results, _env("MODELPLANE_BATCH_OUTPUT"), staged / "results.jsonl")
            if errors is not None:
                deliver(errors, errors_uri, staged / "errors.jsonl")
            delivered = True
    except (OSError, ValueError, urllib.error.URLError) as err:
        sys.stderr.write(f"batch {command} failed: {err}\n")
        code = code or 1
    finally:
        report(total, completed, delivered=delivered)
        staged.mkdir(parents=True, exist_ok=True)
        (staged / (DONE if delivered else FAILED)).touch()
    return code if code else (0 if delivered else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
