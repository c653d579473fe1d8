"""Each framework test gets its own event loop, closed when the test ends.

pydantic-ai's ``run_sync`` runs on the thread's current event loop and leaves
it set; a later ``asyncio.run`` then drops it unclosed, and the garbage
collector reports it in whichever test happens to run next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _own_event_loop() -> Iterator[None]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()
