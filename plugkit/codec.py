"""The wire's JSON (the client's hot path, plugkit.wire), straight from CPython's C accelerator (`_json`).

Why not `import json`: json.decoder and json.scanner import `re` at module level, and `re` pulls
in enum, functools and collections: about 6 ms of a ~35 ms `plugkit exec:bash true` on a small
machine (`python -X importtime`), for two calls that never touch a regular expression. The C
scanner and encoder below are the ones json.loads/json.dumps run with their default settings, so
the text in and out is the same (tests/unit/test_wire_codec.py compares them); a Python without
`_json` gets the json module itself.
"""

try:
    import _json
except ImportError:  # another implementation: the real module (slower import, same results)
    _json = None

_SPACE = " \t\n\r"


class _Defaults:
    """What json.JSONDecoder() hands its C scanner: plain dicts, ints and floats."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


def _refuse(obj: object) -> object:
    raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")


if _json is not None:
    _scan = _json.make_scanner(_Defaults())
    # json.dumps(obj) with its defaults: ensure_ascii, check_circular, allow_nan, ", " and ": ".
    _encode = _json.make_encoder({}, _refuse, _json.encode_basestring_ascii, None, ": ", ", ",
                                 False, False, True)

    def loads(text: "str | bytes") -> object:
        """json.loads: a ValueError for anything that is not one JSON document."""
        if isinstance(text, (bytes, bytearray)):
            text = text.decode("utf-8")
        start = len(text) - len(text.lstrip(_SPACE))
        try:
            value, end = _scan(text, start)
        except Exception:  # noqa: BLE001 - StopIteration when there is no value; for most other
            # malformed text the C scanner reports through json.decoder, not imported here, and
            # raises SystemError instead ("returned NULL without setting an exception").
            end = -1
        if end < 0 or text[end:].strip(_SPACE):  # not one JSON document: the error path pays for
            import json  # the real module, whose JSONDecodeError (a ValueError) says what is wrong

            return json.loads(text)
        return value

    def dumps(obj: object) -> str:
        """json.dumps(obj) with its default settings."""
        if isinstance(obj, str):  # the encoder's top level takes containers and scalars alike,
            return _json.encode_basestring_ascii(obj)  # but a bare str goes the short way in json too
        return "".join(_encode(obj, 0))
else:
    from json import dumps, loads  # noqa: F401
