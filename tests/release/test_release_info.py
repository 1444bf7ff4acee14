"""What only the maker of a release can say: release.toml, options and the fields a release needs."""

from __future__ import annotations

import pytest

from segbench.core.errors import InputError
from segbench.schemas.release import load_release_info

COMPLETE = ('annotations_license = "cc-by-4.0"\nintended_uses = "x"\nsocial_impact = "y"\n'
            'personal_information = "none"\nmaintainer = "m"\n')


def test_options_take_precedence_over_the_file(tmp_path):
    path = tmp_path / "release.toml"
    path.write_text(COMPLETE + '[images]\nlicense = "cc0-1.0"\nname = "mine"\nredistributable = true\n')
    info = load_release_info(path, maintainer="someone else", intended_uses=None)
    assert info.maintainer == "someone else" and info.intended_uses == "x" and info.images.license == "cc0-1.0"
    assert info.require_complete(str(path)) is info


def test_every_missing_field_is_named_with_its_option(tmp_path):
    info = load_release_info(None, maintainer="m", social_impact="  ")
    with pytest.raises(InputError) as caught:
        info.require_complete("release.toml")
    message = str(caught.value)
    for field, option in (("annotations_license", "--annotations-license"), ("social_impact", "--social-impact"),
                          ("intended_uses", "--intended-uses"), ("personal_information", "--personal-information")):
        assert field in message and option in message
    assert "--maintainer" not in message


def test_a_misspelt_field_is_refused_naming_it(tmp_path):
    path = tmp_path / "release.toml"
    path.write_text(COMPLETE + 'maintaner = "typo"\n')
    with pytest.raises(InputError, match="maintaner"):
        load_release_info(path)


def test_broken_toml_names_the_file(tmp_path):
    path = tmp_path / "release.toml"
    path.write_text("annotations_license = \n")
    with pytest.raises(InputError, match="release.toml"):
        load_release_info(path)


@pytest.mark.parametrize(("text", "field"), [
    ('annotations_license = "cc-by-4.0\\nlicense: mit"\n', "annotations_license"),
    ('annotations_license = "CC BY 4.0"\n', "annotations_license"),
    ('[images]\nlicense = "-"\nname = "mine"\nredistributable = true\n', "images.license"),
])
def test_a_licence_that_is_not_an_id_is_refused_naming_the_field(tmp_path, text, field):
    path = tmp_path / "release.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=f"{field}: .* is not a licence id") as caught:
        load_release_info(path)
    assert f"correct {field}" in str(caught.value)


@pytest.mark.parametrize("licence", ["cc-by-4.0", "apache-2.0", "other", "LicenseRef-Flickr", "GPL-2.0+"])
def test_spdx_style_licence_ids_pass(licence):
    assert load_release_info(None, annotations_license=licence).annotations_license == licence


@pytest.mark.parametrize(("text", "field", "meaning"), [
    ('version = "1.0"\n', "version", "MAJOR.MINOR.PATCH"),
    ("intended_uses = 3\n", "intended_uses", "what the data is for"),
    ('[source_annotations]\nlicense = "cc by"\nname = "x"\nredistributable = true\n', "source_annotations.license",
     "SPDX-style id"),
])
def test_a_bad_value_names_the_field_and_what_it_holds(tmp_path, text, field, meaning):
    path = tmp_path / "release.toml"
    path.write_text(COMPLETE + text if not text.startswith("intended") else text)
    with pytest.raises(InputError) as caught:
        load_release_info(path)
    assert field in str(caught.value) and meaning in caught.value.hint


def test_the_datasheet_fields_are_optional_answers(tmp_path):
    path = tmp_path / "release.toml"
    path.write_text(COMPLETE + 'funding = "a grant"\nversion = "2.1.0"\ncitation = "@misc{x}"\n')
    info = load_release_info(path)
    assert info.funding == "a grant" and info.version == "2.1.0" and info.citation == "@misc{x}"
    assert load_release_info(None).version == "1.0.0"
