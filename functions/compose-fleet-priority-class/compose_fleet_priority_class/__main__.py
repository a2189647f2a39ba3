"""Run with ``python -m compose_fleet_priority_class``."""

from compose_fleet_priority_class.main import main

main()
