"""A ModelCache's copies on workload clusters: what each is made of, which clusters keep one, how far each got.

- ``work``: the cache as the function resolved it (source, size, storage);
- ``claim``: storage type PVC, a PersistentVolumeClaim and the Job that fills it;
- ``nodelocal``: storage type NodeLocal, a KServe LocalModelNodeGroup and LocalModelCache;
- ``phase``: a copy's phase from what the workload cluster reports;
- ``storage``: whether the size fits the storage class a cluster's claim gets (``spec.storageClasses``);
- ``targets``: which clusters keep a copy, and which copies are kept because a replica uses them.
"""
