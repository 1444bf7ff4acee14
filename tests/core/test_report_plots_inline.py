"""A report page as the Prefect UI shows it: the PNGs in its folder put in as data URIs, nothing else changed."""

from __future__ import annotations

import base64

from segbench.flows import prefect_ui
from segbench.flows.prefect_ui import with_plots


def test_plots_in_the_page_folder_are_put_in_and_other_links_left_alone(tmp_path, monkeypatch):
    (tmp_path / "small.png").write_bytes(b"\x89PNG small")
    (tmp_path / "large.png").write_bytes(b"\x89PNG" + b"x" * 64)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nested.png").write_bytes(b"\x89PNG nested")
    page = tmp_path / "report.md"
    page.write_text("# Report\n\n| a | b |\n\n![small plot](small.png)\n![too large](large.png)\n"
                    "![missing](gone.png)\n![nested](sub/nested.png)\n![outside](../small.png)\n[a link](small.png)\n")
    monkeypatch.setattr(prefect_ui, "PLOT_BYTES_SHOWN", 32)

    shown = with_plots(page)

    small, nested = (base64.b64encode(data).decode() for data in (b"\x89PNG small", b"\x89PNG nested"))
    assert shown == (f"# Report\n\n| a | b |\n\n![small plot](data:image/png;base64,{small})\n![too large](large.png)\n"
                     f"![missing](gone.png)\n![nested](data:image/png;base64,{nested})\n![outside](../small.png)\n"
                     "[a link](small.png)\n")
