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
