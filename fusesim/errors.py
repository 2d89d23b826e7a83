"""One error type for every mistake a user can make, so the CLI can print one line and exit 2."""

from __future__ import annotations


class InputError(Exception):
    """A user's input is wrong: names the file, the case (if any) and the field."""

    def __init__(self, file: str | None, field: str | None, message: str, case: str | None = None):
        self.file = file
        self.case = case
        self.field = field
        self.message = message
        super().__init__(self.line())

    def line(self) -> str:
        parts = [str(self.file) if self.file else "<input>"]
        if self.case:
            parts.append(f"case {self.case}")
        if self.field:
            parts.append(f"field {self.field}")
        return ": ".join(parts) + f": {self.message}"


def pydantic_error(file: str, exc: Exception, case: str | None = None, prefix: str = "") -> InputError:
    """Turn the first pydantic validation error into an InputError naming the dotted field path."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        errs = errors()
        if errs:
            e = errs[0]
            loc = ".".join(str(p) for p in e.get("loc", ()) if p != "__root__")
            field = ".".join(p for p in (prefix, loc) if p) or None
            msg = e.get("msg", str(exc)).removeprefix("Value error, ")
            if not loc and ": " in msg and " " not in msg.partition(": ")[0]:
                loc, _, msg = msg.partition(": ")
                field = ".".join(p for p in (prefix, loc) if p)
            if e.get("type") == "extra_forbidden":
                msg = "unknown key"
            elif e.get("type") == "missing":
                msg = "missing required field"
            inp = e.get("input")
            if e.get("type") not in ("missing", "extra_forbidden") and not isinstance(inp, dict | list):
                msg = f"{msg} (got {inp!r})"
            return InputError(file, field, msg, case=case)
    return InputError(file, prefix or None, str(exc), case=case)
