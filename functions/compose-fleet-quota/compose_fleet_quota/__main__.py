"""Run with ``python -m compose_fleet_quota``."""

from compose_fleet_quota.main import main

main()
