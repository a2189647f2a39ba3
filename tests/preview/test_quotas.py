"""The preview shows each team's quota use, and the deployments a quota holds back say so with figures."""

from __future__ import annotations

import pytest

from modelplane.preview import command
from modelplane.repo import ROOT
from tests.preview.test_explain import check_golden
from tests.preview.test_width import tables

EXAMPLES = ROOT / "examples"
FLEET = [str(EXAMPLES / "platform"), str(EXAMPLES / "quotas")]


def _rows(out: str, title: str) -> list[str]:
    return [row for t, _, rows in tables(out) if t.startswith(title) for row in rows]


def test_golden_quota_use_per_team(capsys: pytest.CaptureFixture[str]) -> None:
    command.main(["--width", "160", "--assume-ready", *FLEET])
    out = capsys.readouterr().out
    quotas = _rows(out, "Quotas")
    team_a = next(r for r in quotas if r.strip().startswith("team-a"))
    team_b = next(r for r in quotas if r.strip().startswith("team-b"))
    # chat (production) holds team-a's 16 H100s; eval (batch) is held back by the quota.
    assert "16/16" in team_a
    assert "production 16" in team_a
    assert "8/8" in team_b
    assert "QuotaExceeded: FleetQuota team-a allows 16 nvidia-h100-8 accelerators, 16 in use, 8 requested" in out
    assert "QuotaExceeded: FleetQuota team-b allows 8 accelerators matching limits[0].deviceSelector" in out
    check_golden("preview-quotas.txt", out.replace(f"{EXAMPLES}/", "examples/"))


def test_no_quota_no_table(capsys: pytest.CaptureFixture[str]) -> None:
    command.main(["--width", "160", "--assume-ready", str(EXAMPLES / "quickstart")])
    assert _rows(capsys.readouterr().out, "Quotas") == []
