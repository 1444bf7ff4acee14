"""``DATASHEET.md``: the 51 questions of Datasheets for Datasets (Gebru et al., 2021), each answered from
the build's records, the release's own licences, or the maker's ``release.toml`` — or marked *Not
recorded*. No answer is fixed prose: a question nobody recorded an answer to says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import segbench
from segbench.core.release.card import all_findings
from segbench.core.release.licences import ReleaseLicences
from segbench.core.release.plan import ReleasePlan
from segbench.core.release.rounds import describe_rounds, timeframe
from segbench.schemas.release import ReleaseInfo

NOT_RECORDED = "*Not recorded.*"


@dataclass(frozen=True)
class Facts:
    plan: ReleasePlan
    info: ReleaseInfo
    terms: ReleaseLicences


Answer = Callable[[Facts], str | None]


def _maker(field: str) -> Answer:
    return lambda f: getattr(f.info, field)


def _plan(key: str) -> Answer:
    return lambda f: f.plan.datasheet_answers.get(key)


def _counts(f: Facts) -> str:
    configs = f.plan.configs()
    return "; ".join(f"config `{config}`: " + ", ".join(f"{split} {rows}" for split, rows in splits.items())
                     for config, splits in configs.items()) + "."


def _fields(f: Facts) -> str:
    return " ".join(f"`{name}`: {f.plan.descriptions[name]}" for name in f.plan.features)


def _sample(f: Facts) -> str:
    seed = f"; the random draw used seed {f.plan.seed}" if f.plan.seed is not None else ""
    return ("A selection from its sources by the rules of section 4 (kept at each rule: "
            + ", ".join(f"{rule.replace('_', ' ')} {count}" for rule, count in f.plan.selection.items()) + f"){seed}.")


def _missing(f: Facts) -> str | None:
    parts = [f.plan.datasheet_answers["missing"]] if "missing" in f.plan.datasheet_answers else []
    if f.terms.withheld:
        parts.append(f"{len(f.terms.withheld)} images are withheld for their licence; their rows name the source file.")
    elif f.plan.has_images and "image" in f.plan.features:
        parts.append("No image is withheld.")
    return " ".join(parts) or None


def _splits(f: Facts) -> str:
    return (f"Yes: {_counts(f)} The ids of each split and the seed that drew them are in `splits.json`. "
            + f.plan.datasheet_answers.get("splits", ""))


def _errors(f: Facts) -> str | None:
    items = [*all_findings(f.plan), *f.plan.limitations]
    return " ".join(items) or None


def _self_contained(f: Facts) -> str:
    if f.terms.withheld:
        return (f"Not wholly: {len(f.terms.withheld)} images are withheld and must come from their source "
                f"({', '.join(f.plan.source_datasets)}). Everything else is in the release.")
    if not f.plan.has_images or "image" not in f.plan.features:
        return f"The rows are self-contained; the source data ({', '.join(f.plan.source_datasets)}) is not included."
    return "Yes: every image and annotation is embedded in the parquet files."


def _mechanisms(f: Facts) -> str:
    rounds = sorted({r.platform for r in f.plan.rounds})
    people = f" People answered on: {', '.join(rounds)}." if rounds else " No person labelled the data."
    return f"Programs: {'; '.join(f.plan.machine_tools) or 'none'}.{people}"


def _people(f: Facts) -> str:
    if not f.plan.rounds:
        return "No person was involved in labelling: every label is derived by a program (section 4)."
    count = len(f.plan.rounds)
    return (f"People answered in {count} round{'s' if count > 1 else ''}: {describe_rounds(f.plan.rounds)} "
            "Their compensation is not in the round records.")


def _timeframe(f: Facts) -> str:
    rounds = timeframe(f.plan.rounds)
    return f"Built {f.plan.created}" + (f"; human rounds from {rounds}." if rounds else "; no human round.")


def _third_parties(f: Facts) -> str:
    return (f"Via third parties: the source datasets {', '.join(f.plan.source_datasets)} (the card's Sources table "
            "lists the files read, with their sha256).")


def _raw(f: Facts) -> str:
    return ("The raw inputs stay with their sources; the build records each one's sha256 (the card's Sources "
            "table), so a rebuild checks it reads the same bytes.")


def _software(f: Facts) -> str:
    return (f"Yes: segbench {segbench.__version__} (Apache-2.0) built it; the build's manifest records its parameters "
            "and every input's sha256, and rebuilding with them gives byte-identical files.")


def _papers(f: Facts) -> str:
    titles = [c.split("title = {", 1)[1].split("}", 1)[0] for c in f.plan.citations if "title = {" in c]
    return "No repository of uses is recorded. The papers that define it and its sources: " + "; ".join(titles) + "."


def _ip(f: Facts) -> str:
    others = [c.licence for c in f.terms.components if c.licence.id != (f.info.annotations_license or "")]
    if not others:
        return "No: every part is the maker's."
    return "Yes, the sources' terms: " + "; ".join(f"{lic.applies_to}: {lic.name} (`{lic.id}`)" for lic in others) + "."


def _distribution(f: Facts) -> str:
    return ("As this folder: parquet files with a Hugging Face card (`README.md`), Croissant metadata with the "
            "Responsible-AI fields (`croissant.json`), this datasheet and the licences. No DOI is recorded.")


QUESTIONS: list[tuple[str, list[tuple[str, Answer]]]] = [
    ("1. Motivation", [
        ("For what purpose was the dataset created?", lambda f: f.plan.summary),
        ("Who created the dataset, and on behalf of which entity?",
         lambda f: f.info.creators or f"Released by {f.info.maintainer}, built from "
                                      f"{', '.join(f.plan.source_datasets)} (the card cites their makers)."),
        ("Who funded the creation of the dataset?", _maker("funding")),
        ("Any other comments?", lambda f: f"Data version `{f.plan.version}`, built {f.plan.created}."),
    ]),
    ("2. Composition", [
        ("What do the instances represent?", _plan("instances")),
        ("How many instances are there in total?", _counts),
        ("Does the dataset contain all possible instances or is it a sample?", _sample),
        ("What data does each instance consist of?", _fields),
        ("Is there a label or target associated with each instance?", _plan("labels")),
        ("Is any information missing from individual instances?", _missing),
        ("Are relationships between individual instances made explicit?", _plan("relationships")),
        ("Are there recommended data splits?", _splits),
        ("Are there any errors, sources of noise, or redundancies?", _errors),
        ("Is the dataset self-contained, or does it rely on external resources?", _self_contained),
        ("Does the dataset contain data that might be considered confidential?", _maker("personal_information")),
        ("Does the dataset contain data that might be offensive, insulting, threatening or cause anxiety?",
         _maker("offensive_content")),
        ("Does the dataset identify any subpopulations (e.g. by age or gender)?",
         lambda f: "No column records an attribute of a person (the columns are listed above)."),
        ("Is it possible to identify individuals from the dataset?", _maker("personal_information")),
        ("Does the dataset contain data that might be considered sensitive?", _maker("personal_information")),
    ]),
    ("3. Collection process", [
        ("How was the data associated with each instance acquired?", lambda f: f.plan.collection),
        ("What mechanisms or procedures were used to collect the data?", _mechanisms),
        ("If the dataset is a sample, what was the sampling strategy?", lambda f: f.plan.preprocessing),
        ("Who was involved in the data collection process, and how were they compensated?", _people),
        ("Over what timeframe was the data collected?", _timeframe),
        ("Were any ethical review processes conducted?", _maker("ethical_review")),
        ("Was the data collected from the individuals directly, or via third parties?", _third_parties),
        ("Were the individuals in question notified about the data collection?", _maker("consent")),
        ("Did the individuals in question consent to the collection and use of their data?", _maker("consent")),
        ("Is there a mechanism to revoke consent?", _maker("consent")),
        ("Has an analysis of the potential impact of the dataset on data subjects been conducted?",
         _maker("social_impact")),
    ]),
    ("4. Preprocessing, cleaning and labelling", [
        ("Was any preprocessing, cleaning or labelling of the data done?",
         lambda f: f"{f.plan.preprocessing} {f.plan.annotation_protocol} {describe_rounds(f.plan.rounds)}"),
        ("Was the raw data saved in addition to the preprocessed data?", _raw),
        ("Is the software used to preprocess, clean or label the data available?", _software),
    ]),
    ("5. Uses", [
        ("Has the dataset been used for any tasks already?", _plan("used")),
        ("Is there a repository that links to papers or systems that use the dataset?", _papers),
        ("What (other) tasks could the dataset be used for?",
         lambda f: f"{f.info.intended_uses} Its design measures: " + " ".join(f.plan.use_cases)),
        ("Is there anything about its composition or collection that might impact future uses?",
         lambda f: " ".join(f.plan.biases) or None),
        ("Are there tasks for which the dataset should not be used?", _maker("out_of_scope_uses")),
    ]),
    ("6. Distribution", [
        ("Will the dataset be distributed to third parties outside of the entity that created it?",
         lambda f: "Yes: this release is made to be loaded by others, without segbench."),
        ("How will the dataset be distributed?", _distribution),
        ("When will the dataset be distributed?", lambda f: f"This release is of the build made {f.plan.created}."),
        ("Will the dataset be distributed under a copyright or other licence, or terms of use?",
         lambda f: f"Yes: {f.terms.summary()} (`LICENSES.md`)."),
        ("Have any third parties imposed IP-based or other restrictions on the data?", _ip),
        ("Do any export controls or other regulatory restrictions apply?", _maker("export_controls")),
    ]),
    ("7. Maintenance", [
        ("Who will be supporting, hosting or maintaining the dataset?", _maker("maintainer")),
        ("How can the owner, curator or manager of the dataset be contacted?", _maker("maintainer")),
        ("Is there an erratum?", _maker("erratum")),
        ("Will the dataset be updated?",
         lambda f: "Each data version is released anew with its version in the card; fixes make a new version, "
                   "never an edit in place."),
        ("Are there limits on the retention of data about people?", _maker("retention")),
        ("Will older versions of the dataset continue to be supported?",
         lambda f: "Each release names its data version; an older version is rebuilt and released from its tag "
                   "byte for byte."),
        ("Is there a mechanism for others to extend, augment or contribute to the dataset?", _maker("contributions")),
    ]),
]


Answered = list[tuple[str, list[tuple[str, str | None]]]]  # section → (question, answer or None)


def answers(plan: ReleasePlan, info: ReleaseInfo, terms: ReleaseLicences) -> Answered:
    """Every section's questions with their answers (None where nothing is recorded)."""
    facts = Facts(plan, info, terms)
    return [(section, [(question, (answer(facts) or "").strip() or None) for question, answer in questions])
            for section, questions in QUESTIONS]


def datasheet(plan: ReleasePlan, info: ReleaseInfo, terms: ReleaseLicences) -> str:
    sections = answers(plan, info, terms)
    total = sum(len(qs) for _, qs in sections)
    answered = sum(answer is not None for _, qs in sections for _, answer in qs)
    lines = [f"# Datasheet: {plan.pretty_name}", "",
             f"Data version `{plan.version}`, built {plan.created}. The questions of Datasheets for Datasets "
             f"(Gebru et al., 2021): {answered} of {total} are answered from the build's records or the maker's "
             "`release.toml`; the others say *Not recorded*.", ""]
    for section, questions in sections:
        lines += [f"## {section}", ""]
        for question, answer in questions:
            lines += [f"**{question}**", "", answer or NOT_RECORDED, ""]
    return "\n".join(lines)
