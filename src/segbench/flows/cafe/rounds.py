"""CAFE's annotation round kind: the verification of candidate samples (seed 000, Sec. 3).

People answer four yes/no questions per candidate (template ``cafe_verification``, see
:mod:`segbench.tasks.cafe.verification`); after each ingest
:func:`segbench.flows.cafe.verification.write_verification_report` counts what they verified.
Registered in :mod:`segbench.registry`.
"""

from __future__ import annotations

from segbench.annotation_ui.kinds import RoundKind
from segbench.annotation_ui.label_configs import LabelConfig
from segbench.registry import Ref
from segbench.tasks.cafe import verification

VERIFICATION = RoundKind(
    name=verification.KIND,
    label_config=LabelConfig(verification.LABEL_CONFIG),
    report=Ref("segbench.flows.cafe.verification:write_verification_report"),
    create=Ref("segbench.cli.cafe.build:create_verification_command"),
)
