"""What every dataset shares: errors, COCO I/O, masks, ρ-controlled splits, manifests, build keys and
resumable stages, report helpers, annotator agreement and DVC versioning.

Pure like :mod:`segbench.tasks` (no Prefect, no HTTP); only :mod:`segbench.core.versioning` runs
git and DVC. Nothing here names a dataset.
"""
