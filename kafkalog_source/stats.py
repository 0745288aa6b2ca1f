"""Counters a read keeps about what it decoded and, above all, what it skipped."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger("kafkalog")


@dataclass
class ReadStats:
    """What one read (a split, a file, or a whole ``read_table``) saw. Nothing is skipped silently."""

    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes_read: int = 0
    control_batches: int = 0
    aborted_batches: int = 0
    # DROPMALFORMED / PERMISSIVE / ignoreCorruptFiles
    malformed_batches: int = 0
    malformed_bytes: int = 0
    corrupt_files: int = 0
    missing_files: int = 0
    # file tails
    truncated_tails: int = 0
    zero_tails: int = 0
    tail_bytes: int = 0
    problems: list[str] = field(default_factory=list)

    def note(self, message: str, level: int = logging.WARNING) -> None:
        """Record a problem, log it, and keep the first 100 messages."""
        log.log(level, message)
        if len(self.problems) < 100:
            self.problems.append(message)

    def merge(self, other: ReadStats) -> None:
        """Add another read's counters into this one."""
        for name in self.__dataclass_fields__:
            if name == "problems":
                room = 100 - len(self.problems)
                self.problems.extend(other.problems[: max(room, 0)])
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def skipped(self) -> bool:
        """Whether anything was left undecoded: malformed batches, tails, ignored files."""
        return bool(
            self.malformed_batches
            or self.truncated_tails
            or self.zero_tails
            or self.corrupt_files
            or self.missing_files
        )

    def summary(self) -> str:
        """One line for logs."""
        parts = [f"{self.records} records in {self.batches} batches from {self.segments} segments"]
        if self.malformed_batches:
            parts.append(
                f"skipped {self.malformed_batches} malformed batches ({self.malformed_bytes} bytes)"
            )
        if self.truncated_tails or self.zero_tails:
            parts.append(
                f"{self.truncated_tails} truncated and {self.zero_tails} zero-filled tails "
                f"({self.tail_bytes} bytes not decoded)"
            )
        if self.corrupt_files or self.missing_files:
            parts.append(
                f"ignored {self.corrupt_files} corrupt, {self.missing_files} missing files"
            )
        return "; ".join(parts)
