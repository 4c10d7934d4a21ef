"""``mathembed report``: the decision first, then what each stage did, numbers rounded,
the p-value once; from the metrics files a run leaves (written here as the stages and
promote write them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from flows.report import render_report, transfer_scope
from mathembed import cli
from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.registry.metric_records import SetHeadline

FINGERPRINT = "d093df3cd856affd5d4a5f31992fc2fcdf368c575c44f78e70931f2d5198bc49"
#: metrics/<set>.json as evaluate writes them (the masked set had no queries).
HEADLINES = (
    SetHeadline(
        "named",
        194,
        {"mrr@10": 0.6557, "ndcg@10": 0.6242},
        {"mrr@10": 0.5468, "ndcg@10": 0.5404},
        "mrr@10",
        0.0001,
    ),
    SetHeadline("described", 232, {"mrr@10": 0.2412}, {"mrr@10": 0.1912}, "mrr@10", 0.0004),
)
STAGES = {
    "ingest": {"listed": 16, "fetched": 16, "skipped": 0, "quarantined": 0, "withdrawn": 0},
    "prepare": {"prepared": 16, "reused": 0, "chunks": 3393, "statements": 2504},
    "graph": {"concepts": 661, "edges": 4913, "mentions": 26697, "extractor": "rules"},
    "data": {
        "pairs": {"by_split": {"train": 767, "validation": 75}},
        "queries": 194,
        "qrels": {"total": 405, "unseen": 18},
    },
    "data_quality": {"passed": True, "totals": {"rows_in": 39625, "kept": 39625}},
    "train": {
        "fingerprint": FINGERPRINT,
        "steps": 100,
        "device": "cpu (2 threads)",
        "wall_seconds": 445.642,
        "final_loss": 0.8654594421386719,
        "validation_loss": 4.205604553222656,
        "init": {"asked": "champion", "started_from": "champion", "version": "3"},
    },
    "eval": {
        "corpus_size": 3393,
        "n_queries": 194,
        "ks": [10],
        "dims": [384],
        "primary_dim": 384,
        "models": {"candidate": {}, "base": {}},
        "sets": {
            "described": {
                "n_queries": 232,
                "words_in_relevant": 0.0,
                "scores": {
                    "candidate": {"mrr@10": 0.2412345},
                    "base": {"mrr@10": 0.1912345},
                    "bm25": {"mrr@10": 0.2},
                },
                "p_value": {"base": 0.0004, "bm25": 0.2},
            },
            "masked": {"n_queries": 0},
            "named": {
                "n_queries": 194,
                "words_in_relevant": 0.9021,
                "scores": {"candidate": {"mrr@10": 0.65}, "base": {"mrr@10": 0.55}},
                "p_value": {"base": 0.0001},
            },
        },
    },
}


def promotion(**changes: Any) -> dict[str, Any]:
    """metrics/promotion.json as promote writes it (PromotionRecord.to_json): decided on
    the masked set against the champion; the named set follows with its own figures."""
    return {
        "decision": "promoted",
        "decided_on": "masked",
        "compared_against": "champion",
        "compared_version": "2",
        "significance_metric": "mrr@10",
        "sets": {
            "masked": {
                "queries": 194,
                "candidate": {"mrr@10": 0.6557, "ndcg@10": 0.6242},
                "base": {"mrr@10": 0.4711, "ndcg@10": 0.4689},
                "champion": {"mrr@10": 0.601, "ndcg@10": 0.5901},
                "p_value": 0.0001,
            },
            "named": {
                "queries": 194,
                "candidate": {"mrr@10": 0.7444, "ndcg@10": 0.716},
                "base": {"mrr@10": 0.6094, "ndcg@10": 0.6131},
                "champion": {"mrr@10": 0.7401, "ndcg@10": 0.7111},
                "p_value": 0.62,
            },
        },
        "reason": "beats the champion on mrr@10 and ndcg@10 (randomization test p = 9.999e-05)",
        "registered_model": "math-embed",
        "version": "3",
        "fingerprint": FINGERPRINT,
        "run_id": "a665a50244f948f18e3c4d541ec5574e",
        "decided_at": "2026-11-24T06:40:09+00:00",
        **changes,
    }


def a_run(root: Path, promoted: dict[str, Any] | None = None) -> Paths:
    paths = Paths(root)
    for stem, values in STAGES.items():
        io.write_json(paths.metric_file(stem), values)
    for found in HEADLINES:
        io.write_json(SetHeadline.path(paths.metrics, found.query_set), found.to_json())
    if promoted is not None:
        io.write_json(paths.metric_file("promotion"), promoted)
    return paths


def p_values_in(report: str) -> list[str]:
    return re.findall(r"p [=<] [0-9.]+", report)


def test_a_promotion_comes_first_with_its_numbers_rounded(tmp_path: Path) -> None:
    report = render_report(a_run(tmp_path, promotion()))
    lines = report.splitlines()
    assert lines[0] == (
        "Promoted math-embed v3 to @champion on the masked set (194 queries): "
        "MRR@10 0.6557 vs champion 0.6010 (+0.0547, p = 0.0001)"
    )
    assert lines[1] == "  NDCG@10 0.6242 vs champion 0.5901 (+0.0341)"
    assert lines[2] == (  # each other set on its own line, its numbers its own
        "  on the named set (194 queries): MRR@10 0.7444 vs champion 0.7401 (+0.0043, "
        "p = 0.62), NDCG@10 0.7160 vs champion 0.7111 (+0.0049)"
    )
    assert "why: beats the champion" in report and "a665a50244f948f18e3c4d541ec5574e" in report
    # One p-value per set, in human form (the reason's own text aside).
    decision = report.split("What ran:")[0]
    assert p_values_in(decision.replace(promotion()["reason"], "")) == ["p = 0.0001", "p = 0.62"]
    assert "9.999e-05" not in decision.replace(promotion()["reason"], "")


def test_not_promoted_compares_with_the_base_on_the_deciding_set(tmp_path: Path) -> None:
    lost = promotion(
        decision="not promoted",
        reason="mrr@10 0.5468 is not higher than the base's 0.5500",
        compared_against="base",
        compared_version=None,
        version="4",
        sets={
            "masked": {
                "queries": 194,
                "candidate": {"mrr@10": 0.5468},
                "base": {"mrr@10": 0.55},
                "champion": None,
                "p_value": 0.922107789221078,
            }
        },
    )
    report = render_report(a_run(tmp_path, lost))
    first, second, *_ = report.splitlines()
    assert first == (
        "Not promoted: math-embed v4 stays @challenger on the masked set (194 queries): "
        "MRR@10 0.5468 vs base 0.5500 (-0.0032, p = 0.92)"
    )
    assert second == "  why: mrr@10 0.5468 is not higher than the base's 0.5500"


def test_an_older_record_shows_no_base_figure_from_another_set(tmp_path: Path) -> None:
    # promotion.json before sets: its flat base_mrr@10 was the pooled set's (0.1970)
    # beside the masked candidate; only the nested sides, from one set, are read.
    older = {
        "decision": "promoted",
        "candidate_mrr@10": 0.2711,
        "base_mrr@10": 0.197,
        "registered_model": "math-embed",
        "version": "1",
        "compared_against": "base",
        "p_value": 9.999000099990002e-05,
        "candidate": {"mrr@10": 0.2711},
        "base": {"mrr@10": 0.1464},
    }
    first = render_report(a_run(tmp_path, older)).splitlines()[0]
    assert first == (
        "Promoted math-embed v1 to @champion on the set it was decided on: "
        "MRR@10 0.2711 vs base 0.1464 (+0.1247, p = 0.0001)"
    )


def test_without_a_decision_the_first_line_says_so_and_why(tmp_path: Path) -> None:
    report = render_report(a_run(tmp_path))
    assert report.splitlines()[0] == (
        "No decision yet (run `mathembed promote`): on the named set (194 queries): "
        "MRR@10 0.6557 vs base 0.5468 (+0.1089, p = 0.0001)"
    )
    assert p_values_in(report.split("What ran:")[0]) == ["p = 0.0001"]


def test_the_train_line_says_a_night_that_started_from_the_base(tmp_path: Path) -> None:
    paths = a_run(tmp_path)
    train = io.read_json(paths.metric_file("train"))
    started = {"asked": "champion", "started_from": "base", "version": None}
    io.write_json(paths.metric_file("train"), {**train, "init": started})
    assert "  train     100 steps, from the base model, on cpu" in render_report(paths)
    io.write_json(paths.metric_file("train"), {k: v for k, v in train.items() if k != "init"})
    assert "  train     100 steps, on cpu" in render_report(paths)  # an older record: unsaid


def test_a_decision_about_an_earlier_candidate_is_not_this_nights(tmp_path: Path) -> None:
    report = render_report(a_run(tmp_path, promotion(fingerprint="cfec2497", version="2")))
    first, second, *_ = report.splitlines()
    assert first.startswith("No decision yet (this candidate has not been through")
    assert second == "  the last decision, for an earlier candidate (v2), was: promoted"


def test_what_ran_is_one_rounded_line_per_stage(tmp_path: Path) -> None:
    report = render_report(a_run(tmp_path))
    assert (
        "  ingest    16 papers listed, 16 fetched, 0 skipped, 0 quarantined, 0 withdrawn" in report
    )
    assert (
        "  train     100 steps, from @champion v3, on cpu (2 threads), 446 s, "
        "final loss 0.8655, validation loss 4.2056"
    ) in report
    assert (
        "  evaluate  3393 passages, dim 384, held-out queries: 194 named, 232 described"
    ) in report
    # Each set on its line, in the order named, masked, described, BM25 beside the models.
    named, masked, described = report.split("\n")[-8:-5]
    assert named == (
        "    named     194 queries, 90% with their words in a relevant passage: "
        "MRR@10 candidate 0.6500, base 0.5500 (candidate vs base p = 0.0001)"
    )
    assert masked == "    masked    no queries"
    assert described == (
        "    described 232 queries, 0% with their words in a relevant passage: "
        "MRR@10 candidate 0.2412, base 0.1912, bm25 0.2000 (candidate vs base p = 0.0004)"
    )
    assert "  validate  checks passed, 39625 rows in, 39625 kept" in report
    assert "reports/eval/metrics.csv" in report
    # No number with more than four decimals anywhere.
    assert not re.search(r"\d\.\d{5,}", report), report


def test_an_empty_root_says_what_to_run(tmp_path: Path) -> None:
    report = render_report(Paths(tmp_path))
    assert report.splitlines()[0].startswith("No decision yet: no metrics/named.json")
    assert report.count("not run yet (run `make repro`)") == 7


def test_the_command_prints_the_report_and_summary_is_a_hidden_alias(tmp_path: Path) -> None:
    a_run(tmp_path, promotion())
    runner = CliRunner()
    result = runner.invoke(cli.app, ["report", "--root", str(tmp_path)], prog_name="mathembed")
    assert result.exit_code == 0, result.output
    assert result.stdout == render_report(Paths(tmp_path)) + "\n"
    alias = runner.invoke(cli.app, ["summary", "--root", str(tmp_path)], prog_name="mathembed")
    assert alias.exit_code == 0 and alias.stdout == result.stdout
    listed = runner.invoke(cli.app, ["--help"], prog_name="mathembed").output
    assert " report " in listed and " summary " not in listed


def test_the_transfer_scope_names_the_windows_the_foreign_corpus_and_what_was_not_asked() -> None:
    record = {
        "window_chars": 1500,
        "windows": 2313,
        "papers": 16,
        "foreign_corpus": {"folder": "corpora/blueprints-eval", "passages": 1200},
        "skipped": {"no abstract": 2},
    }
    assert transfer_scope(record) == (
        "transfer_papers and transfer_named searched 2313 plain windows of 16 papers "
        "(1500 characters, no statement headers); transfer_corpus 1200 passages of the "
        "foreign corpus corpora/blueprints-eval among the passages; "
        "not asked: 2 no abstract"
    )
    without = {key: value for key, value in record.items() if key != "foreign_corpus"}
    assert "foreign" not in transfer_scope(without)
