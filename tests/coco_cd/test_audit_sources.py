"""The checks an audit's sources pass before any round is made (the command and the flow share them)."""

from __future__ import annotations

import pytest

from segbench.core.errors import InputError
from segbench.tasks.coco_cd.audit import audit_sources


@pytest.mark.parametrize("per_group", [0, -3])
def test_an_audit_of_no_images_per_group_is_refused_before_the_build_is_read(tmp_path, per_group):
    with pytest.raises(InputError, match=f"at least one image per group, not {per_group}") as refused:
        audit_sources(tmp_path / "not-built", per_group)
    assert "--per-group 1" in str(refused.value)
