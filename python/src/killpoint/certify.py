"""One scenario certified by the `killpoint` binary, read back from its JSON certificate.

The plugin never judges anything itself: `killpoint certify` runs the scenario and writes its
verdict, story and kept artifacts (docs/report.md); this module starts it, under a deadline, in a
process group of its own, and reads what it wrote.
"""

import ctypes
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import List, Optional, Tuple


@dataclass(frozen=True)
class Settings:
    """What every scenario is certified with: the plugin's options, resolved once."""

    killpoint: str
    runtime: str
    mode: str
    certify_args: List[str] = field(default_factory=list)
    runtime_args: List[str] = field(default_factory=list)
    artifacts_dir: Optional[str] = None
    timeout: float = 600.0

    def mode_args(self) -> List[str]:
        return {"process": [], "machine": ["--crash", "machine"], "black-box": ["--no-probe"]}[self.mode]


@dataclass(frozen=True)
class Outcome:
    """How one scenario ended: `pass`, `partial`, `fail`, `error`, or `not run` (with why)."""

    status: str
    story: str
    artifacts: Optional[str]
    rerun: str
    # Each cell of the scenario (a fault: boundary of operation) with its invariants violated,
    # none for a cell that held.
    cells: List[Tuple[str, List[str]]]

    def failed_cells(self) -> List[str]:
        return [f"{cell}: {', '.join(violated)}" for cell, violated in self.cells if violated]


def standard_names(killpoint: str) -> List[str]:
    """The standard scenarios' names, as `killpoint list scenarios` prints them."""
    out = subprocess.run([killpoint, "list", "scenarios"], capture_output=True, text=True, timeout=60, check=True)
    return [line.split()[0] for line in out.stdout.splitlines()[1:] if line.strip()]


def certify(settings: Settings, name: str, own_file: Optional[str]) -> Outcome:
    """Certifies the scenario `name`: a standard one, or the user's `own_file` alone."""
    with tempfile.TemporaryDirectory(prefix="killpoint-pytest-") as scratch:
        selection = ["--filter", name]
        if own_file is not None:
            # Its own directory, so that no other .toml beside it (pyproject.toml…) is read.
            mine = os.path.join(scratch, "scenarios")
            os.mkdir(mine)
            shutil.copy(own_file, os.path.join(mine, name + ".toml"))
            selection += ["--no-standard", "--scenarios", mine]
        report = os.path.join(scratch, "certificate.json")
        command = [settings.killpoint, "certify", "--runtime", settings.runtime, "--jobs", "1"]
        command += selection + settings.mode_args() + settings.certify_args
        if settings.artifacts_dir:
            command += ["--artifacts-dir", settings.artifacts_dir]
        runtime_args = ["--"] + settings.runtime_args if settings.runtime_args else []
        code, output = _run(command + ["--json", report] + runtime_args, settings.timeout)
        rerun = shlex.join(command + runtime_args)
        if code == 2 or not os.path.exists(report):
            return Outcome("error", f"killpoint certify exited {code}:\n{output}", None, rerun, [])
        with open(report) as f:
            certificate = json.load(f)
    return _read(certificate, name, output, rerun)


def _read(certificate: dict, name: str, output: str, rerun: str) -> Outcome:
    mine = [s for s in certificate.get("scenarios", []) if s.get("name") == name]
    if not mine:
        why = [line for line in output.splitlines() if line.startswith("not run") and name in line]
        return Outcome("not run", why[0] if why else f"killpoint certify did not run `{name}`", None, rerun, [])
    scenario = mine[0]
    violations = scenario.get("violations", [])
    # A fault's `violations` are indices into the scenario's (docs/report.md): its cell's failures.
    cells = [
        (
            f"{f['boundary']} of {f['operation']} ({f['tool_kind']}, {f['hit']})",
            sorted({violations[i]["invariant"] for i in f.get("violations", [])}),
        )
        for f in scenario.get("faults", [])
    ]
    story = scenario.get("story") or scenario.get("error") or ""
    return Outcome(scenario["status"], story, scenario.get("artifacts"), rerun, cells)


def _run(command: List[str], timeout: float):
    """Runs `command` to its end within `timeout` seconds; past it, its whole group is killed. It
    dies with this process too (PR_SET_PDEATHSIG), and so does what it starts (killpoint's own)."""
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    try:
        output, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        output, _ = child.communicate()
        return 2, f"killpoint certify did not finish within {timeout:.0f} s (killed):\n{output}"
    return child.returncode, output


def _die_with_parent() -> None:
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
