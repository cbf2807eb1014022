"""Task registry. A new task is one module defining a :class:`Task` and one entry here."""

from __future__ import annotations

from harness.tasks.base import Attribute, Task
from harness.tasks.vibe import VIBE_TASKS

TASKS: dict[str, Task] = {task.name: task for task in VIBE_TASKS}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    return TASKS[name]


__all__ = ["TASKS", "Attribute", "Task", "get_task"]
