"""Token caps and list bounds read from an answer's JSON schema, on hand-computed schemas."""

from __future__ import annotations

import copy

from segbench.providers.answer_limits import ITEMS_WHEN_UNSAID, STRING_TOKENS, answer_tokens, token_cap, with_max_items

JUDGEMENTS = {
    "$defs": {"J": {"type": "object", "properties": {"n": {"type": "string"}, "r": {"enum": ["x", "yy"]}}}},
    "type": "object",
    "properties": {"judgements": {"type": "array", "items": {"$ref": "#/$defs/J"}}},
}


def test_every_list_is_bounded_and_the_schema_given_is_left_alone():
    before = copy.deepcopy(JUDGEMENTS)
    nested = {"type": "array", "items": {"type": "array", "items": {"type": "string"}, "maxItems": 2}}
    assert with_max_items(JUDGEMENTS, 3)["properties"]["judgements"]["maxItems"] == 3
    assert with_max_items(nested, 5) == {"type": "array", "maxItems": 5,
                                         "items": {"type": "array", "items": {"type": "string"}, "maxItems": 2}}
    assert JUDGEMENTS == before and with_max_items(JUDGEMENTS, None) is JUDGEMENTS


def test_tokens_by_hand():
    # {"ab": "<string>"}: braces 2 + key ceil(2/3) + 3 + a string
    assert answer_tokens({"type": "object", "properties": {"ab": {"type": "string"}}}) == 2 + 1 + 3 + STRING_TOKENS
    # one judgement: 2 + n (1 + 3 + string) + r (1 + 3 + the longer enum value ceil(2/3) + 2 = 3)
    item = 2 + (1 + 3 + STRING_TOKENS) + (1 + 3 + 3)
    outer = 2 + 4 + 3  # braces, the key "judgements" (ceil(10/3)), its quotes and colon
    assert answer_tokens(JUDGEMENTS, 3) == outer + 2 + 3 * (1 + item)
    assert answer_tokens(JUDGEMENTS) == outer + 2 + ITEMS_WHEN_UNSAID * (1 + item)
    assert answer_tokens(with_max_items(JUDGEMENTS, 4), 9) == answer_tokens(JUDGEMENTS, 4)  # the schema's bound wins
    assert answer_tokens({"anyOf": [{"type": "string", "maxLength": 30}, {"type": "null"}]}) == 10 + 2


def test_the_cap_is_the_answer_times_the_margin_plus_the_framing():
    tokens = answer_tokens(JUDGEMENTS, 25)
    assert token_cap(JUDGEMENTS, 25, 1.5) == -(-tokens * 3 // 2) + 32
    assert token_cap(JUDGEMENTS, 25, 0) is None
    assert token_cap(JUDGEMENTS, 50, 1.0) > token_cap(JUDGEMENTS, 25, 1.0)
