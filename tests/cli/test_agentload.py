"""``--agent FILE.py:ATTR`` / ``package.module:ATTR`` and ``WIREPROTO_AGENT``, from any directory.

Real ``wireproto`` processes, started from a directory other than the agent's.
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

AGENT = textwrap.dedent("""
    from wireproto.agent.api import Agent, AgentInfo
    from wireproto.agent.events import StopReason

    from helper import shout  # a sibling module: found from any directory

    class Shout(Agent):
        info = AgentInfo(name="shouter", version="1.0")

        async def prompt(self, turn):
            await turn.say(shout(turn.text))
            return StopReason.END_TURN

    agent = Shout()
""")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``project/coder.py`` (the agent) and ``project/helper.py`` beside it."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "coder.py").write_text(AGENT)
    (folder / "helper.py").write_text("def shout(text):\n    return text.upper() + '!'\n")
    return folder


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere"
    path.mkdir()
    return path


def _acp_name(kit: Any, proc: Any) -> str:
    proc.send(kit.acp_init)
    reply = proc.recv()
    proc.close_stdin()
    assert proc.wait() == 0, proc.err
    return str(reply["result"]["agentInfo"]["name"])


def _wire_reply(kit: Any, proc: Any) -> str:
    proc.send(kit.wire_init)
    assert proc.recv()["id"] == "init"
    proc.send(kit.request("p", "prompt", {"user_input": "hi"}))
    messages = proc.recv_until(lambda m: m.get("id") == "p")
    proc.close_stdin()
    assert proc.wait() == 0, proc.err
    return "".join(m["params"]["payload"].get("text", "") for m in messages
                   if m.get("method") == "event" and m["params"]["type"] == "ContentPart")


@pytest.mark.parametrize("relative", [False, True])
def test_a_file_path_from_another_directory(
    kit: Any, project: Path, elsewhere: Path, relative: bool
) -> None:
    path = os.path.relpath(project / "coder.py", elsewhere) if relative \
        else str(project / "coder.py")
    proc = kit.spawn("wire", "--agent", f"{path}:agent", cwd=elsewhere)
    assert _wire_reply(kit, proc) == "HI!"


def test_a_package_module_on_the_python_path(kit: Any, project: Path, elsewhere: Path) -> None:
    (project / "__init__.py").write_text("")
    (project / "coder.py").write_text(AGENT.replace("from helper", "from project.helper"))
    env = {**kit.env, "PYTHONPATH": str(project.parent)}
    proc = kit.spawn("acp", "--agent", "project.coder:agent", cwd=elsewhere, env=env)
    assert _acp_name(kit, proc) == "shouter"


@pytest.mark.parametrize("form", [["acp"], ["wire"], ["--work-dir", "WORK", "--wire"]])
def test_the_environment_variable_in_every_serving_form(
    kit: Any, project: Path, elsewhere: Path, form: list[str]
) -> None:
    env = {**kit.env, "WIREPROTO_AGENT": f"{project / 'coder.py'}:agent"}
    args = [str(elsewhere) if a == "WORK" else a for a in form]
    proc = kit.spawn(*args, cwd=elsewhere, env=env)
    if form == ["acp"]:
        assert _acp_name(kit, proc) == "shouter"
    else:  # ``wire`` and the Wire SDK's spawn form, which cannot pass --agent
        assert _wire_reply(kit, proc) == "HI!"
    proc.wait_err(re.escape(f"serving {project / 'coder.py'}:agent"))  # (read by a thread)


def test_the_environment_variable_over_websocket(
    kit: Any, project: Path, elsewhere: Path
) -> None:
    env = {**kit.env, "WIREPROTO_AGENT": f"{project / 'coder.py'}:agent"}
    proc = kit.spawn("acp", "--ws", "0", cwd=elsewhere, env=env)
    proc.wait_err(r"listening on ws://")
    assert f"agent shouter ({project / 'coder.py'}:agent, from WIREPROTO_AGENT)" in proc.err
    assert kit.stop(proc) == 0


def test_the_option_wins_over_the_variable(kit: Any, project: Path, elsewhere: Path) -> None:
    env = {**kit.env, "WIREPROTO_AGENT": "no_such_module:agent"}
    proc = kit.spawn("acp", "--agent", f"{project / 'coder.py'}:agent", cwd=elsewhere, env=env)
    assert _acp_name(kit, proc) == "shouter"


@pytest.mark.parametrize("spec, env, wanted", [
    ("coder:agent", False,
     "--agent 'coder:agent': tried the module 'coder': ModuleNotFoundError: No module named "
     "'coder' (searched the current directory"),
    ("./coder.py:agent", False, "--agent './coder.py:agent': tried the file "),
    ("PROJECT/coder.py:missing", False,
     "the module has no attribute 'missing'; it defines Shout, agent"),
    ("PROJECT/broken.py:agent", False,
     "tried the file PROJECT/broken.py: SyntaxError: invalid syntax (PROJECT/broken.py, line 2)"),
    ("PROJECT/raises.py:agent", False,  # (where, in the agent's code: not in os.py)
     "tried the file PROJECT/raises.py: KeyError: 'API_KEY' (PROJECT/raises.py, line 2)"),
    ("PROJECT/factory.py:make", False,
     "make() failed: ValueError: no key (PROJECT/factory.py, line 3)"),
    ("PROJECT/values.py:agent", False, "agent is an int, neither an Agent nor a callable "
                                        "returning one (e.g. agent = MyAgent())"),
    ("PROJECT/sync.py:agent", False, "Sync.prompt is a plain function; declare it 'async def "
                                     "prompt(self, turn)'"),
    ("nowhere.py:agent", True, "WIREPROTO_AGENT 'nowhere.py:agent': tried the file "),
])
def test_load_errors_say_which_form_was_tried_and_why(
    kit: Any, project: Path, elsewhere: Path, spec: str, env: bool, wanted: str
) -> None:
    (project / "broken.py").write_text("x = 1\ndef (:\n")
    (project / "raises.py").write_text("import os\nos.environ['API_KEY']\n")
    (project / "values.py").write_text("agent = 42\n")
    (project / "factory.py").write_text("def make():\n    key = None\n"
                                        "    raise ValueError('no key')\n")
    (project / "sync.py").write_text("from wireproto.agent import Agent\n\nclass Sync(Agent):\n"
                                     "    def prompt(self, turn):\n        return 'end_turn'\n\n"
                                     "agent = Sync()\n")
    spec = spec.replace("PROJECT", str(project))
    wanted = wanted.replace("PROJECT", str(project))
    environ = {**kit.env, "WIREPROTO_AGENT": spec} if env else kit.env
    args = ["acp"] if env else ["acp", "--agent", spec]
    proc = kit.spawn(*args, cwd=elsewhere, env=environ)
    assert proc.wait() == 1
    errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error:")]
    assert len(errors) == 1 and wanted in errors[0], proc.err
    if "does not exist" in errors[0]:
        assert str(elsewhere) in errors[0]
    assert "Traceback" not in proc.err


def test_the_place_shown_is_the_agents_code_not_a_library_in_its_directory(
    tmp_path: Path,
) -> None:
    # (a project's .venv is under its directory: a frame there is no place of the agent's)
    from wireproto.cli.agentload import _describe

    agent = tmp_path / "raises.py"
    agent.write_text("import json\njson.loads('{')\n")
    try:
        exec(compile(agent.read_text(), str(agent), "exec"), {})
    except ValueError as exc:
        # every file is under "/": json/decoder.py raised, in the agent's line 2
        assert _describe(exc, "/").endswith(f"(char 1) ({agent}, line 2)")
    else:
        raise AssertionError("the agent did not raise")
