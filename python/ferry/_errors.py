"""ferry.Error: every failure ferry reports, with ferry's error code and message."""

CODES = ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE")


class Error(Exception):
    """A ferry error. `code` is "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "UNIMPLEMENTED",
    "UNAVAILABLE" (other processes stopped taking part) or "INTERNAL" (a ferry bug); `message` says what went wrong and what to change; str(e) is
    "CODE: message", as the C++ library's what() is."""

    def __init__(self, message, code="INTERNAL"):
        if code not in CODES:
            raise ValueError(f"ferry.Error: unknown code {code!r} (one of {', '.join(CODES)})")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def __reduce__(self):
        return (type(self), (self.message, self.code))


def invalid_argument(message):
    return Error(message, "INVALID_ARGUMENT")


def unimplemented(message):
    return Error(message, "UNIMPLEMENTED")
