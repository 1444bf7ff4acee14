"""COCO-CD's annotation round kind: the context audit (seed 002, Table 5).

People label each sampled validation image indoor, outdoor or ambiguous (template
``coco_cd_context``); after each ingest :func:`segbench.flows.coco_cd.audit.write_audit_report`
compares their majority with the automatic labels. Registered in :mod:`segbench.registry`.
"""

from __future__ import annotations

from segbench.annotation_ui.kinds import RoundKind
from segbench.annotation_ui.label_configs import LabelConfig
from segbench.registry import Ref
from segbench.tasks.coco_cd import audit

CONTEXT_AUDIT = RoundKind(
    name=audit.KIND,
    label_config=LabelConfig("coco_cd_context"),
    report=Ref("segbench.flows.coco_cd.audit:write_audit_report"),
    create=Ref("segbench.cli.coco_cd:create_audit_command"),
    automatic_labels=Ref("segbench.tasks.coco_cd.audit:automatic_contexts"),
)
