from segbench.annotation_ui.backends.labelstudio import project_title


def test_short_keys_are_kept_whole() -> None:
    assert project_title("audit-1") == "segbench · audit-1"


def test_long_keys_fit_label_studio_and_stay_distinct() -> None:
    a, b = project_title("spin-v1-quadruped-head-" + "x" * 40), project_title("spin-v1-quadruped-head-" + "y" * 40)
    assert len(a) == len(b) == 50 and a != b
