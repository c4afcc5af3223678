"""stepsim from Python: predict a Megatron-LM training step, its memory and schedule, and
plan a run over many configurations, with the same library calls (and the same JSON
documents, as dicts) as the ``stepsim`` command line.

    import stepsim
    s = stepsim.load("scenarios/gpt3-175b-a100-64.json")   # or a dict in the same format
    p = stepsim.predict(s)                                  # the `predict --format json` keys
    p["step_time_s"], p["mfu"], p["stages"][0]["bubble_s"]
    rows = stepsim.sweep("scenarios/sweeps/turing-530b-2520.json", jobs=2)
    pandas.DataFrame(rows)                                  # one row per configuration

Bad input of any kind raises :class:`ScenarioError`, naming the file, the key and the rule.
The documents' keys are described in docs/outputs.md.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Iterable

from . import _stepsim
from ._stepsim import Scenario

__all__ = [
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "SweepRows",
    "check",
    "import_hf",
    "import_megatron",
    "import_megatron_details",
    "load",
    "memory",
    "predict",
    "schedule",
    "scenarios_dir",
    "sweep",
    "systems",
]

__version__ = _stepsim.version()


class ScenarioError(ValueError):
    """Bad input: a scenario, system, profile or sweep that breaks a rule.

    ``file``, ``key`` and ``rule`` describe the first problem (``key`` is the dotted scenario
    key, e.g. ``training.tensor_model_parallel_size``; ``rule`` the rule in Megatron's
    vocabulary); ``problems`` lists every problem as dicts with those three keys. ``str()``
    is what ``stepsim check`` prints, one line per problem.
    """

    def __init__(self, problems: Iterable[tuple[str, str, str]]):
        self.problems = [_problem(p) for p in problems]
        first = self.problems[0] if self.problems else {"file": "", "key": "", "rule": ""}
        self.file: str = first["file"]
        self.key: str = first["key"]
        self.rule: str = first["rule"]
        super().__init__("\n".join(_line(p) for p in problems))


class SimulationError(RuntimeError):
    """A runtime failure (an output file that cannot be written; an internal inconsistency
    of the simulation), the cases where the command line exits with status 1."""

    def __init__(self, problems: Iterable[tuple[str, str, str]]):
        super().__init__("\n".join(_line(p) for p in problems))


class SweepRows(list):
    """The rows of a sweep, one flat dict per configuration in enumeration order, keyed like
    the columns of ``stepsim sweep --out FILE.csv`` (``pandas.DataFrame(rows)`` takes them as
    they are). ``summary`` holds the ``stepsim sweep --format json`` document; ``best``,
    ``best_per_gpu_count``, ``pareto`` (the whole front, by peak memory) and
    ``pareto_summary`` (at most 8 points evenly spaced along it, both ends included) are
    lists of the same flat rows, ready for ``pandas.DataFrame(rows.pareto)``."""

    summary: dict[str, Any]
    best: list[dict[str, Any]]
    best_per_gpu_count: list[dict[str, Any]]
    pareto: list[dict[str, Any]]
    pareto_summary: list[dict[str, Any]]

    def _select(self) -> None:
        by_index = {r["index"]: r for r in self}
        s = self.summary
        self.best = [by_index[c["index"]] for c in s["best"]]
        self.best_per_gpu_count = [by_index[c["index"]] for c in s["best_per_gpu_count"]]
        self.pareto = [by_index[c["index"]] for c in s["pareto"]]
        self.pareto_summary = [by_index[i] for i in s["pareto_summary"]]


def _problem(p: tuple[str, str, str]) -> dict[str, str]:
    file, key, message = p
    return {"file": file, "key": key, "rule": message.lstrip("= ").strip() if key else message}


def _line(p: tuple[str, str, str]) -> str:
    file, key, message = p
    return (f"{file}: " if file else "") + key + message


def _raise_if(problems, runtime: bool = False) -> None:
    if problems:
        raise (SimulationError if runtime else ScenarioError)(problems)


def scenarios_dir() -> str:
    """The scenarios/ folder relative paths fall back to ($STEPSIM_SCENARIOS_DIR, else the
    source tree's)."""
    return _stepsim.scenarios_dir()


def load(source: str | os.PathLike | dict | Scenario) -> Scenario:
    """Loads and validates a scenario: a file path, or a dict in the scenario format
    (docs/scenario.md; relative ``system`` and profile paths then resolve against the
    current directory, then scenarios/). Raises ScenarioError naming every problem."""
    if isinstance(source, Scenario):
        return source
    if isinstance(source, dict):
        problems, scenario = _stepsim.load_text(json.dumps(source), "<dict>", os.getcwd())
    elif isinstance(source, (str, os.PathLike)):
        problems, scenario = _stepsim.load_file(os.fspath(source))
    else:
        raise TypeError(f"stepsim.load takes a path or a dict, not {type(source).__name__}")
    _raise_if(problems)
    return scenario


def _read_input(label: str) -> str:
    """The text of the input file ``label``, as stepsim's own reader takes it: a regular file
    only (a FIFO, device or directory is refused without opening it, so it never blocks)."""
    try:
        mode = os.stat(label).st_mode
    except OSError as e:
        raise ScenarioError([(label, "", f"cannot open: {e.strerror.lower()}")]) from None
    if stat.S_ISDIR(mode):
        raise ScenarioError([(label, "", "is a directory, not a file")])
    if not stat.S_ISREG(mode):
        raise ScenarioError([(label, "", "is not a regular file (a FIFO, device or socket): "
                                         "stepsim reads its inputs only from regular files")])
    try:
        with open(label, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError([(label, "", f"cannot read: {e}")]) from None


def check(source: str | os.PathLike | dict | Scenario) -> list[dict[str, str]]:
    """Every problem ``stepsim check`` would report (dicts with file, key, rule); [] when
    the scenario, its system and its profile are valid."""
    try:
        scenario = load(source)
    except ScenarioError as e:
        return e.problems
    return [_problem(p) for p in _stepsim.check(scenario)]


def predict(scenario: str | os.PathLike | dict | Scenario, full_rank: bool = False,
            trace: str | os.PathLike | None = None, gpipe: bool = False,
            train_tokens: int | float | None = None,
            stragglers: dict[int, float] | None = None, trace_level: str = "auto",
            trace_ranks: Iterable[int] | None = None, contention: bool = True,
            slow_nics: dict[int, float] | None = None, jitter: float = 0.0,
            seed: int = 0) -> dict[str, Any]:
    """Simulates one training step: the ``stepsim predict --format json`` document as a dict
    (step_time_s, tokens_per_s, mfu, hfu, tflops_per_gpu, stages, critical_path, ...).
    ``trace`` writes the step as a Chrome trace file (docs/trace.md), shaped by
    ``trace_level`` (``"auto"``: op level when that trace stays under about 50 MB, else
    micro-batch level; ``"op"`` or ``"microbatch"``) and ``trace_ranks`` (pipeline ranks to keep;
    all when None); ``gpipe`` simulates GPipe instead of Megatron's 1F1B; ``train_tokens`` adds
    ``time_to_train`` (steps, time, GPU-hours for that many tokens, as ``--train-tokens``);
    ``stragglers`` maps a global rank to how many times as long its kernels take (as
    ``--straggler RANK=FACTOR``); ``contention=False`` makes every overlap free (no link
    sharing, no compute-communication interference), as ``--no-contention``.
    ``full_rank=True`` simulates every GPU (as ``--full-rank``); with it, stragglers may lie in
    any data-parallel replica, ``slow_nics`` maps a node (global rank // gpus_per_node) to how
    many times as slowly its NICs move bytes (as ``--slow-nic NODE=FACTOR``) and ``jitter``
    scales each GPU's kernels by exp(jitter * z), z a standard normal drawn from ``seed`` (as
    ``--jitter SIGMA --seed N``). A step that does not fit in GPU memory adds ``make_it_fit``:
    the smallest changes that fit, fastest first (docs/outputs.md)."""
    s = load(scenario)
    if train_tokens is not None and not 1 <= train_tokens <= 1e18:
        raise ScenarioError([("", "train_tokens", f"={train_tokens} must lie in [1, 1e18]")])
    if trace_level not in ("auto", "op", "microbatch"):
        raise ScenarioError([("", "trace_level",
                              f"={trace_level!r} must be 'auto', 'op' or 'microbatch'")])
    if not trace and (trace_level != "auto" or trace_ranks is not None):
        raise ScenarioError([("", "trace_level",
                              ": trace_level and trace_ranks shape the trace: give trace= too")])
    pairs = []
    for rank, factor in (stragglers or {}).items():
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < 2**31:
            raise ScenarioError([("", "stragglers", f": rank {rank!r} is not a global rank")])
        pairs.append((rank, float(factor)))
    nics = []
    for node, factor in (slow_nics or {}).items():
        if not isinstance(node, int) or isinstance(node, bool) or not 0 <= node < 2**31:
            raise ScenarioError([("", "slow_nics", f": node {node!r} is not a node index")])
        nics.append((node, float(factor)))
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ScenarioError([("", "seed", f"={seed!r} must be an integer in [0, 2**64)")])
    ranks = None
    if trace_ranks is not None:
        ranks = sorted({int(r) for r in trace_ranks})
        if any(r < 0 or r >= 2**31 for r in ranks):
            raise ScenarioError([("", "trace_ranks", f"={ranks} must be pipeline ranks")])
    problems, runtime, text = _stepsim.predict(s, os.fspath(trace) if trace else "", gpipe,
                                               int(train_tokens or 0), pairs,
                                               trace_level, ranks,
                                               bool(contention), bool(full_rank), nics,
                                               float(jitter), seed)
    _raise_if(problems, runtime)
    return json.loads(text)


def memory(scenario: str | os.PathLike | dict | Scenario) -> dict[str, Any]:
    """The analytic memory per stage: the ``stepsim memory --format json`` document (with
    ``make_it_fit``, the smallest changes that fit, when the job does not)."""
    return json.loads(_stepsim.memory(load(scenario)))


def schedule(pp: int, microbatches: int, vpp: int = 1, group_size: int | None = None,
             gpipe: bool = False, overlap_p2p: bool = False) -> dict[str, Any]:
    """The per-rank order of forward and backward steps Megatron-LM runs: the ``stepsim
    schedule --format json`` document (arguments as that command's flags)."""
    problems, text = _stepsim.schedule(pp, vpp, microbatches, group_size, gpipe, overlap_p2p)
    _raise_if(problems)
    return json.loads(text)


def sweep(spec: str | os.PathLike | dict, jobs: int = 0,
          out: str | os.PathLike | None = None, objective: str | None = None,
          price_per_gpu_hour: float | None = None,
          train_tokens: int | float | None = None) -> SweepRows:
    """Plans a run: every configuration of a sweep (a file path or a dict in the sweep format
    of docs/scenario.md) evaluated on ``jobs`` threads (0: all cores). Returns SweepRows (one
    flat dict per configuration; ``.summary``: the ``--format json`` summary; ``.best``,
    ``.best_per_gpu_count``, ``.pareto``, ``.pareto_summary``: flat rows too). ``out`` also
    writes the rows as ``stepsim sweep --out`` does (FILE.csv or FILE.json). ``objective``,
    ``price_per_gpu_hour`` and ``train_tokens`` take the place of the file's, as
    ``--objective``, ``--price-per-gpu-hour`` and ``--train-tokens`` do: with a price every
    row has ``usd_per_million_tokens``, with both ``train_usd``."""
    if isinstance(spec, dict):
        text, label, base_dir = json.dumps(spec), "<dict>", os.getcwd()
    elif isinstance(spec, (str, os.PathLike)):
        label = os.fspath(spec)
        text = _read_input(label)
        base_dir = os.path.dirname(label) or "."
    else:
        raise TypeError(f"stepsim.sweep takes a path or a dict, not {type(spec).__name__}")
    if jobs < 0:
        raise ValueError(f"stepsim.sweep: jobs={jobs} must be >= 0 (0: all cores)")
    if price_per_gpu_hour is not None and not 0 < price_per_gpu_hour <= 1e6:
        raise ScenarioError([("", "price_per_gpu_hour",
                              f"={price_per_gpu_hour} must be a price in (0, 1e6] per GPU-hour")])
    if train_tokens is not None and not 1 <= train_tokens <= 1e18:
        raise ScenarioError([("", "train_tokens", f"={train_tokens} must lie in [1, 1e18]")])
    problems, runtime, summary, rows = _stepsim.sweep(
        text, label, base_dir, jobs, os.fspath(out) if out else "", objective or "",
        float(price_per_gpu_hour or 0), int(train_tokens or 0))
    _raise_if(problems, runtime)
    result = SweepRows(json.loads(r) for r in rows)
    result.summary = json.loads(summary)
    result._select()
    return result


def import_hf(config: str | os.PathLike | dict, seq_length: int | None = None) -> dict[str, Any]:
    """The model section of a scenario ({"model": {...}}, Megatron-LM's key names) from a
    Hugging Face config.json (a path or the parsed dict), as ``stepsim import-hf``.
    ``seq_length``: the training sequence length (default: max_position_embeddings)."""
    if isinstance(config, dict):
        text, label = json.dumps(config), "<dict>"
    else:
        label = os.fspath(config)
        text = _read_input(label)
    if seq_length is not None and seq_length <= 0:
        raise ScenarioError([(label, "seq_length", f"={seq_length} must be positive")])
    problems, _notes, text = _stepsim.import_hf(text, label, seq_length or 0)
    _raise_if(problems)
    return json.loads(text)


def import_megatron(line: str, world_size: int = 0, system: str = "") -> dict[str, Any]:
    """A scenario (a dict in the scenario format) from a Megatron-LM launch line, as
    ``stepsim predict --megatron-args`` builds it. ``world_size``: GPUs of the run (default:
    from torchrun's --nnodes x --nproc_per_node); ``system``: a system file. The flags stepsim
    does not model and the assumptions made: import_megatron_details()."""
    return import_megatron_details(line, world_size, system)["scenario"]


def import_megatron_details(line: str, world_size: int = 0, system: str = "") -> dict[str, Any]:
    """As import_megatron, with what the import could not carry over:
    {"scenario": {...}, "ignored_flags": [...], "notes": [...]}."""
    problems, ignored, notes, text = _stepsim.import_megatron(line, world_size, system)
    _raise_if(problems)
    return {"scenario": json.loads(text), "ignored_flags": list(ignored), "notes": list(notes)}


def systems() -> list[dict[str, Any]]:
    """The shipped systems, one dict per system as ``stepsim systems --format json`` lists
    them: ``name`` (the short name a scenario's "system" takes), ``gpu_name``,
    ``gpus_per_node``, ``intra_node_bandwidth_bytes_per_s`` (NVLink, per GPU),
    ``inter_node_bandwidth_bytes_per_s`` (per NIC), ``profiles`` (the short names of the
    shipped profiles of its GPU, for ``cost_model.profile``) and ``default_cost_model`` (what
    prices a scenario on it without ``cost_model``: its GPU's public profile, or
    ``"roofline"``)."""
    problems, text = _stepsim.systems()
    _raise_if(problems)
    return json.loads(text)
