"""Whether a process of this host still exists."""

from __future__ import annotations

import os


def process_exists(pid: int) -> bool:
    """True unless no process has this pid (one we may not signal still exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
