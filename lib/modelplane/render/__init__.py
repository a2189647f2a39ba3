"""An offline ``crossplane render``: run a Pipeline Composition in-process, print what the CLI prints."""

from modelplane.render.engine import RenderError, RenderInputs, RenderOutput, render, to_yaml

__all__ = ["RenderError", "RenderInputs", "RenderOutput", "render", "to_yaml"]
