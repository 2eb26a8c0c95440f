"""Store: the only layer that touches a database (SQLite, stdlib `sqlite3`).

`RunStore` keeps runs, their tasks and attempts so that a killed run resumes without losing
or repeating work; `VerdictCache` remembers verdicts by what decides them.
"""

from formalbench.store.db import StoreError, connect, integrity_ok, transaction
from formalbench.store.runs import RunInfo, RunMismatchError, RunStore
from formalbench.store.verdict_cache import VerdictCache, verdict_key

__all__ = [
    "RunInfo",
    "RunMismatchError",
    "RunStore",
    "StoreError",
    "VerdictCache",
    "connect",
    "integrity_ok",
    "transaction",
    "verdict_key",
]
