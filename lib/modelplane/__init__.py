"""Modelplane: run LLM inference across a fleet of Kubernetes GPU clusters with Crossplane."""
