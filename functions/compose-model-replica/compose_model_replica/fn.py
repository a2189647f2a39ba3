"""The ModelReplica function. Its behaviour is not built yet: it answers with a Warning."""

from modelplane.fnkit.pending import NotImplementedRunner


class FunctionRunner(NotImplementedRunner):
    """Answers ModelReplica requests with a not-implemented Warning, changing nothing."""

    def __init__(self) -> None:
        """Create the runner."""
        super().__init__("ModelReplica")
