"""The report opened in a real headless browser (Debian's chromium): every image loads.

The store holds a real short bench run on the embedded model (SmolLM2, 2 MMLU tasks, the direct
baseline and a 2-agent chain) plus the scripted run of conftest for breadth.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from overseer.cli import main

from .conftest import build_scripted

_CHECK = (
    '<script>window.addEventListener("load", () => {'
    "const all = [...document.images];"
    "const ok = all.filter(i => i.complete && i.naturalWidth > 0).length;"
    'const d = document.createElement("div"); d.id = "imgcheck";'
    'd.textContent = ok + "/" + all.length + "/" + document.querySelectorAll("svg").length;'
    "document.body.appendChild(d);});</script>"
)


def chromium() -> str:
    found = shutil.which("chromium")
    assert found, "Debian's chromium is needed: apt-get install chromium (scripts/test.sh does)"
    return found


def loaded_images(page: Path, work: Path) -> tuple[int, int, int]:
    """(images loaded, images, inline SVGs) of `page` in headless chromium: a copy of the page
    with a script that writes the counts into the DOM once the page has loaded."""
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(page.read_text().replace("</body>", _CHECK + "</body>"))
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={work / 'chromium-profile'}",
        "--virtual-time-budget=10000",
    ]
    done = subprocess.run(
        [chromium(), *flags, "--dump-dom", probe.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    probe.unlink()
    m = re.search(r'<div id="imgcheck">(\d+)/(\d+)/(\d+)</div>', done.stdout)
    assert m, f"no image count in the page's DOM; chromium said: {done.stderr[-400:]}"
    return int(m[1]), int(m[2]), int(m[3])


def test_the_probe_sees_a_broken_image(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text('<html><body><img src="data:image/png;base64,AAAA"></body></html>')
    assert loaded_images(page, tmp_path) == (0, 1, 0)


@pytest.mark.e2e
def test_report_of_a_real_bench_run_loads_every_image_in_chromium(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build_scripted(tmp_path)
    monkeypatch.chdir(tmp_path)
    store = str(data.store)
    code = main(
        [
            "bench",
            "--model",
            "smollm2-135m",
            "--suite",
            "mmlu-sample",
            "--configs",
            "direct,chain",
            "--limit",
            "2",
            "--agents",
            "2",
            "--rounds",
            "1",
            "--store",
            store,
            "--no-progress",
            "--allow-errors",
        ]
    )
    assert code == 0, capsys.readouterr().err
    out = tmp_path / "report"
    code = main(
        [
            "report",
            "--store",
            store,
            "--out",
            str(out),
            "--prune",
            str(data.prune),
            "--monitor",
            str(data.monitor),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    md = (out / "report.md").read_text()
    assert "| mmlu-sample | smollm2-135m | chain |" in md  # the real run is in the report
    loaded, total, _ = loaded_images(out / "index.html", tmp_path)
    assert total >= 8 and loaded == total
    link = re.search(r"\(traces/(\d+-chain-[^)]+\.html)\)", md)
    assert link, "the real chain run's trace page is linked from the per-task table"
    loaded, total, svgs = loaded_images(out / "traces" / link[1], tmp_path)
    assert (loaded, total) == (0, 0) and svgs == 1  # the team graph is an inline SVG
