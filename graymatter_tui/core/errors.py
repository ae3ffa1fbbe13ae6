"""The exceptions a person or a script may see. Each carries a one-line message."""


class GraymatterError(Exception):
    """Base class: an expected failure with a clear, one-line message."""


class InvalidInput(GraymatterError):
    """Text, an agent name, a flag value or a file that cannot be accepted."""


class NotFound(GraymatterError):
    """An ID (fact or cycle) that the store does not hold."""


class Conflict(GraymatterError):
    """The request is valid but the fact's state forbids it (e.g. pinning a tombstone)."""


class StoreError(GraymatterError):
    """The store cannot be opened or written: corrupt, unreadable, newer schema, disk full."""


class WriteFailed(GraymatterError):
    """A file the user named (an export) was refused or could not be written completely."""


class ReadOnlyStore(StoreError):
    """The store can be read but not written: this user's rights, a read-only mount, or a
    store opened for reading only."""
