"""An offline ``crossplane render``: reconcile an XR in-process, print what the CLI prints."""

from modelplane.render.engine import render
from modelplane.render.model import RenderError, RenderInputs, RenderOutput
from modelplane.render.output import include_full_xr, to_yaml

__all__ = ["RenderError", "RenderInputs", "RenderOutput", "include_full_xr", "render", "to_yaml"]
