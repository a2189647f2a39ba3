"""A ModelBatchRun resolved: what runs, where its files are, when, and what admission would have refused."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from modelplane.batch import cron
from modelplane.batch.durations import InvalidDurationError, seconds
from modelplane.batch.uris import InvalidLocationError, Location, location
from modelplane.modelcache.use import CacheRef, Policy
from modelplane.problems import Problem
from modelplane_models.model_batch_run import ModelBatchRun, ModelCacheRef, Spec

DEFAULT_CONCURRENCY = 8


class Mode(StrEnum):
    """How a run is served (``spec.mode``)."""

    DEDICATED = "Dedicated"
    SERVICE = "Service"


@dataclass(frozen=True)
class ApiKey:
    """The Secret key (on the workload cluster) a Service-mode client sends as its bearer token."""

    secret: str
    key: str


@dataclass(frozen=True)
class BatchWork:
    """One run, resolved from its spec.

    Attributes:
        name: The ModelBatchRun's name.
        namespace: Its namespace (also its namespace on the workload cluster).
        mode: Dedicated or Service.
        input: The input file.
        output: The output file.
        errors: The error file (None: errors stay in the output file).
        endpoint: The OpenAI endpoint of every line.
        model: The model ("" in mode Service without one: each line's own).
        schedule: The cron schedule ("" for a one-shot run).
        concurrency_policy: The CronJob's concurrencyPolicy.
        history: The CronJob's successful and failed history limits.
        deadline: The Job's activeDeadlineSeconds (None: no deadline).
        retries: The Job's backoffLimit.
        priority: The Kueue WorkloadPriorityClass or PriorityClass ("" for none).
        ttl: The Job's ttlSecondsAfterFinished (None: kept).
        service: Mode Service: the ModelService.
        concurrency: Mode Service: requests in flight.
        api_key: Mode Service: the caller's API key, if any.
        cache: Mode Dedicated: ``spec.modelCacheRef`` with its defaults (None: none).
    """

    name: str
    namespace: str
    mode: Mode
    input: Location
    output: Location
    errors: Location | None
    endpoint: str
    model: str
    schedule: str = ""
    concurrency_policy: str = "Forbid"
    history: int = 3
    deadline: int | None = None
    retries: int = 3
    priority: str = ""
    ttl: int | None = None
    service: str = ""
    concurrency: int = DEFAULT_CONCURRENCY
    api_key: ApiKey | None = None
    cache: CacheRef | None = None

    @property
    def scheduled(self) -> bool:
        """Whether the run repeats (a CronJob) rather than runs once (a Job)."""
        return bool(self.schedule)

    @property
    def locations(self) -> tuple[Location, ...]:
        """The input, the output and the error file when set."""
        return (self.input, self.output, *((self.errors,) if self.errors is not None else ()))


def _mode_problems(spec: Spec) -> list[Problem]:
    """The XRD's rules between fields, for a run that reached the function without admission."""
    mode = Mode(spec.mode or Mode.DEDICATED)
    out = []
    if (mode is Mode.SERVICE) != (spec.modelServiceRef is not None):
        out.append(Problem("spec.modelServiceRef", "required when spec.mode is Service, and only then"))
    if mode is Mode.DEDICATED:
        missing = [f for f in ("nodeSelector", "workers", "model") if getattr(spec, f) is None]
        if missing:
            out.append(Problem(f"spec.{missing[0]}", "required when spec.mode is Dedicated"))
        if spec.concurrency is not None:
            out.append(Problem("spec.concurrency", "is for spec.mode Service only"))
    else:
        extra = [f for f in ("nodeSelector", "workers", "clusterSelector") if getattr(spec, f) is not None]
        if extra:
            out.append(Problem(f"spec.{extra[0]}", "is for spec.mode Dedicated only"))
    workers = spec.workers
    if workers is not None:
        if (workers.count or 1) != 1:
            out.append(Problem("spec.workers.count", "must be 1 (a batch run places one worker)"))
        t = workers.topology
        if (t.pipeline or 1) != 1 or (t.data or 1) != (t.dataLocal or 1):
            out.append(Problem("spec.workers.topology", "must fit on one node (pipeline 1, data equal to dataLocal)"))
    return out


def _locations(spec: Spec) -> tuple[list[Location], list[Problem]]:
    found, out = [], []
    written = [
        ("spec.input.uri", spec.input.uri, spec.input.secretRef),
        ("spec.output.uri", spec.output.uri, spec.output.secretRef),
    ]
    if spec.output.errorsUri is not None:
        written.append(("spec.output.errorsUri", spec.output.errorsUri, spec.output.secretRef))
    for field, uri, ref in written:
        try:
            found.append(location(uri, field, ref.name if ref is not None else ""))
        except InvalidLocationError as err:
            out.append(err.problem)
    uris = [u for _, u, _ in written]
    if len(set(uris)) != len(uris):
        same = "spec.input.uri and spec.output.uri" if uris[0] == uris[1] else "spec.output.errorsUri"
        out.append(Problem(same, "must differ: the run would overwrite a file it reads or writes"))
    for field, uri, ref in written:
        if ref is not None and uri.startswith("pvc://"):
            out.append(Problem(field.rsplit(".", 1)[0] + ".secretRef", "a pvc:// uri takes no secretRef"))
    if len(found) == 3 and found[2].scheme is not found[1].scheme:
        out.append(Problem("spec.output.errorsUri", "must use the same scheme as spec.output.uri"))
    return found, out


def problems(xr: ModelBatchRun) -> list[Problem]:
    """What is wrong with a run's spec, each naming its field (admission refuses most of it first)."""
    spec = xr.spec
    if spec is None:
        return [Problem("spec", "required")]
    out = _mode_problems(spec)
    out += _locations(spec)[1]
    if spec.schedule is not None:
        why = cron.problem(spec.schedule)
        if why:
            out.append(Problem("spec.schedule", f"{spec.schedule!r} is not a cron schedule: {why}"))
    for field, text in (("spec.deadline", spec.deadline), ("spec.ttlAfterFinished", spec.ttlAfterFinished)):
        if text is not None:
            try:
                seconds(text, field)
            except InvalidDurationError as err:
                out.append(err.problem)
    return out


def resolve(xr: ModelBatchRun) -> BatchWork | list[Problem]:
    """The run resolved, or what is wrong with it (``problems``)."""
    found = problems(xr)
    spec = xr.spec
    if found or spec is None:
        return found or [Problem("spec", "required")]
    files, _ = _locations(spec)
    ref = spec.modelServiceRef
    key = ref.apiKeySecretRef if ref is not None else None
    metadata = xr.metadata
    return BatchWork(
        name=(metadata.name if metadata is not None else None) or "",
        namespace=(metadata.namespace if metadata is not None else None) or "",
        mode=Mode(spec.mode or Mode.DEDICATED),
        input=files[0],
        output=files[1],
        errors=files[2] if len(files) > 2 else None,
        endpoint=spec.endpoint or "/v1/chat/completions",
        model=spec.model or "",
        schedule=(spec.schedule or "").strip(),
        concurrency_policy=spec.concurrencyPolicy or "Forbid",
        history=spec.history if spec.history is not None else 3,
        deadline=seconds(spec.deadline, "spec.deadline") if spec.deadline else None,
        retries=spec.retries if spec.retries is not None else 3,
        priority=spec.priority or "",
        ttl=seconds(spec.ttlAfterFinished, "spec.ttlAfterFinished") if spec.ttlAfterFinished else None,
        service=ref.name if ref is not None else "",
        concurrency=spec.concurrency or DEFAULT_CONCURRENCY,
        api_key=ApiKey(key.name, key.key) if key is not None else None,
        cache=_cache(spec.modelCacheRef),
    )


def _cache(ref: ModelCacheRef | None) -> CacheRef | None:
    """``spec.modelCacheRef`` with a replica's defaults: mountPath ``/models/<name>``, policy Required."""
    if ref is None:
        return None
    policy = Policy(ref.policy) if ref.policy in set(Policy) else Policy.REQUIRED
    return CacheRef(ref.name, ref.mountPath or f"/models/{ref.name}", policy)
