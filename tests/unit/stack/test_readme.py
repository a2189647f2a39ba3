"""The README's table of defaults is the chart table: every chart, its repository, version and why, nothing else."""

from __future__ import annotations

import re

from modelplane.charts import CHARTS
from modelplane.repo import ROOT
from modelplane.stack.components import component_of

_TABLE = re.compile(r"<!-- chart-defaults:.*?-->\n(.*?)<!-- /chart-defaults -->", re.DOTALL)


def test_the_readme_lists_every_default_chart_as_the_table_pins_it() -> None:
    found = _TABLE.search((ROOT / "README.md").read_text())
    assert found is not None, "README.md has no chart-defaults table"
    rows = [line for line in found.group(1).splitlines() if line.startswith("| `")]
    listed = {}
    for row in rows:
        component, chart, repository, version, why = (cell.strip().strip("`") for cell in row.strip("|").split("|"))
        listed[chart] = (component, repository, version, why)
    want = {c.name: (str(component_of(c.component)), c.repository, c.version, c.why) for c in CHARTS.values()}
    assert listed == want
    assert all(why for _, _, _, why in want.values())
