"""The client's answer shapes (`relay/replies.py`) held to the relay's pydantic models: the same
fields, and on generated answers, valid and not, the same verdict and the same values."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from companion.relay import models as m
from companion.relay import replies as r
from companion.relayclient import client as relay_client

JSON_SCALARS = (
    st.none() | st.booleans() | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
)  # fmt: skip
JUNK = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _valid(kind: r.Kind) -> st.SearchStrategy[Any]:
    """JSON values `kind` should accept: taken from the shape, judged by the model."""
    if isinstance(kind, r.Text):
        return st.text(max_size=12)
    if isinstance(kind, r.Integer):
        return st.integers()
    if isinstance(kind, r.Number):
        return st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(kind, r.Boolean):
        return st.booleans()
    if isinstance(kind, r.Base64):
        return st.binary(max_size=24).map(r.b64encode)
    if isinstance(kind, r.OneOf):
        return st.sampled_from(kind.choices)
    if isinstance(kind, r.ListOf):
        return st.lists(_valid(kind.item), max_size=3)
    if isinstance(kind, r.MapOf):
        return st.dictionaries(st.text(max_size=6), _valid(kind.item), max_size=3)
    if isinstance(kind, r.Nullable):
        return st.none() | _valid(kind.item)
    assert isinstance(kind, r.Shape), kind
    return st.fixed_dictionaries({name: _valid(k) for name, k in _kinds(kind).items()})


def _kinds(shape: r.Shape) -> dict[str, r.Kind]:
    return {**shape.required, **{name: k for name, (k, _) in shape.optional.items()}}


def _near_miss(kind: r.Kind) -> st.SearchStrategy[Any]:
    """Values close to valid ones that a careless reader might take."""
    near: list[st.SearchStrategy[Any]] = [JUNK]
    if isinstance(kind, r.Integer):
        near += [st.booleans(), st.integers().map(float), st.integers().map(str)]
    if isinstance(kind, r.Number):
        near += [st.booleans(), st.integers().map(str)]
    if isinstance(kind, r.Base64):
        near += [st.sampled_from(["abc", "a===", "YQ", "YQ=", "-_8=", "YQ==\n", " YQ=="])]
    if isinstance(kind, r.OneOf):
        near += [st.sampled_from([c.upper() for c in kind.choices] + [""])]
    if isinstance(kind, r.ListOf | r.MapOf | r.Nullable):
        near += [_valid(kind.item)]  # one item where a list or object is expected, and back
    if isinstance(kind, r.ListOf):
        near += [st.lists(_near_miss(kind.item), min_size=1, max_size=2)]
    if isinstance(kind, r.Shape):
        near += [_answers(kind)]
    return st.one_of(near)


def _answers(shape: r.Shape) -> st.SearchStrategy[dict[str, Any]]:
    """Objects whose every field is valid, missing, or a near miss, plus unknown fields."""

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, kind in _kinds(shape).items():
            pick = draw(st.integers(0, 9))
            if pick < 7:
                out[name] = draw(_valid(kind))
            elif pick < 9:
                out[name] = draw(_near_miss(kind))
        out.update(draw(st.dictionaries(st.sampled_from(["extra", "x_new"]), JUNK, max_size=1)))
        return out

    return build()


def _model(shape: r.Shape) -> type[BaseModel]:
    model = getattr(m, shape.model)
    assert issubclass(model, BaseModel)
    return model


def _values(value: Any) -> Any:
    """A validated model as plain values (`model_dump` would base64 the bytes again)."""
    if isinstance(value, BaseModel):
        return {name: _values(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, list):
        return [_values(v) for v in value]
    if isinstance(value, dict):
        return {k: _values(v) for k, v in value.items()}
    return value


def _by_model(model: type[BaseModel], body: str) -> dict[str, Any] | None:
    try:
        return _values(model.model_validate_json(body, strict=True))
    except ValidationError:
        return None


def _by_shape(shape: r.Shape, body: str) -> dict[str, Any] | None:
    try:
        return r.read_reply(shape, body)
    except r.ReplyError:
        return None


SHAPES = {s.model: s for s in r.SHAPES}


def _nested(shape: r.Shape) -> list[r.Shape]:
    out = [shape]
    for kind in _kinds(shape).values():
        while isinstance(kind, r.ListOf | r.Nullable | r.MapOf):
            kind = kind.item
        if isinstance(kind, r.Shape):
            out += _nested(kind)
    return out


ALL_SHAPES = [s for top in r.SHAPES for s in _nested(top)]


@pytest.mark.parametrize("shape", ALL_SHAPES, ids=lambda s: s.model)
def test_each_shape_names_exactly_its_models_fields(shape: r.Shape) -> None:
    model = _model(shape)
    assert sorted(shape.fields) == sorted(model.model_fields)
    required = {name for name, f in model.model_fields.items() if f.is_required()}
    assert set(shape.required) == required


def test_every_answer_the_client_parses_has_a_shape() -> None:
    """The client reads each answer through a shape, and no longer imports the models."""
    text = Path(relay_client.__file__).read_text(encoding="utf-8")
    assert "relay.models" not in text and "import models" not in text
    used = {name for name in dir(r) if isinstance(getattr(r, name), r.Shape)}
    for name in used:
        if getattr(r, name) in r.SHAPES:
            assert f"replies.{name}" in text, name


@pytest.mark.parametrize("name", sorted(SHAPES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_shape_and_model_agree_on_every_answer(name: str, data: st.DataObject) -> None:
    shape = SHAPES[name]
    answer = data.draw(_answers(shape) | _near_miss(shape), label="answer")
    body = json.dumps(answer)
    expected = _by_model(_model(shape), body)
    got = _by_shape(shape, body)
    assert got == expected, (body, got, expected)


@pytest.mark.parametrize("name", sorted(SHAPES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_valid_answer_is_read_to_the_models_values(name: str, data: st.DataObject) -> None:
    shape = SHAPES[name]
    body = json.dumps(data.draw(_valid(shape), label="answer"))
    expected = _by_model(_model(shape), body)
    assert expected is not None, body  # the strategy makes answers the model accepts
    assert r.read_reply(shape, body) == expected


def _sample(kind: r.Kind) -> Any:
    """One fixed valid value of `kind`, with something in every list and object."""
    if isinstance(kind, r.Text):
        return "t"
    if isinstance(kind, r.Integer):
        return 7
    if isinstance(kind, r.Number):
        return 2.5
    if isinstance(kind, r.Boolean):
        return True
    if isinstance(kind, r.Base64):
        return "YWJj"
    if isinstance(kind, r.OneOf):
        return kind.choices[-1]
    if isinstance(kind, r.ListOf):
        return [_sample(kind.item)]
    if isinstance(kind, r.MapOf):
        return {"k": _sample(kind.item)}
    if isinstance(kind, r.Nullable):
        return _sample(kind.item)
    assert isinstance(kind, r.Shape), kind
    return {name: _sample(k) for name, k in _kinds(kind).items()}


WRONG = [None, True, False, 0, -1, 2**70, 1.0, 1.5, "", "x", "7", "YQ==\n", " YQ==", "YQ",
         "a===", "-_8=", "OK", "HUMAN", [], [None], ["t"], [7], {}, {"k": None}]  # fmt: skip


def _variants(value: Any) -> list[Any]:
    """`value` with each field (at every depth) missing or replaced by each WRONG value."""
    out: list[Any] = [w for w in WRONG]
    if isinstance(value, dict):
        for name, v in value.items():
            out.append({k: x for k, x in value.items() if k != name})
            out += [{**value, name: w} for w in _variants(v)]
    if isinstance(value, list) and value:
        out += [[w] for w in _variants(value[0])]
    return out


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_and_model_agree_field_by_field(name: str) -> None:
    """Every field missing or wrong in turn, at every depth: the same verdict and values."""
    shape = SHAPES[name]
    model = _model(shape)
    answers = [_sample(shape), *_variants(_sample(shape))]
    disagree = []
    for answer in answers:
        body = json.dumps(answer)
        if _by_shape(shape, body) != _by_model(model, body):
            disagree.append(body)
    assert disagree == [], f"{len(disagree)} of {len(answers)} disagree, e.g. {disagree[:3]}"


def test_what_the_relay_sends_is_read_back() -> None:
    """A record serialized by the relay's own model comes back through the client's shape."""
    out = m.RecordOut(
        file_id="ab" * 16, rev=3, parent_rev=2, sealed=b"\x00sealed\xff", blobs=["cd" * 16],
        seq=9, device_id="dev", device_kind="human", device_name="Ana's laptop", committed_at=1.5,
    )  # fmt: skip
    page = m.ChangesOut(records=[out], seq=9, vault_seq=9, more=False).model_dump_json()
    got = r.read_reply(r.CHANGES, page)
    assert got["records"][0]["sealed"] == b"\x00sealed\xff"
    assert got == _values(m.ChangesOut.model_validate_json(page))


@pytest.mark.parametrize(
    "body",
    [b"", b"null", b"[]", b"{", b"\xff\xfe", b'{"released": NaN}', b'{"released": true, }',
     b'"released"', b"[" * 100_000],
)  # fmt: skip
def test_what_is_not_an_answer_is_a_reply_error(body: bytes) -> None:
    with pytest.raises(r.ReplyError):
        r.read_reply(r.RELEASE, body)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_numbers_json_does_not_have_are_refused(constant: str) -> None:
    body = '{"name": "n", "holder": "h", "expires": CONST, "acquired": true}'.replace(
        "CONST", constant
    )
    with pytest.raises(r.ReplyError, match="not JSON"):
        r.read_reply(r.LEASE, body)


def test_a_string_that_is_not_unicode_text_is_refused() -> None:
    with pytest.raises(r.ReplyError, match="Unicode"):
        r.read_reply(r.MISSING, '{"missing": ["\\ud800"]}')


def test_a_refusal_names_the_field_and_never_echoes_the_value() -> None:
    secret = base64.b64encode(b"k" * 8).decode() + "!"
    with pytest.raises(r.ReplyError) as err:
        r.read_reply(r.KEY, json.dumps({"key": secret, "sha256": "x"}))
    assert "KeyOut.key" in str(err.value) and secret not in str(err.value)
