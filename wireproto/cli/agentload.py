"""``--agent SPEC`` (or ``WIREPROTO_AGENT=SPEC``): load the user's agent.

``SPEC`` has one of two forms, told apart by what comes before the last
``:``:

* ``path/to/file.py:ATTR`` (a path: it ends in ``.py`` or contains a path
  separator) loads that file, relative to the current directory unless
  absolute. The file's directory is importable while it loads, so the
  agent's sibling modules are found from any working directory.
* ``package.module:ATTR`` imports the module from ``sys.path`` plus the
  current directory.

``ATTR`` (a dotted path inside the module) names an
:class:`~wireproto.agent.api.Agent` instance, or a zero-argument callable
returning one (an ``Agent`` subclass qualifies). Whatever the module prints
while it loads goes to stderr: stdout belongs to the protocol. A failure
raises :class:`AgentLoadError` saying which form was tried and why it failed.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import sysconfig
import traceback
from pathlib import Path
from types import ModuleType

from wireproto.agent.api import Agent

__all__ = ["ENV_VAR", "AgentLoadError", "agent_spec", "load_agent"]

ENV_VAR = "WIREPROTO_AGENT"
"""The environment variable naming the agent when ``--agent`` is not given."""


class AgentLoadError(Exception):
    """The agent could not be loaded; the message says why in one line."""


def agent_spec(option: str | None) -> tuple[str, str] | None:
    """The spec to load and where it came from (``--agent`` wins over the variable)."""
    if option:
        return option, "--agent"
    value = os.environ.get(ENV_VAR, "").strip()
    return (value, ENV_VAR) if value else None


def _is_path(target: str) -> bool:
    return target.endswith(".py") or os.sep in target or "/" in target


def load_agent(spec: str, origin: str = "--agent") -> Agent:
    """Load the agent ``spec`` names (see the module docstring).

    Args:
        spec: ``path/to/file.py:ATTR`` or ``package.module:ATTR``.
        origin: where the spec came from, for messages (``--agent`` or
            ``WIREPROTO_AGENT``).

    Raises:
        AgentLoadError: a malformed spec, a missing file, an import failure,
            a missing attribute, or something that is not an agent.
    """
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr or "/" in attr or os.sep in attr:
        raise AgentLoadError(
            f"{origin} {spec!r}: expected path/to/file.py:ATTR or package.module:ATTR "
            "(ATTR: the agent, or a callable returning one)")
    with contextlib.redirect_stdout(sys.stderr):
        module = _load_file(target, spec, origin) if _is_path(target) else _import(
            target, spec, origin)
        return _resolve(module, attr, spec, origin)


def _load_file(target: str, spec: str, origin: str) -> ModuleType:
    path = Path(target).expanduser()
    full = path if path.is_absolute() else Path.cwd() / path
    tried = f"{origin} {spec!r}: tried the file {full}"
    if not full.is_file():
        hint = "" if path.is_absolute() else f" (relative to the current directory {Path.cwd()})"
        raise AgentLoadError(f"{tried}: it does not exist{hint}")
    name = full.stem if full.stem.isidentifier() and full.stem not in sys.modules \
        else f"wireproto_agent_{abs(hash(str(full)))}"
    file_spec = importlib.util.spec_from_file_location(name, full)
    if file_spec is None or file_spec.loader is None:
        raise AgentLoadError(f"{tried}: Python cannot load it as a module")
    module = importlib.util.module_from_spec(file_spec)
    folder = str(full.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # its sibling modules, from any working directory
    sys.modules[name] = module
    try:
        file_spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if not isinstance(exc, Exception):
            raise
        raise AgentLoadError(f"{tried}: {_describe(exc, full.parent)}") from exc
    return module


def _import(target: str, spec: str, origin: str) -> ModuleType:
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        hint = ""
        if exc.name is not None and target.split(".")[0] == exc.name.split(".")[0]:
            hint = (f" (searched the current directory {cwd} and sys.path; to load a file "
                    f"from elsewhere give its path, e.g. {origin} "
                    f"path/to/{target.split('.')[-1]}.py:ATTR)")
        raise AgentLoadError(f"{origin} {spec!r}: tried the module {target!r}: "
                             f"{_describe(exc, cwd)}{hint}") from exc
    except Exception as exc:
        raise AgentLoadError(
            f"{origin} {spec!r}: tried the module {target!r}: {_describe(exc, cwd)}") from exc


def _describe(exc: BaseException, folder: Path | str | None = None) -> str:
    """``Type: message (FILE, line N)``: the place of a syntax error, or the
    last line of the agent's own code the exception passed (a file under
    ``folder``: the agent file's directory)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{type(exc).__name__}: {exc.msg} ({exc.filename}, line {exc.lineno})"
    where = ""
    if folder is not None:
        ours = [f for f in traceback.extract_tb(exc.__traceback__)
                if Path(f.filename).is_relative_to(folder)
                and not any(Path(f.filename).is_relative_to(p) for p in _NOT_OURS)]
        where = f" ({ours[-1].filename}, line {ours[-1].lineno})" if ours else ""
    return f"{type(exc).__name__}: {exc}{where}"


_NOT_OURS = (Path(__file__).resolve().parents[1], *{
    Path(sysconfig.get_path(name)) for name in ("stdlib", "platstdlib", "purelib", "platlib")})
"""wireproto's own code, the standard library and the installed packages (a project's
``.venv`` is under its directory): never the place to show."""


def _resolve(module: ModuleType, attr: str, spec: str, origin: str) -> Agent:
    agent = _find(module, attr, spec, origin)
    prompt = getattr(type(agent).prompt, "__func__", type(agent).prompt)
    if (inspect.isfunction(prompt) and not hasattr(prompt, "__wrapped__")
            and not inspect.iscoroutinefunction(prompt)):
        raise AgentLoadError(f"{origin} {spec!r}: {type(agent).__name__}.prompt is a plain "
                             "function; declare it 'async def prompt(self, turn)'")
    return agent


def _find(module: ModuleType, attr: str, spec: str, origin: str) -> Agent:
    target: object = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            names = sorted(n for n, v in vars(module).items()
                           if isinstance(v, Agent) or (isinstance(v, type)
                                                       and issubclass(v, Agent) and v is not Agent))
            found = f"; it defines {', '.join(names)}" if names else ""
            raise AgentLoadError(
                f"{origin} {spec!r}: the module has no attribute {attr!r}{found}") from None
    if isinstance(target, Agent):
        return target
    if not callable(target):
        kind = type(target).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise AgentLoadError(f"{origin} {spec!r}: {attr} is {article} {kind}, neither an Agent "
                             "nor a callable returning one (e.g. agent = MyAgent())")
    try:
        made = target()
    except Exception as exc:
        where = getattr(module, "__file__", None)
        folder = None if where is None else Path(where).parent
        raise AgentLoadError(
            f"{origin} {spec!r}: {attr}() failed: {_describe(exc, folder)}") from exc
    if not isinstance(made, Agent):
        raise AgentLoadError(
            f"{origin} {spec!r}: {attr}() returned {type(made).__name__}, not an Agent")
    return made
