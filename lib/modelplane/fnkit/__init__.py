"""What every Modelplane composition function shares: serving, the ledger, reading inputs, writing status.

This package is the layer between the Crossplane SDK and the pure ``modelplane``
core; the core modules never import it.
"""
