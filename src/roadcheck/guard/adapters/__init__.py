"""One hook adapter per coding-agent CLI, each over :mod:`roadcheck.guard.hooks`.

Each module holds ``ADAPTER``, a :class:`~roadcheck.guard.hooks.Adapter`: how that
CLI's hook JSON reads as a guard request, and how the guard's outcome is answered
in that CLI's format. :func:`roadcheck.guard.hooks.load` imports one by name, so a
hook process imports only the adapter it runs.
"""
