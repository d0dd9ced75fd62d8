"""The tests the plugin makes: a collector of the standard scenarios (`killpoint::NAME`), a
collector per scenario file of the repository (`path/killpoint_x.toml::killpoint_x`), and the item
that certifies one scenario and fails with its story."""

from typing import List, Optional, Set

import pytest

from .certify import Outcome, Settings, certify, standard_names


class ScenarioFailed(Exception):
    """A scenario the runtime failed: its report is the message, without a Python traceback."""


class StandardScenarios(pytest.Collector):
    """The standard scenarios (`killpoint list scenarios`) but those the repository's own files
    named `own` replace, as a file named like a standard scenario replaces it in certify."""

    def __init__(self, *, settings: Settings, own: Set[str], **kwargs):
        super().__init__(**kwargs)
        self.settings = settings
        self.own = own

    def collect(self) -> List["ScenarioItem"]:
        names = [n for n in standard_names(self.settings.killpoint) if n not in self.own]
        return [ScenarioItem.from_parent(self, name=name, settings=self.settings, own_file=None) for name in names]


class ScenarioFile(pytest.File):
    def __init__(self, *, settings: Settings, **kwargs):
        super().__init__(**kwargs)
        self.settings = settings

    def collect(self):
        yield ScenarioItem.from_parent(self, name=self.path.stem, settings=self.settings, own_file=str(self.path))


class ScenarioItem(pytest.Item):
    def __init__(self, *, settings: Settings, own_file: Optional[str], **kwargs):
        super().__init__(**kwargs)
        self.settings = settings
        self.own_file = own_file

    def runtest(self) -> None:
        outcome = certify(self.settings, self.name, self.own_file)
        self.user_properties.append(("killpoint.status", outcome.status))
        if outcome.artifacts:
            self.user_properties.append(("killpoint.artifacts", outcome.artifacts))
        # Each cell in pytest's JUnit too (--junitxml: one property per cell).
        for cell, violated in outcome.cells:
            self.user_properties.append(("killpoint.cell", f"{cell}: {', '.join(violated) or 'held'}"))
        if outcome.status == "not run":
            pytest.skip(outcome.story)
        if outcome.status not in ("pass", "partial"):
            raise ScenarioFailed(report(self.name, outcome))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScenarioFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.own_file or "killpoint", None, f"killpoint scenario {self.name}"


def report(name: str, outcome: Outcome) -> str:
    """What a failing scenario says: the cells that failed, the story, the artifacts, the rerun."""
    lines = [f"killpoint: scenario `{name}` {outcome.status}"]
    lines += [f"  failed cell: {cell}" for cell in outcome.failed_cells()]
    lines += ["", outcome.story.rstrip(), ""]
    if outcome.artifacts:
        lines.append(f"artifacts kept at {outcome.artifacts}")
        lines.append(f"rerun exactly this case: {outcome.artifacts}/rerun.sh")
    lines.append(f"rerun this scenario: {outcome.rerun}")
    return "\n".join(lines)
