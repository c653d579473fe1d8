from typing import Any

def scan_native(data: bytes, guarded: tuple[bytes, ...],
                checkpoints: tuple[bytes, ...]) -> tuple[Any, ...] | None: ...
