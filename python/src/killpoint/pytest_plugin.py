"""pytest plugin: `pytest --killpoint-runtime PATH` turns a killpoint certification into pytest
tests, one per scenario: the standard scenarios (`killpoint::after_dispatch`, ...) and the user's
own scenario files (`killpoint_*.toml` wherever pytest collects, one test each). A failing test says
the story, where the run's artifacts were kept and the command that reruns it. pytest's own
`--junitxml`, `-k` and `-n` (pytest-xdist) apply as to any test.
"""

import shutil
from typing import List, Optional

import pytest

from .certify import Settings
from .items import ScenarioFile, StandardScenarios

MODES = ("process", "machine", "black-box")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("killpoint", "killpoint: certify an agent runtime")
    group.addoption("--killpoint-runtime", metavar="PATH", help="the runtime to certify (turns the plugin on)")
    group.addoption(
        "--killpoint-mode",
        choices=MODES,
        default="process",
        help="process crashes with the probe (default), machine crashes (--crash machine), or a black box (--no-probe)",
    )
    group.addoption("--killpoint-arg", action="append", default=[], metavar="ARG",
                    help="an argument for killpoint certify (repeat: --killpoint-arg=--contract --killpoint-arg=killpoint-contract/7)")
    group.addoption("--killpoint-runtime-arg", action="append", default=[], metavar="ARG",
                    help="an argument for the runtime (after certify's --)")
    group.addoption("--killpoint-no-standard", action="store_true",
                    help="only the scenario files of this repository (killpoint_*.toml), not the standard ones")
    group.addoption("--killpoint-artifacts-dir", metavar="DIR", help="where failing runs' artifacts are kept (default: the temp dir)")
    group.addoption("--killpoint-bin", metavar="PATH", help="the killpoint binary (default: the one on PATH, installed with this plugin)")
    group.addoption("--killpoint-timeout", type=float, default=600.0, metavar="S", help="seconds one scenario may take")
    parser.addini("killpoint_files", "glob of the repository's own scenario files", default="killpoint_*.toml")


def pytest_configure(config: pytest.Config) -> None:
    runtime = config.getoption("killpoint_runtime")
    if runtime is None:
        return
    killpoint = config.getoption("killpoint_bin") or shutil.which("killpoint")
    if killpoint is None:
        raise pytest.UsageError("--killpoint-runtime: no `killpoint` on PATH (pip install killpoint), and no --killpoint-bin")
    config.stash[SETTINGS] = Settings(
        killpoint=killpoint,
        runtime=str(config.invocation_params.dir / runtime) if not runtime.startswith("/") else runtime,
        mode=config.getoption("killpoint_mode"),
        certify_args=config.getoption("killpoint_arg"),
        runtime_args=config.getoption("killpoint_runtime_arg"),
        artifacts_dir=config.getoption("killpoint_artifacts_dir"),
        timeout=config.getoption("killpoint_timeout"),
    )


SETTINGS = pytest.StashKey[Settings]()


def pytest_collect_file(file_path, parent: pytest.Collector) -> Optional[pytest.Collector]:
    settings = parent.config.stash.get(SETTINGS, None)
    if settings is not None and file_path.match(parent.config.getini("killpoint_files")):
        return ScenarioFile.from_parent(parent, path=file_path, settings=settings)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: List[pytest.Item]) -> None:
    # First, so that -k and -m (whose hooks deselect later) see the standard scenarios too.
    settings = config.stash.get(SETTINGS, None)
    if settings is None or config.getoption("killpoint_no_standard"):
        return
    own = {item.name for item in items if isinstance(item.parent, ScenarioFile)}
    # Named `killpoint` in node ids (`killpoint::after_dispatch`), placed at the root directory.
    standard = StandardScenarios.from_parent(
        session, name="killpoint", nodeid="killpoint", path=config.rootpath, settings=settings, own=own
    )
    # Collected through pytest's own hooks, so that its count and reports include them.
    session.ihook.pytest_collectstart(collector=standard)
    report = session.ihook.pytest_make_collect_report(collector=standard)
    session.ihook.pytest_collectreport(report=report)
    items[:0] = [item for item in report.result if isinstance(item, pytest.Item)]
