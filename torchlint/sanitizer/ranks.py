"""Distributed runs: which rank a process is, one report file per rank, and one
summary that says which ranks saw what.

Under ``torchrun`` (or any launcher that sets ``RANK``/``WORLD_SIZE``, or once
``torch.distributed`` is initialised) every finding carries the rank of the
process that saw it.  Each rank keeps its own report file current: written when
its session starts, after every new finding (findings are rare) and when the
session ends, so a rank killed by the launcher still leaves what it saw.  The
files go next to ``report=`` (``out.json`` -> ``out.rank0.json``,
``out.rank1.json``...; or wherever a ``{rank}`` placeholder in the path says),
or, without one, into a directory in the temp dir that the ranks of one launch
on one node share.

One rank gathers them *through those files*, never through a collective: the
user's run gets no extra communication, and a rank that crashed or hangs cannot
make the gathering hang.  It waits (at most ``gather_timeout`` seconds) for the
ranks whose file says they are still running and whose process is alive, then
prints one summary with a ``ranks`` column, and writes the merged report to
``report=`` itself.  The gatherer is rank 0 for a shared ``report=`` path, and
the node-local rank 0 for the temp directory (a node sees only its own ranks'
files there).  The other ranks print one line.

This module does not import torch: ``torch.distributed`` is only looked at
if the user's code imported it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from .findings import Finding, Report

#: How often the gathering rank looks at the other ranks' files.
_POLL_SECONDS = 0.05
#: Characters of a rank's exception kept in the gathered report.
_MAX_FAILURE = 200


class Terminated(BaseException):
    """SIGTERM arrived: torchrun stops the other ranks when one fails, batch
    schedulers stop jobs at their time limit.  ``torchlint run`` raises it in
    the script so that the session can publish what it saw (see runner.py)."""


@dataclass(frozen=True)
class RankInfo:
    rank: int
    world_size: int
    local_rank: int | None = None
    #: Ranks on this node, when the launcher says (torchrun's LOCAL_WORLD_SIZE).
    local_world_size: int | None = None


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    try:
        return int(value)
    except ValueError:
        return None


def detect() -> RankInfo | None:
    """This process's place in a distributed run of more than one process, or None.

    An initialised default process group is the truth; before (or without) one,
    the launcher's environment (torchrun, ``torch.multiprocessing`` scripts that
    set ``RANK``/``WORLD_SIZE``, SLURM launchers via torchrun...)."""
    local_rank, local_world = _env_int("LOCAL_RANK"), _env_int("LOCAL_WORLD_SIZE")
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        world = dist.get_world_size()
        return RankInfo(dist.get_rank(), world, local_rank, local_world) if world > 1 else None
    rank, world = _env_int("RANK"), _env_int("WORLD_SIZE")
    if rank is None or world is None or world < 2 or not 0 <= rank < world:
        return None
    return RankInfo(rank, world, local_rank, local_world)


def rank_path(path: str | os.PathLike, rank: int) -> str:
    """``out.json`` -> ``out.rank1.json``; ``out-{rank}.json`` -> ``out-1.json``."""
    text = os.fspath(path)
    if "{rank}" in text:
        return text.replace("{rank}", str(rank))
    root, ext = os.path.splitext(text)
    return f"{root}.rank{rank}{ext or '.json'}"


def _launch_key() -> str | None:
    """A name shared by the ranks of one launch on one node (and by nothing else),
    from the launcher's environment; None when there is none to share."""
    elastic = os.environ.get("TORCHELASTIC_RUN_ID")
    parts = [
        os.environ.get("MASTER_ADDR", ""),
        os.environ.get("MASTER_PORT", ""),
        elastic or "",
        os.environ.get("TORCHELASTIC_RESTART_COUNT", ""),
        # torchrun's agent is every local worker's parent: two launches that reuse
        # a port (one after the other) still get different directories.
        str(os.getppid()) if elastic is not None else "",
    ]
    if not any(parts[:3]):
        return None
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:16]


def _process_gone(pid: int) -> bool:
    """Whether a process of this host has ended (a zombie counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] in ("Z", "X")
    except OSError:
        return False


def _write_json(path: str, data: dict[str, Any]) -> None:
    """Atomically: the gathering rank must never read half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".torchlint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


