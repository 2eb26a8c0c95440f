"""Errors a user can act on.

Every error raised to the command line is a `FormalbenchError`: the CLI prints its message
as one line on stderr and exits with `exit_code`, never with a traceback. Messages name the
input (file, line, option) and what is wrong with it.
"""


class FormalbenchError(Exception):
    """Base class of errors shown to the user as one line."""

    exit_code: int = 2


class InputError(FormalbenchError):
    """Bad input: a missing, unreadable, empty, binary or malformed file, an unknown option value."""


class ToolchainMissingError(FormalbenchError):
    """The proof assistant asked for is not installed; the message says how to install it."""


class BackendError(FormalbenchError):
    """The proof assistant could not be started or answered outside its protocol."""
