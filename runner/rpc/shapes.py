"""Core objects -> the wire's Result models: lifecycle ones (gate, mutable, prd, evidence) and
tasks (task, session, gate.verify), and `plugkit work` runs. The core never builds a protocol model; this module does."""

from typing import Any, Optional, Type, TypeVar

from pydantic import BaseModel

from plugkit.lifecycle.phases import Check
from plugkit.lifecycle.model import Transition  # not .state: the first task.* call skips the storage code
from plugkit.protocol import Chunk, Output, TaskInfo, WaitResult
from plugkit.protocol.lifecycle import ConditionInfo, PrdItem, ReceiptInfo, TransitionInfo
from plugkit.protocol.work import WorkItemInfo, WorkQueueEntry, WorkRunInfo
from runner.core.tasks import stdin_watch
from runner.core.tasks.manager import Waited
from runner.core.tasks.output import ReadResult
from runner.core.tasks.task import Task

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
    return shape(PrdItem, obj, approved=getattr(obj, "id") in approvals)  # noqa: B009  (BaseModel declares no id; the item models do)


def receipt(obj: BaseModel) -> ReceiptInfo:
    return shape(ReceiptInfo, obj)


# --- tasks: core objects -> task.* answers ------------------------------------------

def task_info(task: Task, ports: Optional[list[int]] = None) -> TaskInfo:
    return TaskInfo(
        task_id=task.id, session_id=task.session.session_id, cwd=task.cwd,
        lang=task.lang, state=task.state, pid=task.pid, exit_code=task.exit_code,
        signal=task.signal, reason=task.reason, message=task.message,
        started_at=task.started_at, ended_at=task.ended_at, duration_ms=task.duration_ms,
        bytes_out=task.bytes_out, dropped=task.bytes_out_before + task.buffer.dropped,
        waiting_for_input=stdin_watch.waiting(task), detached=task.detached, name=task.name,
        command=task.command, ports=ports or [], **_usage(task),
    )


def _usage(task: Task) -> dict:
    if task.usage_probe is None:
        return {}
    usage = task.usage_probe()  # the task's cgroup, read live; fixed once the task ended
    live = {} if task.finished else {"memory_bytes": getattr(usage, "memory_bytes", None)}
    return {"cpu_s": usage.cpu_s, "memory_peak_bytes": usage.memory_peak_bytes, **live}


def output(res: ReadResult) -> Output:
    return Output(chunks=[Chunk(stream=s, text=t) for s, t in res.chunks],
                  cursor=res.cursor, dropped=res.dropped, more=res.more)


def waited(task: Task, w: Waited) -> WaitResult:
    return WaitResult(task=task_info(task), matched=w.matched, match_cursor=w.match_cursor, timed_out=w.timed_out)


# --- plugkit work -----------------------------------------------------------------------------
# Read by attribute name, so the work core (runner.core.work.model: plain dataclasses) is not
# imported here: a task.* call never loads it.

def work_item(it: Any) -> WorkItemInfo:
    return WorkItemInfo(**{name: getattr(it, name) for name in WorkItemInfo.model_fields})


def work_run(run: Any) -> WorkRunInfo:
    fields = {name: getattr(run, name) for name in WorkRunInfo.model_fields if name not in ("items", "queue")}
    return WorkRunInfo(**fields, items=[work_item(i) for i in run.items.values()],
                       queue=[WorkQueueEntry(**vars(e)) for e in run.queue])
