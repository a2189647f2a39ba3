"""compose-serving-stack: the composition function that installs the serving software on a workload cluster through provider-helm Releases."""
