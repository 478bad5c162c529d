"""The recordings an ``eval --replay`` reads, checked: a cassette that cannot be read is refused before any
run starts (``check_readable``), and one that only the replay found broken ends the eval as the
``RecordingError`` it is (``refuse_broken_recordings``). Both name each file and the ``portagent record``
line that makes it again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path


def check_readable(tasks: Any, loaded: Any, root: str | Path) -> None:
    """Replay reads every cassette: one that cannot be read (a hand edit, a truncated copy, another
    format) is refused here, before any run starts or anything is written — a ``RecordingError`` naming
    each file (exit 1, docs/cassettes.md). Found by the runs instead, it came back as a run error per run,
    which a CI job retries (exit 3) and a broken file never mends. Each vendor cassette is parsed once: the
    YAML of an HTTP cassette composed (not built into objects: about 1.3 ms each, 0.15 s for the demo's
    112), a Claude transport cassette read as the replay reads it. What only the replay meets comes back
    as ``eval_execute.RecordingFailure`` (``refuse_broken_recordings``)."""
    from pathlib import Path

    from portagent.contracts.errors import RecordingError
    from portagent.recording.layout import vendor_cassette

    broken: list[tuple[Any, str]] = []
    for task in tasks:
        if task.cassette is None:
            continue
        problem = unreadable(vendor_cassette(Path(task.cassette), task.provider), task.provider)
        if problem is not None:
            broken.append((task, problem))
    if broken:
        raise RecordingError(
            f"{len(broken)} cassette{'s' if len(broken) != 1 else ''} cannot be read, nothing was run:\n"
            + _listed([p for _, p in broken])
            + _rerecord([t for t, _ in broken], loaded, root)
        )


def unreadable(path: Path, provider: str) -> str | None:
    """Why the replay could not read the vendor cassette ``path``, on one line naming it (None: it reads).
    Light on purpose: no vendor SDK, no vcrpy (the Claude cassette's module imports the SDK: seconds)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return f"{path}: not a readable cassette ({type(e).__name__}: {e})"
    if provider == "claude":
        return _unreadable_transport(path, text)
    if not text.strip():
        return f"{path}: empty cassette (truncated or emptied by hand)"
    import yaml

    try:
        if "!!python/" in text:  # the few Python tags vcrpy's own loader builds: load it as vcrpy does
            from vcr.serializers.yamlserializer import deserialize

            deserialize(text)
            return None
        root = yaml.compose(text, Loader=yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return f"{path}: not a readable cassette (YAML: {getattr(e, 'problem', None) or e}{where})"
    except Exception as e:  # vcrpy refused a tag
        return f"{path}: not a readable cassette ({type(e).__name__}: {' '.join(str(e).split())})"
    if not _vcr_shape(root):
        return f"{path}: not a vcrpy cassette (no 'interactions' list of request/response pairs)"
    version = _field(root, "version")
    if version is not None and getattr(version, "value", None) != "1":
        return f"{path}: cassette format version {getattr(version, 'value', '?')} (portagent reads version 1)"
    return None


def _unreadable_transport(path: Path, text: str) -> str | None:
    """A Claude transport cassette: JSON lines under a header object. Its finer checks (kind, version,
    each line's direction) are the replay's (``TransportCassette.load``); a failure there comes back as a
    ``RecordingFailure``."""
    import json

    rows = text.splitlines()
    if not rows or not rows[0].strip():
        return f"{path}: empty transport cassette"
    for n, row in enumerate(rows, 1):
        if not row.strip():
            continue
        try:
            data = json.loads(row)
        except ValueError:
            return f"{path}: line {n} is not JSON (a truncated or corrupt transport cassette)"
        if n == 1 and not isinstance(data, dict):
            return f"{path}: line 1 is not a transport cassette header"
    return None


def _field(node: Any, key: str) -> Any:
    """The value node of ``key`` in a composed YAML mapping (None: not a mapping, or no such key)."""
    from yaml import MappingNode

    return next((v for k, v in node.value if k.value == key), None) if isinstance(node, MappingNode) else None


def _vcr_shape(root: Any) -> bool:
    """What vcrpy reads from a cassette: a mapping whose ``interactions`` is a list of mappings, each with a
    ``request`` and a ``response`` mapping."""
    from yaml import MappingNode, SequenceNode

    field = _field
    interactions = field(root, "interactions")
    if not isinstance(interactions, SequenceNode):
        return False
    return all(
        isinstance(field(i, "request"), MappingNode) and isinstance(field(i, "response"), MappingNode)
        for i in interactions.value
    )


def refuse_broken_recordings(outcomes: Any, plan: Any, loaded: Any, root: str | Path, out_dir: Path) -> None:
    """A replay whose recording turned out unreadable (``eval_execute.RecordingFailure``: broken after the
    pre-flight, or a file only the replay reads) ends the eval as the ``RecordingError`` it is (exit 1),
    before anything is scored or reported: reported as a run error it read "nothing measured, retry"
    (exit 3) with scoring notes about a run that never ran. The runs made are kept for ``--resume``."""
    from portagent.contracts.errors import RecordingError
    from portagent.runtime.eval_execute import RecordingFailure

    broken = [o for o in outcomes if isinstance(o, RecordingFailure)]
    if not broken:
        return
    tasks = {t.index: t for t in plan.tasks}
    made = len(outcomes) - len(broken)
    raise RecordingError(
        f"{len(broken)} recording{'s' if len(broken) != 1 else ''} could not be read during the replay, "
        "nothing was scored:\n"
        + _listed([o.recording for o in broken])
        + _rerecord([tasks[o.index] for o in broken], loaded, root)
        + (f"\nthe {made} other run(s) are kept in {out_dir}: add --resume to keep them" if made else "")
    )


def _listed(lines: list[str]) -> str:
    shown = "\n".join(f"  {line}" for line in lines[:5])
    return shown + (f"\n  … and {len(lines) - 5} more" if len(lines) > 5 else "")


def _rerecord(tasks: list[Any], loaded: Any, root: str | Path) -> str:
    """The ``portagent record`` lines that record these runs' folders again (whole: the default mode)."""
    from portagent.recording.layout import record_command

    script = loaded.suite.emulator_script
    emulator = str(loaded.path.parent / script) if script else None
    lines = sorted(
        {
            record_command(
                str(loaded.path), t.provider, case_id=t.case.case_id, out=root, emulator=emulator
            ).removesuffix(" --missing")
            for t in tasks
        }
    )
    return f"\nrecord {'them' if len(tasks) != 1 else 'it'} again with:\n" + "\n".join(
        f"  {c}" for c in lines[:5]
    )
