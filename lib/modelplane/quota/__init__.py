"""FleetQuota use: what the ModelReplicas of the namespaces a quota selects hold against its limits."""

from modelplane.quota.status import quota_status
from modelplane.quota.usage import LimitUse, QuotaUse, Replica, count_use

__all__ = ["LimitUse", "QuotaUse", "Replica", "count_use", "quota_status"]
