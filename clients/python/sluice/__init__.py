"""A client of `sluice serve`, with the standard library only.

Rate limits (limits.consume / allow / assert_ / peek), jobs, groups and
tenants (Sluice), a threaded Worker, and SharedBudget: a call budget kept by
the server and shared by every process that calls one upstream.
"""

from .budget import SharedBudget, budgeted
from .client import FINISHED_STATES, Groups, Jobs, Limits, Sluice, Tenants
from .errors import (
    AuthError,
    ConflictError,
    InvalidError,
    LimitedError,
    NotFoundError,
    SluiceError,
    UnavailableError,
    UnsupportedError,
)
from .worker import JobContext, JobFailure, Snooze, Worker, permanent

__all__ = [
    "Sluice", "Limits", "Jobs", "Groups", "Tenants", "FINISHED_STATES",
    "Worker", "JobContext", "Snooze", "JobFailure", "permanent",
    "SharedBudget", "budgeted",
    "SluiceError", "LimitedError", "InvalidError", "UnavailableError", "ConflictError",
    "NotFoundError", "AuthError", "UnsupportedError",
]

__version__ = "0.1.0"
