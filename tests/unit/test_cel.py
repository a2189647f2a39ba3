"""The public API of modelplane.cel: devices, compilation, errors, caching and the cost bound."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from modelplane.cel import CELCompileError, CELError, CELEvaluationError, Device, SemVer, compile_selector

H100 = Device(
    "gpu.nvidia.com",
    {
        "architecture": "Hopper",
        "productName": "NVIDIA H100 80GB HBM3",
        "count": 8,
        "mig": False,
        "cudaComputeCapability": SemVer("9.0.0"),
        "example.com/zone": "a",
    },
    {"memory": "80Gi", "example.com/bandwidth": 400_000_000_000},
)
L4 = Device("gpu.nvidia.com", {"architecture": "Ada Lovelace"}, {"memory": "24Gi"})
GPU = 'device.attributes["gpu.nvidia.com"]'
MEMORY = 'device.capacity["gpu.nvidia.com"].memory'


@dataclass(frozen=True)
class Match:
    expression: str
    device: Device
    want: bool


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Match(f'{GPU}.architecture == "Hopper"', H100, want=True), id="string-attribute"),
        pytest.param(Match(f'{GPU}.architecture == "Hopper"', L4, want=False), id="string-attribute-other-device"),
        pytest.param(Match(f"{GPU}.count >= 8 && !{GPU}.mig", H100, want=True), id="int-and-bool-attributes"),
        pytest.param(
            Match(f'{GPU}.cudaComputeCapability.isGreaterThan(semver("8.9.0"))', H100, want=True),
            id="version-attribute",
        ),
        pytest.param(Match(f'{GPU}.cudaComputeCapability == semver("9.0.0")', H100, want=True), id="version-equality"),
        pytest.param(Match('device.attributes["example.com"].zone == "a"', H100, want=True), id="qualified-attribute"),
        pytest.param(Match(f'{MEMORY}.compareTo(quantity("80Gi")) >= 0', H100, want=True), id="quantity-capacity"),
        pytest.param(Match(f'{MEMORY}.compareTo(quantity("80Gi")) >= 0', L4, want=False), id="quantity-too-small"),
        pytest.param(
            Match('device.capacity["example.com"].bandwidth == quantity("400G")', H100, want=True),
            id="integer-capacity",
        ),
        pytest.param(Match('device.attributes["amd.com"].size() == 0', H100, want=True), id="unknown-domain-is-empty"),
    ],
)
def test_matches(case: Match) -> None:
    assert compile_selector(case.expression).matches(case.device) is case.want


@pytest.mark.parametrize(
    ("expression", "offset", "detail"),
    [
        pytest.param(
            'device.driver == "x" &&', 23, "syntax error: expected an expression, found end of input", id="eof"
        ),
        pytest.param('device.driver == "x', 17, "syntax error: unterminated string literal", id="unterminated"),
        pytest.param("device.driver # 1", 14, "syntax error: token recognition error: '#'", id="bad-token"),
        pytest.param(
            "device.driver == 1",
            14,
            "type error: found no matching overload for '_==_' applied to '(string, int)'",
            id="overload-at-operator",
        ),
        pytest.param("device.nope", 6, "type error: undefined field 'nope'", id="field-at-dot"),
        pytest.param(
            'device.driver == "x" &&\n gpu',
            25,
            "type error: undeclared reference to 'gpu' (in container '')",
            id="second-line",
        ),
        pytest.param("device.driver", None, "must evaluate to bool or the unknown type, not string", id="no-place"),
    ],
)
def test_compile_errors_say_where(expression: str, offset: int | None, detail: str) -> None:
    # Twice: the second answer comes from the cache and must say the same.
    for _ in range(2):
        with pytest.raises(CELCompileError) as caught:
            compile_selector(expression)
        assert (caught.value.offset, caught.value.detail) == (offset, detail)


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        pytest.param('device.driver == "x" &&', "syntax error", id="syntax"),
        pytest.param(
            "device.driver == 1", "found no matching overload for '_==_' applied to '(string, int)'", id="type-mismatch"
        ),
        pytest.param("gpu.count > 1", "undeclared reference to 'gpu'", id="undeclared"),
        pytest.param(f"{GPU}.count", "", id="any-typed-result-compiles"),
        pytest.param("device.driver", "must evaluate to bool or the unknown type, not string", id="string-result"),
        pytest.param('"' + "x" * 10241 + '" == ""', "expression longer than 10240 bytes", id="too-long"),
        pytest.param(
            "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, "
            "device.attributes[e].all(j, j != k))))",
            "too complex, exceeds cost limit",
            id="too-costly",
        ),
        pytest.param('int("x") == 1', "type conversion error", id="constant-folded-conversion"),
        pytest.param('"x".matches("(")', "invalid matches argument", id="bad-regex-literal"),
        pytest.param("(" * 300 + "true" + ")" * 300, "recursion limit exceeded", id="too-deep"),
        pytest.param(
            'timestamp("2024-01-01T00:00:00Z") < timestamp("2025-01-01T00:00:00Z")',
            "not supported by modelplane",
            id="unsupported-library",
        ),
    ],
)
def test_compile_errors_name_the_expression_and_the_reason(expression: str, reason: str) -> None:
    if not reason:
        compile_selector(expression)
        return
    with pytest.raises(CELCompileError) as caught:
        compile_selector(expression)
    assert reason in caught.value.reason
    assert caught.value.expression == expression
    assert str(caught.value).startswith("CEL ")
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "device", "reason"),
    [
        pytest.param(f"{GPU}.nvlink", H100, "no such key: nvlink", id="missing-attribute"),
        pytest.param(
            'device.attributes["amd.com"].architecture == "x"', H100, "no such key: architecture", id="unknown-domain"
        ),
        pytest.param(f"{GPU}.architecture > 1", H100, "no such overload", id="runtime-type-mismatch"),
        pytest.param(
            f"{GPU}.architecture",
            H100,
            "CEL result of type string could not be converted to bool",
            id="non-bool-result",
        ),
        pytest.param(f"{GPU}.count / 0 == 1", H100, "division by zero", id="division-by-zero"),
        pytest.param(f'{GPU}.cudaComputeCapability == "9.0.0"', H100, "no such overload", id="version-vs-string"),
        pytest.param(
            "true",
            Device("d", {"v": SemVer("9.0")}),
            "attribute v: parse semantic version",
            id="invalid-version-attribute",
        ),
        pytest.param("true", Device("d", {}, {"memory": "80GB"}), "capacity memory:", id="invalid-capacity"),
    ],
)
def test_evaluation_errors_name_the_expression_and_the_reason(expression: str, device: Device, reason: str) -> None:
    selector = compile_selector(expression)
    with pytest.raises(CELEvaluationError) as caught:
        selector.matches(device)
    assert reason in caught.value.reason
    assert caught.value.expression == expression
    assert isinstance(caught.value, CELError)


def test_runtime_cost_limit_stops_an_evaluation_the_estimate_did_not_foresee() -> None:
    # Kubernetes bounds attribute strings at 64 characters, so the estimate is small; a device
    # carrying a 10,000-character string makes `contains` cost 1000 x 1000 at runtime. The Go
    # oracle answers the same: "operation cancelled: actual cost limit exceeded".
    selector = compile_selector('device.attributes["x.com"].s.contains(device.attributes["x.com"].s)')
    assert selector.max_cost == 57
    assert selector.matches(Device("d", {"x.com/s": "a" * 64})) is True
    with pytest.raises(CELEvaluationError, match="actual cost limit exceeded"):
        selector.matches(Device("d", {"x.com/s": "a" * 10_000}))


@pytest.mark.parametrize(
    ("expression", "max_cost"),
    [
        pytest.param('device.driver == "gpu.nvidia.com"', 4, id="driver"),
        pytest.param(
            f'{GPU}.architecture == "Hopper" && {MEMORY}.compareTo(quantity("80Gi")) >= 0', 12, id="example-hopper"
        ),
        pytest.param(f'{GPU}.exists(k, k == "count")', 196, id="comprehension"),
        pytest.param("sets.contains([1], [1])", 22, id="sets"),
    ],
)
def test_cost_estimate_is_kubernetes_figure(expression: str, max_cost: int) -> None:
    assert compile_selector(expression).max_cost == max_cost


def test_evaluation_reports_its_cost() -> None:
    matched, spent = compile_selector('device.driver == "gpu.nvidia.com"').evaluate(H100)
    assert (matched, spent) == (True, 4)


def test_compiled_once_per_expression() -> None:
    expression = f'{GPU}.architecture == "Hopper" || {GPU}.architecture == "Blackwell"'
    assert compile_selector(expression) is compile_selector(expression)


def test_compile_error_is_cached_and_raised_afresh() -> None:
    expression = "device.driver =="
    with pytest.raises(CELCompileError) as first:
        compile_selector(expression)
    with pytest.raises(CELCompileError) as second:
        compile_selector(expression)
    assert first.value is not second.value
    assert first.value.reason == second.value.reason


def test_compile_from_threads_gives_one_working_selector() -> None:
    expression = f'{GPU}.count in [2, 4, 8] && device.driver.startsWith("gpu.")'
    results: list[bool] = []
    lock = threading.Lock()

    def work() -> None:
        outcome = compile_selector(expression).matches(H100)
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 8


def test_linear_time_regex_on_a_catastrophic_pattern() -> None:
    # A backtracking engine takes exponential time on this; RE2 (as in Go) is linear.
    selector = compile_selector(f'{GPU}.productName.matches("^(a+)+$")')
    assert selector.matches(Device("gpu.nvidia.com", {"productName": "a" * 60 + "!"})) is False


def test_device_value_is_built_once() -> None:
    device = Device("gpu.nvidia.com", {"architecture": "Hopper"})
    assert device.cel_value is device.cel_value
    assert set(device.cel_value) == {"driver", "attributes", "capacity"}
