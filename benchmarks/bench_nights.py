"""Nights that build on each other (issue 27): ``train.init: base`` against ``champion`` over
a sequence of nights, the papers of a project arriving a slice per night.

Not a test: nothing here asserts. Given a project after a night (its validated tables, the
eval set, ``models/candidate/`` as the one-night anchor), its papers, in the order of their
ids (the order they arrived), are cut into ``--nights`` slices. Night n trains on the
validated pairs whose positive (and negative) passage lies in a paper arrived by night n;
every night is scored on the project's own held-out queries, the same ones each night (the
pairs stage held their concepts and statements out by a stable hash, so no night trains on
them). Each arm trains with the train stage itself (:func:`pipelines.train.stage.run_train`,
the project's ``train`` section with ``max_steps: --steps``):

* ``base``: every night from ``train.base_model``, on all the pairs arrived so far;
* ``champion``: from the arm's champion, on the new papers' pairs and a replay sample
  (:mod:`pipelines.train.warm_start`; no champion yet: from the base, as the pipeline does).

The first night is the same for both (the base model, the same pairs and seed): it is
trained once. Every candidate is scored on the passage sets (named, masked, described) by
promote's scoring (:func:`pipelines.promote.scoring.score_source`, full dimension) and
gated by promote's meaning gate against its arm's champion (the base model until one is
promoted). The transfer sets are not scored here: the plain windows would double each
night's evaluation; the nightly gate guards them. The base model and the project's own
candidate (one night on all the papers, the project's full ``max_steps``) are scored
through the project's embedding store.

    .venv/bin/python benchmarks/bench_nights.py --project /tmp/democlone --nights 6 \\
        --steps 25 --work /tmp/nights --out benchmarks/results/nights_demo.json

The record is rewritten after every night, so a run stopped midway keeps what it measured.
At the end the two arms' last champions are compared with each other by the same paired
test (``last_champions``); ``--compare-only`` does just that for a finished record.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.machine import write_record  # noqa: E402
from pipelines.common import io  # noqa: E402
from pipelines.common.config import Params, load_params  # noqa: E402
from pipelines.common.paths import Paths  # noqa: E402
from pipelines.common.tables import MEANING_SETS, PASSAGE_SETS, TABLES  # noqa: E402
from pipelines.evaluate.eval_set import EvalSet, load_eval_set  # noqa: E402
from pipelines.evaluate.scoring import paired_test_p_value  # noqa: E402
from pipelines.evaluate.sources import (  # noqa: E402
    ModelSource,
    base_model_source,
    local_model_source,
)
from pipelines.promote.decision import Scores, decide_on_meaning  # noqa: E402
from pipelines.promote.scoring import score_source  # noqa: E402
from pipelines.registry.candidate_metadata import (  # noqa: E402
    CandidateMetadata,
    read_candidate_metadata,
)
from pipelines.retrieval.vector_store import open_store  # noqa: E402
from pipelines.train.stage import run_train  # noqa: E402
from pipelines.train.warm_start import Start, base_start, paper_of  # noqa: E402

METRIC = "mrr@10"
ARMS = ("base", "champion")


def night_papers(papers: list[str], nights: int) -> list[list[str]]:
    """``papers`` cut into ``nights`` consecutive slices, the first ones one larger."""
    return [list(part) for part in np.array_split(np.array(papers, dtype=object), nights)]


def pairs_arrived(pairs: pd.DataFrame, arrived: set[str]) -> pd.DataFrame:
    """The pairs whose positive, and negative when it has one, lie in arrived papers."""
    positive = pairs["positive_id"].astype(str).map(paper_of).isin(arrived)
    negative_ids = pairs["negative_id"].fillna("").astype(str)
    negative = (negative_ids == "") | negative_ids.map(paper_of).isin(arrived)
    return pairs[positive & negative].reset_index(drop=True)


def figures(
    scores: dict[str, Scores], other: dict[str, Scores], params: Params, against: str = "base"
) -> dict[str, Any]:
    """MRR@10 per passage set, with the difference and p against ``other`` (the base)."""
    rule = params.promote
    row = {}
    for name in PASSAGE_SETS:
        p_value = paired_test_p_value(
            scores[name].per_query[METRIC],
            other[name].per_query[METRIC],
            method=rule.test_method,
            n_resamples=rule.n_resamples,
            seed=rule.seed,
        )
        row[name] = {
            METRIC: round(scores[name].means[METRIC], 4),
            f"minus_{against}": round(scores[name].means[METRIC] - other[name].means[METRIC], 4),
            f"p_vs_{against}": None if p_value is None else round(p_value, 4),
        }
    return row


class Bench:
    def __init__(self, project: Path, work: Path, nights: int, steps: int, out: Path) -> None:
        self.paths = Paths(project)
        self.params = load_params(project / "params.yaml")
        self.work, self.nights, self.steps, self.out = work, nights, steps, out
        eval_set = load_eval_set(self.paths)
        self.eval_set: EvalSet = dataclasses.replace(eval_set, transfer=None)
        self.pairs = io.read_parquet(TABLES["pairs"].validated_path(self.paths))
        chunks = io.read_parquet(TABLES["chunks"].validated_path(self.paths))
        papers = {paper_of(str(chunk)) for chunk in chunks["chunk_id"]}  # with their versions
        self.slices = night_papers(sorted(papers), nights)
        self.train = dataclasses.replace(self.params.train, max_steps=steps)
        self.record: dict[str, Any] = {
            "project": str(project),
            "nights": nights,
            "steps_per_night": steps,
            "papers_per_night": [len(part) for part in self.slices],
            "metric": METRIC,
            "train": dataclasses.asdict(self.train),
            "anchors": {},
            "arms": {arm: [] for arm in ARMS},
        }

    def score(self, source: ModelSource, *, stored: bool = False) -> dict[str, Scores]:
        store = open_store(self.paths) if stored else None
        return score_source(
            source,
            self.eval_set,
            self.params,
            store=store,
            batch_size=self.params.evaluate.batch_size,
            sets=PASSAGE_SETS,
        )

    def save(self) -> None:
        write_record(self.out, self.record)

    def score_base(self) -> CandidateMetadata:
        """The base model's scores (``self.base``); the project's candidate's record."""
        metadata = read_candidate_metadata(self.paths.candidate)
        if metadata is None or metadata.base_spec is None:
            raise SystemExit(f"{self.paths.candidate}: no mathembed.json naming the base model")
        self.base = self.score(base_model_source(metadata.base_spec), stored=True)
        return metadata

    def compare_last(self, folders: dict[str, Path]) -> None:
        """The champion arm's last champion against the base arm's, set by set."""
        scores = {
            arm: self.score(local_model_source(arm, folder)) for arm, folder in folders.items()
        }
        self.record["last_champions"] = {
            "folders": {arm: str(folder) for arm, folder in folders.items()},
            "champion_arm_vs_base_arm": figures(
                scores["champion"], scores["base"], self.params, against="base_arm"
            ),
        }
        self.save()

    def recorded_champions(self) -> dict[str, Path]:
        """Each arm's last promoted night in a finished record (a shared night is the
        first arm's folder)."""
        folders = {}
        for arm in ARMS:
            promoted = [entry for entry in self.record["arms"][arm] if entry["promoted"]]
            last = promoted[-1]
            folders[arm] = self.work / last.get("shared_with", arm) / f"night-{last['night']}"
        return folders

    def run(self) -> None:
        metadata = self.score_base()
        one_night = self.score(local_model_source("one-night", self.paths.candidate), stored=True)
        self.record["anchors"] = {
            "one_night": {
                "steps": metadata.train_params.get("max_steps"),
                "mixing_weight": metadata.mixing_weight,
                "sets": figures(one_night, self.base, self.params),
            },
            "base": {name: round(self.base[name].means[METRIC], 4) for name in PASSAGE_SETS},
        }
        self.save()
        champions: dict[str, tuple[Path, dict[str, Scores]] | None] = dict.fromkeys(ARMS)
        first: tuple[Path, dict[str, Any], dict[str, Scores]] | None = None
        arrived: set[str] = set()
        for night, papers in enumerate(self.slices, start=1):
            arrived |= set(papers)
            pairs = pairs_arrived(self.pairs, arrived)
            for arm in ARMS:
                if night == 1 and first is not None:  # the same run as the other arm's
                    folder, entry, scores = first
                    entry = {**entry, "arm": arm, "shared_with": ARMS[0]}
                else:
                    folder, entry, scores = self.train_night(arm, night, pairs, champions[arm])
                    first = first or (folder, entry, scores)
                champion = champions[arm]
                decision = decide_on_meaning(
                    scores,
                    champion[1] if champion else None,
                    self.base,
                    self.params.promote,
                    meaning_sets=MEANING_SETS,
                    guarded_sets=PASSAGE_SETS,
                )
                if decision.promote:
                    champions[arm] = (folder, scores)
                kept = champions[arm]
                entry |= {
                    "promoted": decision.promote,
                    "reason": decision.reason,
                    "champion_after": figures(kept[1], self.base, self.params) if kept else None,
                }
                self.record["arms"][arm].append(entry)
                print(
                    f"night {night} {arm}: {entry['train_seconds']} s training, "
                    f"{'promoted' if decision.promote else 'kept the champion'}: "
                    f"{decision.reason[:160]}",
                    flush=True,
                )
                self.save()
        self.compare_last({arm: kept[0] for arm, kept in champions.items() if kept})

    def train_night(
        self,
        arm: str,
        night: int,
        pairs: pd.DataFrame,
        champion: tuple[Path, dict[str, Scores]] | None,
    ) -> tuple[Path, dict[str, Any], dict[str, Scores]]:
        root = self.work / arm
        paths = Paths(root)
        io.write_parquet(TABLES["pairs"].validated_path(paths), pairs)
        params = dataclasses.replace(self.train, init=arm)  # type: ignore[arg-type]
        start = base_start(params, "no champion yet")
        if arm == "champion" and champion is not None:
            recorded = read_candidate_metadata(champion[0])
            assert recorded is not None
            start = Start(
                "champion",
                f"the arm's champion ({champion[0].name})",
                champion[0],
                champion[0].name,
                recorded.fingerprint,
                frozenset(recorded.trained_papers),
            )
        started = time.perf_counter()
        report = run_train(params, paths, progress=False, start=start)
        seconds = round(time.perf_counter() - started, 1)
        folder = root / f"night-{night}"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(paths.candidate, folder)
        scores = self.score(local_model_source(f"{arm}-night-{night}", folder))
        metrics = report.metrics
        entry = {
            "arm": arm,
            "night": night,
            "papers_arrived": len({paper_of(str(passage)) for passage in pairs["positive_id"]}),
            "pairs_arrived": int((pairs["split"] == "train").sum()),
            "pairs_trained": metrics["n_pairs"]["train"],
            "init": metrics["init"],
            "steps": metrics["steps"],
            "train_seconds": seconds,
            "step_seconds": metrics["step_seconds"],
            "mixing_weight": metrics["mixing"]["chosen"],
            "candidate": figures(scores, self.base, self.params),
        }
        return folder, entry, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True, help="a project after a night")
    parser.add_argument("--nights", type=int, default=6, help="slices the papers arrive in")
    parser.add_argument("--steps", type=int, default=25, help="train.max_steps of each night")
    parser.add_argument("--work", type=Path, required=True, help="a scratch folder per arm")
    parser.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    parser.add_argument(
        "--compare-only",
        action="store_true",
        help="compare the arms' last champions of the finished record --out names",
    )
    args = parser.parse_args()
    bench = Bench(args.project.resolve(), args.work.resolve(), args.nights, args.steps, args.out)
    if args.compare_only:
        bench.record = json.loads(args.out.read_text(encoding="utf-8"))
        bench.compare_last(bench.recorded_champions())
    else:
        bench.run()


if __name__ == "__main__":
    main()
