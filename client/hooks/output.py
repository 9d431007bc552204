"""Building blocks the platform adapters share: a JSON answer with exit 0, the
model-context shape, and "say nothing". What each platform prints is still its
adapter's table; only these few shapes are common to them. JSON through plugkit.codec: the
hook's hot path never imports json (and re behind it)."""

from plugkit import codec


def answer(obj: dict) -> tuple[bytes, int]:
    # Always exit 0 with JSON: exit 2 would make the platforms ignore stdout.
    return (codec.dumps(obj) + "\n").encode(), 0


def context(event_name: str, empty: tuple[bytes, int]):
    """A renderer putting the answer's context in hookSpecificOutput.additionalContext,
    the field the model reads (systemMessage is shown to the user instead)."""

    def render(a) -> tuple[bytes, int]:
        if not a.context:
            return empty
        return answer({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": a.context}})

    return render


def constant(result: tuple[bytes, int]):
    def render(a) -> tuple[bytes, int]:
        return result

    return render
