"""A verdict's trace event: the same keys for every variant, each filled from its own fields."""

from __future__ import annotations

import pytest

from overseer.runtime.verdicts import Approve, Guide, Replace, Rollback, Verdict, Verify

BLANK = {"text": "", "note": "", "task": ""}


@pytest.mark.parametrize(
    ("verdict", "shown"),
    [
        (Approve(by="r", reason="ok"), {}),
        (Guide("read the table", by="r", reason="hint"), {"text": "read the table"}),
        (
            Replace("the extract", "[cut]", by="r", reason="long"),
            {"text": "the extract", "note": "[cut]"},
        ),
        (Verify("check 2+2", by="r", reason="math"), {"task": "check 2+2"}),
        (Rollback(by="r", reason="rogue"), {}),
    ],
)
def test_each_variant_fills_the_shared_keys_from_its_own_fields(
    verdict: Verdict, shown: dict[str, str]
) -> None:
    fields = verdict.trace_fields()
    assert fields == {
        "action": verdict.action,
        "by": "r",
        "reason": verdict.reason,
        **BLANK,
        **shown,
    }


def test_a_replace_guidance_is_not_traced_as_its_text() -> None:
    fields = Replace("page", "[note]", guidance="look at row 3", by="r").trace_fields()
    assert (fields["text"], fields["note"]) == ("page", "[note]")
    assert "look at row 3" not in fields.values()
