"""What a run of ``benchmarks.bench`` reports: the ``Measurement`` of each subject, the
subjects' names (as printed and written to JSON), each Barbu figure's ratio to the matching
OpenSpiel ``hearts`` figure (``RATIO_TO``), and the figures as a text table
(``results_table``) and as the JSON document of ``--json`` (``results_json``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# Names of the subjects, as printed and written to JSON.
ENGINE_MASK = "barbu engine: legal_mask + random bit"
ENGINE_LIST = "barbu engine: legal_actions() + choice"
AEC_ENV = "barbu AEC env(): last + step"
AEC_RAW = "barbu AEC env.unwrapped (raw_env)"
VECTOR = "barbu batched engine: step + obs + masks"
HEARTS_BARE = "OpenSpiel hearts: bare"
HEARTS_OBS = "OpenSpiel hearts: + observer -> numpy"
PIMC = "pimc agent: its own decisions (1 seat, 3 heuristic)"
PYSPIEL_BARE = "barbu pyspiel python_barbu: bare"
PYSPIEL_OBS = "barbu pyspiel python_barbu: + observation_tensor"
PYSPIEL_OBSERVER = "barbu pyspiel python_barbu: + observer -> numpy"

#: Which hearts figure each Barbu figure is divided by.
RATIO_TO = {
    ENGINE_MASK: HEARTS_BARE,
    ENGINE_LIST: HEARTS_BARE,
    AEC_ENV: HEARTS_OBS,
    AEC_RAW: HEARTS_OBS,
    VECTOR: HEARTS_OBS,
    PYSPIEL_BARE: HEARTS_BARE,
    PYSPIEL_OBS: HEARTS_OBS,
    PYSPIEL_OBSERVER: HEARTS_OBS,
}


@dataclass
class Measurement:
    """Figures for one subject."""

    name: str
    games: int  # full games played
    decisions: int  # player decisions in those games (see the module docstring)
    seconds: float  # wall time of those games, set-up included
    note: str = ""  # what exactly was measured, when the name does not say it

    @property
    def rate(self) -> float:
        """Decisions per second."""
        return self.decisions / self.seconds if self.seconds > 0 else 0.0


def ratios(results: list[Measurement]) -> dict[str, tuple[float, str]]:
    """Per Barbu subject: its rate over the matching hearts rate, and that hearts subject."""
    rate = {m.name: m.rate for m in results}
    return {name: (rate[name] / rate[ref], ref) for name, ref in RATIO_TO.items() if name in rate and rate.get(ref)}


def results_table(results: list[Measurement]) -> str:
    """The figures as a text table, one subject a line, with its ratio to hearts."""
    ratio = ratios(results)
    width = max(len(m.name) for m in results)
    lines = [f"{'subject':<{width}}  {'games':>6}  {'decisions':>10}  {'seconds':>7}  {'decisions/s':>11}  ratio"]
    for m in results:
        r = f"{ratio[m.name][0]:.3f} x {ratio[m.name][1]}" if m.name in ratio else ""
        lines.append(f"{m.name:<{width}}  {m.games:>6}  {m.decisions:>10,}  {m.seconds:>7.2f}  {m.rate:>11,.0f}  {r}")
    return "\n".join(lines)


def results_json(info: dict, settings: dict, results: list[Measurement], skipped: dict[str, str]) -> dict:
    """The JSON document of a run: the machine (``info``), the run's ``settings``, every
    measurement with its rate and ratio, and the subjects skipped (with the reason)."""
    ratio = ratios(results)
    return {
        "machine": info,
        "settings": settings,
        "results": [
            {
                **asdict(m),
                "decisions_per_second": m.rate,
                "ratio": ratio[m.name][0] if m.name in ratio else None,
                "ratio_to": ratio[m.name][1] if m.name in ratio else None,
            }
            for m in results
        ],
        "skipped": skipped,
    }
