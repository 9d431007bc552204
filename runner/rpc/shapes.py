"""Lifecycle model objects -> the wire's Result models (shared by gate, mutable, prd, evidence)."""

from typing import Any, Optional, Type, TypeVar

from pydantic import BaseModel

from plugkit.lifecycle.phases import Check
from plugkit.lifecycle.state import Transition
from plugkit.protocol.lifecycle import ConditionInfo, PrdItem, ReceiptInfo, TransitionInfo

R = TypeVar("R", bound=BaseModel)


def shape(model: Type[R], obj: BaseModel, **extra: Any) -> R:
    """Copy the fields the wire model declares (storage models may carry more)."""
    fields = set(model.model_fields) - set(extra)
    return model.model_validate({**obj.model_dump(mode="json", include=fields), **extra})


def transition(t: Optional[Transition]) -> Optional[TransitionInfo]:
    return None if t is None else shape(TransitionInfo, t)


def conditions(checks: list[Check]) -> list[ConditionInfo]:
    return [ConditionInfo(name=c.name, holds=c.holds, value=c.value) for c in checks]


def item(obj: BaseModel, approvals: dict) -> PrdItem:
    return shape(PrdItem, obj, approved=getattr(obj, "id") in approvals)


def receipt(obj: BaseModel) -> ReceiptInfo:
    return shape(ReceiptInfo, obj)
