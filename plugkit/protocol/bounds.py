"""Field bounds that follow the runner's configured Limits. They are checked when a request
is validated, against the Limits given as pydantic's validation context (the runner passes
its RunnerConfig's: runner/rpc/dispatch.py), never frozen into the model at import: the
environment is read once, at boot, by the runner. Without a context the defaults apply."""

from typing import Any, Optional

from pydantic import AfterValidator, ValidationInfo
from pydantic_core import PydanticCustomError

from plugkit.config import Limits

_DEFAULTS = Limits()


def _limits(info: ValidationInfo) -> Limits:
    return info.context if isinstance(info.context, Limits) else _DEFAULTS


def max_chars(limit: str) -> AfterValidator:
    """A string (or None) no longer than Limits.<limit> characters."""

    def check(value: Optional[str], info: ValidationInfo) -> Optional[str]:
        bound = getattr(_limits(info), limit)
        if value is not None and len(value) > bound:
            # pydantic's own wording and type, as a Field(max_length=...) would say it.
            raise PydanticCustomError("string_too_long", "String should have at most {max_length} characters",
                                      {"max_length": bound})
        return value

    return AfterValidator(check)


def at_most(limit: str) -> AfterValidator:
    """A number no greater than Limits.<limit>."""

    def check(value: Any, info: ValidationInfo) -> Any:
        bound = getattr(_limits(info), limit)
        if value > bound:
            raise PydanticCustomError("less_than_equal", "Input should be less than or equal to {le}", {"le": bound})
        return value

    return AfterValidator(check)
