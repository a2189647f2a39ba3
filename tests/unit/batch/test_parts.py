"""The pieces a batch run is made of: cron schedules, locations, durations and the worker's report, as tables."""

from __future__ import annotations

import pytest

from modelplane.batch import cron
from modelplane.batch.contract import Counts, Report, read_report
from modelplane.batch.durations import InvalidDurationError, seconds
from modelplane.batch.uris import InvalidLocationError, Location, Scheme, location


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        pytest.param("0 2 * * *", "", id="nightly"),
        pytest.param("*/15 9-17 * * MON-FRI", "", id="steps-ranges-and-day-names"),
        pytest.param("30 1 1,15 jan,jul ?", "", id="lists-month-names-and-question-mark"),
        pytest.param("0 0 * * 7", "", id="sunday-as-7"),
        pytest.param("@daily", "", id="macro"),
        pytest.param("61 * * * *", "minute field '61': '61' is not in 0-59", id="minute-61"),
        pytest.param("0 24 * * *", "hour field '24': '24' is not in 0-23", id="hour-24"),
        pytest.param("0 0 0 * *", "day of month field '0': '0' is not in 1-31", id="day-0"),
        pytest.param("0 0 * 13 *", "month field '13': '13' is not in 1-12", id="month-13"),
        pytest.param(
            "? 0 * * *", "minute field '?': ? is allowed only in the day of month and day of week", id="question-minute"
        ),
        pytest.param("0 5-2 * * *", "hour field '5-2': '5-2': the range ends before it starts", id="backwards-range"),
        pytest.param("*/0 * * * *", "minute field '*/0': '*/0': a step must be at least 1", id="zero-step"),
        pytest.param("0 0 * * *,", "day of week field '*,': an empty list item", id="empty-item"),
        pytest.param("0 2 * *", "has 4 fields, a cron schedule has 5", id="four-fields"),
        pytest.param("TZ=UTC 0 2 * * *", "a time zone in the schedule is not allowed", id="time-zone"),
    ],
)
def test_cron(schedule: str, why: str) -> None:
    got = cron.problem(schedule)
    assert got.startswith(why) if why else got == ""


_S = "s"  # a Secret's name


@pytest.mark.parametrize(
    ("uri", "want"),
    [
        pytest.param(
            "https://h.example.com/a/b.jsonl",
            Location("https://h.example.com/a/b.jsonl", Scheme.HTTPS, secret=_S),
            id="https",
        ),
        pytest.param("s3://bucket/key.jsonl", Location("s3://bucket/key.jsonl", Scheme.S3, secret=_S), id="s3"),
        pytest.param(
            "pvc://claim/dir/f.jsonl", Location("pvc://claim/dir/f.jsonl", Scheme.PVC, "claim", "dir/f.jsonl"), id="pvc"
        ),
    ],
)
def test_locations(uri: str, want: Location) -> None:
    assert location(uri, "spec.input.uri", _S) == want


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        pytest.param("ftp://h/x", "spec.input.uri: unknown scheme ftp://", id="ftp"),
        pytest.param("data.jsonl", "spec.input.uri: unknown scheme 'data.jsonl'", id="no-scheme"),
        pytest.param("s3://bucket", "does not name a file: write s3://<bucket>/<key>", id="s3-bucket-only"),
        pytest.param("pvc://claim/../etc/x", "the claim or the path is not one Kubernetes mounts", id="pvc-dot-dot"),
        pytest.param("https://h.example.com/", "does not name a file: write https://<host>/<path>", id="https-no-file"),
    ],
)
def test_bad_locations(uri: str, says: str) -> None:
    with pytest.raises(InvalidLocationError) as err:
        location(uri, "spec.input.uri")
    assert says in str(err.value)
    assert err.value.problem.field == "spec.input.uri"


@pytest.mark.parametrize(
    ("text", "want"),
    [("6h", 21600), ("1h30m", 5400), ("90s", 90), ("2m5s", 125), ("", None), ("0s", None), ("1d", None), ("6 h", None)],
)
def test_durations(text: str, want: int | None) -> None:
    if want is None:
        with pytest.raises(InvalidDurationError, match=r"^spec\.deadline: "):
            seconds(text, "spec.deadline")
    else:
        assert seconds(text, "spec.deadline") == want


@pytest.mark.parametrize(
    ("message", "want"),
    [
        pytest.param('{"total": 3, "completed": 2, "failed": 1}', Report(Counts(3, 2, 1)), id="counts"),
        pytest.param(
            '{"total": 3, "completed": 3, "failed": 0, "results": "s3://b/o", "errors": "s3://b/e", "engine": "x"}',
            Report(Counts(3, 3, 0), "s3://b/o", "s3://b/e"),
            id="files-and-extra-fields",
        ),
        pytest.param('{"total": 3, "completed": 2}', None, id="a-count-missing"),
        pytest.param('{"total": -1, "completed": 0, "failed": 0}', None, id="negative"),
        pytest.param('{"total": true, "completed": 0, "failed": 0}', None, id="a-bool-is-no-count"),
        pytest.param('{"total": 3.5, "completed": 0, "failed": 0}', None, id="not-whole"),
        pytest.param("[1, 2, 3]", None, id="not-an-object"),
        pytest.param("Error: CUDA out of memory", None, id="an-engines-own-words"),
        pytest.param("", None, id="empty"),
    ],
)
def test_the_report(message: str, want: Report | None) -> None:
    assert read_report(message) == want
