"""The request every image editor takes: an edit type and the plan of one edit.

CAFE builds these plans (``segbench.tasks.cafe.plans``); the image editors in
``segbench.providers`` carry them out. They live in a schema of their own so the editors need no
dataset code.
"""

from __future__ import annotations

import enum

from pydantic import BaseModel, ConfigDict, Field


class EditType(str, enum.Enum):
    """The three counterfactual categories; the values are the export's ``edit_type`` strings."""

    SM = "Superficial Mimicry"
    CC = "Context Conflict"
    OC = "Ontological Conflict"

    @property
    def abbr(self) -> str:
        return self.name


class EditPlan(BaseModel):
    """What to change in one target and which prompt pair the change supports.

    SM: ``pattern`` (another object's surface pattern) is painted on the target; q+ = the object,
    q- = the pattern's object. CC: everything outside the target becomes ``scene``; q+ = the object,
    q- = the concept the new context suggests. OC: the target is re-rendered in ``material``;
    q+ = the material rendering, q- = the original identity. Exactly the field of the plan's edit
    type is set.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_key: str = Field(description="'<source>:<image id>:<annotation id>'")
    edit_type: EditType
    object_name: str = Field(min_length=1, description="the target's original identity, e.g. 'vase'")
    q_pos: str = Field(min_length=1)
    q_neg: str = Field(min_length=1)
    instruction: str = Field(min_length=1, description="the edit, worded for an image-editing model")
    pattern: str | None = Field(None, description="SM: whose surface pattern, e.g. 'watermelon'")
    scene: str | None = Field(None, description="CC: the new surroundings, e.g. 'snowy mountain slope'")
    material: str | None = Field(None, description="OC: the new substance, e.g. 'amethyst crystal'")