class RankReports:
    """The report files of one rank's session, and the gathering at its end."""

    def __init__(self, info: RankInfo, report_path: str | os.PathLike | None, timeout: float):
        self.info = info
        self.timeout = max(0.0, float(timeout))
        self.started = time.time()
        self.shared_path = os.fspath(report_path) if report_path else None
        if self.shared_path is not None:
            self.directory = None
            self.merged_path = None if "{rank}" in self.shared_path else self.shared_path
        else:
            key = _launch_key()
            self.directory = os.path.join(tempfile.gettempdir(), f"torchlint-sanitize-{key}") if key else None
            self.merged_path = None
        self.broken = False  # a file could not be written: say so once, then stop trying

    # -- where the files are ----------------------------------------------------
    def path_for(self, rank: int) -> str | None:
        if self.shared_path is not None:
            return rank_path(self.shared_path, rank)
        if self.directory is not None:
            return os.path.join(self.directory, f"rank{rank}.json")
        return None

    @property
    def own_path(self) -> str | None:
        return self.path_for(self.info.rank)

    def is_gatherer(self) -> bool:
        if self.shared_path is not None:
            return self.info.rank == 0 and self.merged_path is not None
        if self.directory is None:
            return False
        local = self.info.local_rank
        return local == 0 if local is not None else self.info.rank == 0

    # -- this rank's file ---------------------------------------------------------
    def write(self, report: Report, finished: bool, failure: BaseException | None = None) -> None:
        path = self.own_path
        if path is None or self.broken:
            return
        data = report.to_dict()
        data.update(
            pid=os.getpid(),
            host=socket.gethostname(),
            started=self.started,
            finished=finished,
            failure=describe_failure(failure),
        )
        try:
            if self.directory is not None:
                os.makedirs(self.directory, exist_ok=True)
            _write_json(path, data)
        except OSError as error:
            self.broken = True
            print(f"torchlint.sanitize [rank {self.info.rank}]: cannot write {path}: {error}", file=sys.stderr)

    # -- gathering ------------------------------------------------------------------
    def _expected(self) -> list[int]:
        """The ranks whose files can appear here: all of them for a shared path or
        a single-node launch; on one node of several, those that wrote a file."""
        others = [r for r in range(self.info.world_size) if r != self.info.rank]
        local_world = self.info.local_world_size
        if self.shared_path is not None or local_world is None or local_world >= self.info.world_size:
            return others
        return [r for r in others if os.path.exists(self.path_for(r) or "")]

    def _settled(self, data: dict[str, Any] | None) -> bool:
        """Nothing more will come from this rank: it finished, or its process ended."""
        if data is None:
            return False
        if data.get("finished"):
            return True
        return data.get("host") == socket.gethostname() and _process_gone(int(data.get("pid", 0)))

    def _fresh(self, data: dict[str, Any] | None) -> dict[str, Any] | None:
        """Ignore a file left behind by an earlier launch (it started long before us)."""
        if data is None or float(data.get("started", 0)) < self.started - 3600:
            return None
        return data

    def gather(self, own: Report, failure: BaseException | None = None) -> tuple[GatheredReport, dict[int, str]]:
        """Wait for the other ranks' files and merge them with ``own``; also
        return a status per rank that is not fully reported ("missing",
        "unfinished")."""
        expected = self._expected()
        deadline = time.monotonic() + self.timeout
        datas: dict[int, dict[str, Any] | None] = {}
        while True:
            for rank in expected:
                if not self._settled(datas.get(rank)):
                    datas[rank] = self._fresh(_read_json(self.path_for(rank) or ""))
            if all(self._settled(datas.get(r)) for r in expected) or time.monotonic() >= deadline:
                break
            time.sleep(_POLL_SECONDS)
        reports = {self.info.rank: {**own.to_dict(), "failure": describe_failure(failure)}}
        status: dict[int, str] = {}
        for rank in expected:
            data = datas.get(rank)
            if data is None:
                status[rank] = "missing"
                continue
            if not data.get("finished"):
                status[rank] = "unfinished"
            reports[rank] = data
        return merge(reports, self.info.world_size), status

    def cleanup(self, ranks: list[int]) -> None:
        """Remove the temp-dir files once merged (a shared report path keeps them)."""
        if self.directory is None:
            return
        for rank in ranks:
            with contextlib.suppress(OSError):
                os.unlink(self.path_for(rank) or "")
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)

    # -- the end of the session ----------------------------------------------------
    def publish(self, report: Report, summary: bool, color: bool, failure: BaseException | None = None) -> None:
        self.write(report, finished=True, failure=failure)
        if self.own_path is None:
            # No place the ranks share (no report path, no launcher to name a directory):
            # nobody gathers, so every rank prints its own summary.
            if summary:
                print(report.format_summary(color=color), file=sys.stderr)
            return
        if not self.is_gatherer():
            if summary:
                print(self._one_line(report), file=sys.stderr)
            return
        merged, status = self.gather(report, failure)
        for rank, state in sorted(status.items()):
            where = self.path_for(rank)
            if state == "missing":
                merged.notes.append(f"rank {rank}: no report ({where} never appeared)")
            else:
                merged.notes.append(f"rank {rank}: its report is incomplete (the process ended mid-run): {where}")
        if summary:
            print(merged.format_summary(color=color), file=sys.stderr)
        if self.merged_path is not None:
            try:
                _write_json(self.merged_path, merged.to_dict())
            except OSError as error:
                print(f"torchlint.sanitize: cannot write the report {self.merged_path}: {error}", file=sys.stderr)
        self.cleanup([self.info.rank, *(r for r in merged.gathered_ranks if r not in status)])

    def _one_line(self, report: Report) -> str:
        n = len(report.findings)
        found = "no findings" if not n else f"{n} finding{'s' if n != 1 else ''} ({', '.join(sorted(report.codes()))})"
        where = f"; this rank's report: {self.own_path}" if self.shared_path is not None else ""
        gatherer = "rank 0" if self.shared_path is not None else "local rank 0 of this node"
        return f"torchlint.sanitize{report.scope()}: {found}; the summary of all ranks is printed by {gatherer}{where}"


