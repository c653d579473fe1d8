"""The batch size ``replay --ray`` picks when none is given (no Ray instance started)."""

from __future__ import annotations

import pytest

pytest.importorskip("ray")

from roadcheck.integrations.ray import DEFAULT_BATCH, MAX_BATCH, auto_batch_size


@pytest.mark.parametrize(("files", "cpus", "size"), [
    (100_000, 2, MAX_BATCH),        # one machine: a task's fixed cost spread over many files
    (1_000_000, 2, MAX_BATCH),
    (1_000_000, 1600, 78),          # a cluster: eight batches a CPU, every CPU busy
    (1_000_000, 100_000, DEFAULT_BATCH),
    (10, 2, DEFAULT_BATCH),         # never below the default
    (0, 2, DEFAULT_BATCH),
])
def test_batches_spread_the_files_eight_a_cpu(files: int, cpus: int, size: int) -> None:
    """About eight batches a CPU of the cluster, between the default and the largest size."""
    assert auto_batch_size(files, cpus) == size
