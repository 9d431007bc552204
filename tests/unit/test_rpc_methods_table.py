"""The lazy methods table: every namespace loads, stays in its namespace, documents its methods."""

import pytest

from runner.rpc.namespaces import NAMESPACES, Methods, build_methods


def test_every_namespace_loads_with_prefixed_documented_methods():
    methods = build_methods()
    assert len(methods) == 0  # nothing is imported until asked for
    methods.load_all()
    prefixes = {name.partition(".")[0] for name in methods}
    assert prefixes == set(NAMESPACES)
    for name in methods:
        assert methods[name].__doc__ and name in methods[name].__doc__, f"{name}: docstring is the contract"


def test_unknown_method_and_namespace_are_key_errors():
    methods = build_methods()
    with pytest.raises(KeyError):
        methods["task.nope"]
    with pytest.raises(KeyError):
        methods["nonamespace.call"]


def test_a_module_cannot_define_methods_outside_its_namespace():
    class Rogue:
        __name__ = "rogue"
        METHODS = {"task.exec": lambda ctx: None}

    table = Methods({"gate": "rogue"})
    table._namespaces = {"gate": "rogue"}
    with pytest.raises(ValueError, match="outside its namespace"):
        table._add(Rogue, "gate")