class GatheredReport(Report):
    """The findings of several ranks, each with the ranks that saw it."""

    def __init__(self, world_size: int, ranks: list[int]):
        super().__init__()
        self.world_size = world_size
        self.gathered_ranks = ranks
        self.failures: dict[int, str] = {}  # rank -> the exception that ended its run

    def scope(self) -> str:
        ranks = self.gathered_ranks
        if ranks == list(range(self.world_size)):
            return f" [all {self.world_size} ranks]"
        return f" [ranks {','.join(map(str, ranks))} of {self.world_size}]"

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["world_size"] = self.world_size
        data["ranks"] = list(self.gathered_ranks)
        data["failures"] = {str(r): text for r, text in sorted(self.failures.items())}
        return data


def describe_failure(failure: BaseException | None) -> str | None:
    """``RuntimeError: boom`` for the exception that ended a rank's run."""
    if failure is None:
        return None
    if isinstance(failure, Terminated):
        return "stopped by SIGTERM (the launcher stops the other ranks when one fails)"
    text = str(failure).strip().splitlines()
    described = f"{type(failure).__name__}: {text[0]}" if text else type(failure).__name__
    return described if len(described) <= _MAX_FAILURE else described[: _MAX_FAILURE - 3] + "..."


def merge(reports: dict[int, dict[str, Any]], world_size: int) -> GatheredReport:
    """One report from the JSON reports of several ranks: a finding (code, file,
    line) seen by several ranks is one entry with its count on each."""
    merged = GatheredReport(world_size, sorted(reports))
    by_key: dict[tuple[str, str, int], Finding] = {}
    for rank in sorted(reports):
        data = reports[rank]
        for item in data.get("findings", []):
            finding = Finding.from_dict(item)
            key = (finding.code, finding.filename, finding.lineno)
            entry = by_key.get(key)
            if entry is None:
                entry = by_key[key] = Finding.from_dict(item)
                entry.count, entry.rank, entry.count_by_rank = 0, None, {}
                merged.findings.append(entry)
            entry.count += finding.count
            entry.count_by_rank[rank] = entry.count_by_rank.get(rank, 0) + finding.count
        for note in data.get("notes", []):
            if note not in merged.notes:
                merged.notes.append(note)
        if data.get("failure"):
            merged.failures[rank] = data["failure"]
            merged.notes.append(f"rank {rank} stopped with {data['failure']}")
    return merged
