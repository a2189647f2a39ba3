"""Make the validation harness (``tests/validation/xrds.py``) importable from the function tests.

The routing tests validate what they compose against the real CRDs with it.
"""

import sys
from pathlib import Path

_VALIDATION = str(Path(__file__).resolve().parents[1] / "validation")
if _VALIDATION not in sys.path:
    sys.path.insert(0, _VALIDATION)
