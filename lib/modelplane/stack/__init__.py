"""A workload cluster's serving stack, component by component: install it, check the cluster's own, or leave it out.

``components`` (what each component is: its charts, what says it is installed, which
replicas need it), ``overrides`` (a Managed chart with the component's overrides and the
registry's mirrors), ``presence`` (whether an Existing component is there) and ``plan``
(``plan_stack``: the whole stack). Import the modules themselves: ``modelplane.routing``
reads ``overrides`` and this package reads ``modelplane.charts``.
"""
