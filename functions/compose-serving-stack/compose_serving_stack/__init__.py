"""compose-serving-stack.

The composition function that installs the serving software on a workload cluster through provider-helm Releases.
"""
