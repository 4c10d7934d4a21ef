"""The foreign corpus (transfer set ``transfer_corpus``): read and checked, searched among the
night's windows, not asked of a night on its own papers, built from a project's eval set."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from repo import REPO

from pipelines.common import io
from pipelines.common.config import load_params
from pipelines.evaluate.build_foreign import foreign_tables
from pipelines.evaluate.eval_set import EvalSet, build_eval_set
from pipelines.evaluate.foreign import (
    FOREIGN_TABLES,
    ForeignCorpus,
    folder_files,
    foreign_corpus_from_tables,
    kept_passages,
    read_foreign_corpus,
)
from pipelines.evaluate.transfer import TRANSFER_CORPUS, TRANSFER_NAMED, TRANSFER_PAPERS


def foreign_frames() -> dict[str, pd.DataFrame]:
    return {
        "passages": pd.DataFrame(
            {
                "passage_id": ["b#c0", "b#c1", "b#c2"],
                "paper_id": ["b", "b", "b"],
                "text": ["Lemma. [MASK] bounds entropy.", "A tile is a cube.", "Cites it."],
            }
        ),
        "queries": pd.DataFrame(
            {
                "query_id": ["q-entropy", "q-tile"],
                "text": ["Ruzsa distance", "tiles are disjoint"],
                "set": ["masked", "described"],
                "exclude": [[], ["b#c2"]],
            }
        ),
        "qrels": pd.DataFrame(
            {"query_id": ["q-entropy", "q-tile"], "passage_id": ["b#c0", "b#c1"], "grade": [2, 1]}
        ),
        "papers": pd.DataFrame({"paper_id": ["b"], "content_hash": ["hash-b"]}),
    }


def write_folder(folder: Path, frames: dict[str, pd.DataFrame]) -> Path:
    folder.mkdir(parents=True)
    for name, frame in frames.items():
        io.write_parquet(folder / f"{name}.parquet", frame)
    return folder


def night_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    chunks = pd.DataFrame(
        {
            "chunk_id": ["p1#c0000", "p2#c0000"],
            "paper_id": ["p1", "p2"],
            "chunk_index": [0, 0],
            "text": ["A ring is a set with two operations.", "A field is a ring."],
        }
    )
    queries = pd.DataFrame({"query_id": ["q1"], "text": ["ring"], "set": ["named"]})
    qrels = pd.DataFrame(
        {"query_id": ["q1"], "chunk_id": ["p1#c0000"], "grade": [2], "unseen": [False]}
    )
    papers = pd.DataFrame(
        {
            "paper_id": ["p1", "p2"],
            "title": ["Rings", "Fields"],
            "abstract": ["Rings are studied.", "Fields are studied."],
            "content_hash": ["hash-1", "hash-2"],
        }
    )
    return chunks, queries, qrels, papers


def test_the_foreign_queries_search_its_passages_after_the_night_s(tmp_path: Path) -> None:
    foreign = read_foreign_corpus(write_folder(tmp_path / "foreign", foreign_frames()))
    chunks, queries, qrels, papers = night_tables()
    eval_set = build_eval_set(chunks, queries, qrels, papers=papers, foreign=[foreign])
    held = eval_set.holding(TRANSFER_CORPUS)
    assert held is eval_set.foreign
    # The night's passages as searched (the same rows as the eval set's), then the foreign.
    assert held.corpus_ids == [*eval_set.corpus_ids, "foreign:b#c0", "foreign:b#c1", "foreign:b#c2"]
    assert held.corpus_texts[:2] == eval_set.corpus_texts
    assert held.query_texts == ["Ruzsa distance", "tiles are disjoint"]
    subset = held.subset(TRANSFER_CORPUS)
    assert subset.qrels == [{2: 2}, {3: 1}]  # judged at the foreign rows, after the 2 passages
    assert subset.excluded == [frozenset(), frozenset({4})]  # the citing sentence's own
    # The other transfer sets still search the plain windows alone.
    assert eval_set.holding(TRANSFER_NAMED) is eval_set.transfer
    assert eval_set.transfer is not None
    assert eval_set.transfer.corpus_ids == ["p1#w0000", "p2#w0000"]
    assert eval_set.transfer.subset(TRANSFER_NAMED).qrels == [{0: 2}]
    assert len(eval_set.transfer.subset(TRANSFER_PAPERS).rows) == 4
    record = eval_set.transfer_record
    assert record["queries"] == {TRANSFER_PAPERS: 4, TRANSFER_NAMED: 1, TRANSFER_CORPUS: 2}
    assert record["foreign_corpus"] == {"folder": str(tmp_path / "foreign"), "passages": 3}


def test_a_night_on_the_foreign_papers_does_not_ask_them(tmp_path: Path) -> None:
    frames = foreign_frames()
    frames["papers"] = pd.DataFrame({"paper_id": ["p2"], "content_hash": ["hash-2"]})
    foreign = read_foreign_corpus(write_folder(tmp_path / "foreign", frames))
    chunks, queries, qrels, papers = night_tables()
    eval_set = build_eval_set(chunks, queries, qrels, papers=papers, foreign=[foreign])
    assert eval_set.foreign is None
    assert eval_set.holding(TRANSFER_CORPUS) is eval_set  # no such queries there
    assert eval_set.transfer_record["queries"][TRANSFER_CORPUS] == 0
    assert eval_set.transfer_record["skipped"] == {
        f"transfer_corpus: {tmp_path / 'foreign'} holds this corpus's papers": 2
    }
    assert "foreign_corpus" not in eval_set.transfer_record
    # Another version of a foreign paper (another hash) still holds its passages' text; one
    # passage in common by chance is no version (a tenth of them is: SHARED_PASSAGES).
    frames = foreign_frames()
    frames["passages"].loc[1, "text"] = chunks.loc[1, "text"]
    foreign = read_foreign_corpus(write_folder(tmp_path / "another-version", frames))
    assert build_eval_set(chunks, queries, qrels, papers=papers, foreign=[foreign]).foreign is None
    frames["passages"] = pd.concat(
        [frames["passages"]]
        + [
            pd.DataFrame({"passage_id": [f"b#x{i}"], "paper_id": ["b"], "text": [f"Other {i}."]})
            for i in range(40)
        ],
        ignore_index=True,
    )
    foreign = read_foreign_corpus(write_folder(tmp_path / "by-chance", frames))
    held = build_eval_set(chunks, queries, qrels, papers=papers, foreign=[foreign]).foreign
    assert held is not None


def test_a_query_with_no_exclude_list_excludes_nothing(tmp_path: Path) -> None:
    frames = foreign_frames()
    frames["queries"]["exclude"] = [None, ["b#c2"]]
    foreign = foreign_corpus_from_tables(tmp_path, frames)
    assert foreign.excluded == [frozenset(), frozenset({2})]


def test_the_first_foreign_corpus_the_night_does_not_hold_is_asked(tmp_path: Path) -> None:
    own = foreign_frames()
    own["papers"] = pd.DataFrame({"paper_id": ["p2"], "content_hash": ["hash-2"]})
    held_here = read_foreign_corpus(write_folder(tmp_path / "own", own))
    other = read_foreign_corpus(write_folder(tmp_path / "other", foreign_frames()))
    chunks, queries, qrels, papers = night_tables()
    eval_set = build_eval_set(chunks, queries, qrels, papers=papers, foreign=[held_here, other])
    assert eval_set.foreign is not None and len(eval_set.foreign.query_ids) == 2
    record = eval_set.transfer_record
    assert record["foreign_corpus"]["folder"] == str(tmp_path / "other")
    assert record["skipped"] == {
        f"transfer_corpus: {tmp_path / 'own'} holds this corpus's papers": 2
    }


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda f: f["passages"].drop(columns="text"), "missing column(s) ['text']"),
        (
            lambda f: pd.concat([f["passages"], f["passages"].iloc[:1]], ignore_index=True),
            "duplicate ids",
        ),
        (lambda f: f["queries"].assign(set="named"), "unknown set(s) ['named']"),
        (lambda f: f["qrels"].assign(passage_id="nowhere"), "judges ('q-entropy', 'nowhere')"),
        (lambda f: f["qrels"].assign(grade=0), "no query has a relevant passage"),
        (lambda f: f["qrels"].assign(grade="high"), "grade 'high' is no whole number"),
    ],
)
def test_an_inconsistent_table_names_itself_and_the_fix(
    tmp_path: Path, spoil: object, message: str
) -> None:
    frames = foreign_frames()
    table = {
        "missing column(s) ['text']": "passages",
        "duplicate ids": "passages",
        "unknown set(s) ['named']": "queries",
    }.get(message, "qrels")
    frames[table] = spoil(frames)  # type: ignore[operator]
    with pytest.raises(ValueError) as raised:
        foreign_corpus_from_tables(tmp_path, frames)
    assert message in str(raised.value)
    assert f"{table}.parquet" in str(raised.value)
    assert "take it out of evaluate.foreign_corpora" in str(raised.value)


def test_a_missing_or_unreadable_folder_is_an_error_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is not a folder; build it with .*foreign_corpora"):
        read_foreign_corpus(tmp_path / "nowhere")
    folder = write_folder(tmp_path / "foreign", foreign_frames())
    (folder / "qrels.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"qrels.parquet: unreadable"):
        read_foreign_corpus(folder)
    (folder / "qrels.parquet").unlink()
    with pytest.raises(ValueError, match=r"qrels.parquet: unreadable"):
        read_foreign_corpus(folder)


def test_the_builder_keeps_every_judged_passage_masks_names_and_round_trips(
    tmp_path: Path,
) -> None:
    eval_set = EvalSet(
        corpus_ids=[f"c{i}" for i in range(6)],
        corpus_texts=[f"passage {i}" for i in range(6)],
        query_ids=["n1", "d1"],
        query_texts=["Tile", "tiles never overlap"],
        qrels=[{4: 2}, {5: 1}],
        unseen_docs=[frozenset(), frozenset()],
        queries_without_relevant=[],
        query_sets=["named", "described"],
        excluded=[frozenset(), frozenset({0, 3})],
        masked_texts={4: "passage [MASK]"},
    )
    paper_of = {f"c{i}": "paper" for i in range(6)}
    hashes = pd.DataFrame({"paper_id": ["paper"], "content_hash": ["h"], "title": ["T"]})
    tables = foreign_tables(eval_set, paper_of, hashes, max_passages=3)
    passages = tables["passages"]
    assert len(passages) == 3 and {"c4", "c5"} <= set(passages["passage_id"])
    assert passages.set_index("passage_id").loc["c4", "text"] == "passage [MASK]"
    assert tables["queries"]["set"].tolist() == ["masked", "described"]
    kept_excluded = [c for c in ("c0", "c3") if c in set(passages["passage_id"])]
    assert tables["queries"]["exclude"].tolist() == [[], kept_excluded]
    assert list(tables["papers"].columns) == list(FOREIGN_TABLES["papers"])
    foreign = read_foreign_corpus(write_folder(tmp_path / "built", tables))
    assert foreign.query_texts == ["Tile", "tiles never overlap"]
    assert foreign.content_hashes == frozenset({"h"})


def test_kept_passages_is_stable_and_keeps_the_needed() -> None:
    ids = [f"p{i}" for i in range(50)]
    kept = kept_passages(ids, {3, 40}, 10)
    assert len(kept) == 10 and {3, 40} <= set(kept) and kept == sorted(kept)
    assert kept_passages(ids, {3, 40}, 10) == kept
    assert kept_passages(ids, {3, 40}, 1) == [3, 40]  # the judged ones, whatever the cap


@pytest.mark.parametrize(
    ("folder", "licence", "words"),
    [
        ("blueprints-eval", "LICENSE", "Apache License"),
        ("stacks-eval", "COPYING", "GNU Free Documentation License"),
    ],
)
def test_the_shipped_foreign_corpora_read_and_carry_their_licence(
    folder: str, licence: str, words: str
) -> None:
    shipped = REPO / "corpora" / folder
    foreign: ForeignCorpus = read_foreign_corpus(shipped)
    assert all(path.is_file() for path in folder_files(shipped))
    assert words in (shipped / licence).read_text()
    assert len(foreign.query_ids) >= 200 and len(foreign.passage_ids) >= 1000
    assert all(any(grade >= 1 for grade in judged.values()) for judged in foreign.qrels)


def test_the_shipped_order_gives_a_blueprints_night_the_stacks_chapters() -> None:
    """The demo and research papers ask the blueprints; a night on the blueprints holds
    their papers, so it asks the Stacks chapters, which share none of them."""
    params = load_params(REPO / "params.yaml")
    folders = [REPO / folder for folder in params.evaluate.foreign_corpora]
    assert [folder.name for folder in folders] == ["blueprints-eval", "stacks-eval"]
    blueprints, stacks = (read_foreign_corpus(folder) for folder in folders)
    assert not blueprints.content_hashes & stacks.content_hashes
    assert not set(blueprints.texts) & set(stacks.texts)
