"""Safe parsing: hostile documents are refused with a ``malformed`` issue, never parsed or executed."""

from __future__ import annotations

import pytest

from placer.solver.jobs import parse
from placer.solver.jobs.errors import JobValidationError


def _code(fn, text: str) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(JobValidationError) as info:
        fn(text, source="doc")
    assert info.value.issues[0].path == "doc"
    return info.value.issues[0].code


def test_yaml_object_constructing_tags_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "pwned"
    text = f"!!python/object/apply:os.system ['touch {marker}']"
    assert _code(parse.parse_yaml, text) == "malformed"
    assert not marker.exists()


def test_yaml_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    assert _code(parse.parse_yaml, "\n".join(lines)) == "malformed"


def test_deep_nesting_is_refused_in_every_syntax() -> None:
    deep = 10_000
    assert _code(parse.parse_json, "[" * deep + "]" * deep) == "malformed"
    assert _code(parse.parse_yaml, "[" * deep + "]" * deep) == "malformed"
    assert _code(parse.parse_xml, "<a>" * deep + "</a>" * deep) == "malformed"


def test_xml_entities_and_dtds_are_refused() -> None:
    billion_laughs = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><lolz>&lol1;</lolz>'
    )
    xxe = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>'
    assert _code(parse.parse_xml, billion_laughs) == "malformed"
    assert _code(parse.parse_xml, xxe) == "malformed"


def test_json_rejects_nan_and_duplicate_keys() -> None:
    assert _code(parse.parse_json, '{"a": NaN}') == "malformed"
    assert _code(parse.parse_json, '{"a": 1, "a": 2}') == "malformed"


def test_oversized_documents_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "MAX_DOCUMENT_CHARS", 100)
    assert _code(parse.parse_json, "[" + "1," * 100 + "1]") == "malformed"


def test_well_formed_documents_parse() -> None:
    assert parse.parse_json('{"a": [1, 2.5, true, null]}') == {"a": [1, 2.5, True, None]}
    assert parse.parse_yaml("a: &x [1]\nb: *x\n") == {"a": [1], "b": [1]}
    assert parse.parse_xml("<Job><JobId>1</JobId></Job>").find("JobId").text == "1"  # type: ignore[union-attr]


def test_yaml_value_a_constructor_refuses_is_malformed_not_a_traceback() -> None:
    # Regression: "2001-12-99" looks like a YAML timestamp; the safe loader's date constructor raised
    # ValueError, which escaped read_text as a traceback.
    from placer.solver.jobs.load import read_text

    assert _code(parse.parse_yaml, "x: 2001-12-99") == "malformed"
    [r] = read_text("version: 1\nresources: []\ntasks: []\nwhen: 2001-12-99\n", source="flux.yaml")
    assert not r.ok and r.errors[0].code == "malformed" and "day is out of range" in r.errors[0].message
