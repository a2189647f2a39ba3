"""Benchmarks of Modelplane (``make bench``): they print figures and never fail on them."""
