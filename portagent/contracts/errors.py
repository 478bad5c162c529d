"""portagent's error tree.

Every error a user can cause or meet is one of these; the CLI prints ``render()`` and exits with
``exit_code`` (DESIGN §3), never a traceback.

    PortagentError                      exit 2 unless stated
    ├── UsageError                      bad flag, missing file, missing key, missing extra
    │   └── MissingExtraError           an adapter's SDK is not installed
    ├── SpecError                       exit 1: a spec file is invalid (carries every SpecProblem)
    ├── UnsupportedFeatureError         exit 1: a spec needs what a provider cannot do
    ├── PolicyDeniedError               exit 1: a policy decision stopped an action
    ├── ApprovalError                   unknown approval id, card not pending, card still pending
    ├── RecordingError                  exit 1: missing/corrupt cassette, secret found, drift
    └── ProviderError                   exit 3: endpoint unreachable, vendor error, SDK crash
        └── EmulatorError               exit 3: the emulator could not start (port in use, …)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecProblem:
    """One problem in one spec file: where, and what was expected."""

    file: str
    """The file the problem is in (as given by the user)."""
    path: str
    """Dotted field path inside the file (``tools.2.input_schema``); empty for whole-file problems."""
    message: str
    """What is wrong and what was expected."""
    line: int | None = None
    """1-based line, when known (YAML syntax errors)."""
    column: int | None = None
    """1-based column, when known."""
    causes: tuple[SpecProblem, ...] = ()
    """The problems in another spec file this one follows from (a suite's agent spec or emulator script
    that does not load), rendered after the message. ``validate`` leaves out those it lists anyway."""

    def render(self) -> str:
        head = f"{self.where()}: {self.message}"
        if len(self.causes) == 1:
            return f"{head}: {self.causes[0].render()}"
        return head + "".join(f"\n      - {c.render()}" for c in self.causes)

    def where(self) -> str:
        """``file:line:column [path]``, with what is known."""
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.path:
            where += f" [{self.path}]"
        return where


class PortagentError(Exception):
    """Base of every error portagent raises on purpose."""

    exit_code: int = 2

    def render(self) -> str:
        return str(self)


class UsageError(PortagentError):
    """The command or its configuration is wrong (exit 2)."""

    exit_code = 2


class MissingExtraError(UsageError):
    """An optional SDK is not installed."""

    def __init__(self, provider: str, package: str, extra: str) -> None:
        super().__init__(
            f"the {provider!r} provider needs the {package!r} package: pip install 'portagent[{extra}]'"
        )
        self.provider = provider
        self.extra = extra


class SpecError(PortagentError):
    """One or more spec files are invalid (exit 1). Holds every problem found, not just the first."""

    exit_code = 1

    def __init__(self, problems: list[SpecProblem], *, not_shown: int = 0) -> None:
        """``not_shown``: more problems of the same kind found and left out (a file damaged throughout)."""
        self.problems = list(problems)
        self.not_shown = not_shown
        super().__init__("\n".join(p.render() for p in self.problems))

    def render(self) -> str:
        n = len(self.problems) + self.not_shown
        head = f"{n} problem{'s' if n != 1 else ''} found"
        rows = ["  " + p.render() for p in self.problems]
        if self.not_shown:
            rows.append(f"  … and {self.not_shown} more not shown")
        return head + ":\n" + "\n".join(rows)


class UnsupportedFeatureError(PortagentError):
    """A spec needs a feature the chosen provider does not have (exit 1)."""

    exit_code = 1

    def __init__(self, provider: str, feature: str, detail: str = "") -> None:
        msg = f"provider {provider!r} does not support {feature}"
        super().__init__(msg + (f": {detail}" if detail else ""))
        self.provider = provider
        self.feature = feature


class PolicyDeniedError(PortagentError):
    """A permission decision stopped an action (exit 1)."""

    exit_code = 1


class ApprovalError(PortagentError):
    """An approval operation cannot be done (unknown id, not pending, still waiting)."""

    exit_code = 2


class RecordingError(PortagentError):
    """A cassette is missing, corrupt, drifted, or would leak a secret (exit 1)."""

    exit_code = 1


class ProviderError(PortagentError):
    """The provider or its SDK failed at run time (exit 3)."""

    exit_code = 3

    def __init__(
        self, message: str, *, status: int | None = None, body: str | None = None, retryable: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retryable = retryable


class EmulatorError(ProviderError):
    """The emulator could not start or serve (exit 3)."""
