"""The file-backed Great Expectations context ``<root>/gx``: opened, configured and synced.

The suites are defined in code (:mod:`pipelines.validate.suites`) and synced into the
context on every run (unchanged expectations keep their GX ids, so an unchanged suite
rewrites identical files): the repository's committed ``gx/`` folder is what a run at the
repository root writes, and ``gx/uncommitted/`` (validation results) is git-ignored by
GX's own ``gx/.gitignore``.
"""

from __future__ import annotations

import copy
import datetime as dt
import html
import json
import os
import shutil
import urllib.parse
import urllib.request
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.validate.pages import OFFLINE_CSS

if TYPE_CHECKING:
    from great_expectations.checkpoint.checkpoint import Checkpoint, CheckpointResult
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.core.expectation_validation_result import (
        ExpectationSuiteValidationResult,
    )
    from great_expectations.data_context import FileDataContext

DATA_SOURCE_NAME = "mathembed"
BATCH_DEFINITION_NAME = "whole_frame"
SITE_NAME = "data_quality"
RUN_NAME = "validate"


def load_gx() -> None:
    """Import ``great_expectations`` (once; later imports are free).

    Importing it takes seconds, so it is not done at import time of this module (the CLI
    and every stage would pay for it); every function that needs GX calls this first and
    then imports what it uses. GX's import also trips Python's own deprecation warnings
    for ``sre_constants``/``sre_parse`` (GX imports them directly); those two are silenced
    here, at the one import site, so runs with warnings as errors still work.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message=r"module 'sre_(constants|parse)' is deprecated",
            category=DeprecationWarning,
        )
        import great_expectations  # noqa: F401


def open_context(paths: Paths) -> FileDataContext:
    """The file-backed context at ``<root>/gx`` (created if absent), configured for us.

    Settings written on every run, so a hand edit of ``great_expectations.yml`` cannot
    drift from this code: progress bars off (GX prints one per metric batch), one Data
    Docs site building into ``paths.data_quality_reports``, GX's own custom-styles file holding
    :data:`pipelines.validate.pages.OFFLINE_CSS`.
    """
    load_gx()
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context_dir = paths.gx
    context: FileDataContext = gx.get_context(mode="file", project_root_dir=paths.root)
    # After the context exists (creating one writes GX's template there); the site builder
    # reads the file when it renders.
    styles = context_dir / "plugins" / "custom_data_docs" / "styles"
    styles.mkdir(parents=True, exist_ok=True)
    _write_if_changed(styles / "data_docs_custom_styles.css", OFFLINE_CSS)
    # Set unconditionally: GX hands the stored value back as a dict or an object, and
    # saving an unchanged setting rewrites great_expectations.yml byte for byte.
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    context.variables.save()
    site_config = {
        "class_name": "SiteBuilder",
        "show_how_to_buttons": False,
        "store_backend": {
            "class_name": "TupleFilesystemStoreBackend",
            # Relative to the context folder, so a moved checkout still works.
            "base_directory": Path(
                os.path.relpath(paths.data_quality_reports, context_dir)
            ).as_posix()
            + "/",
        },
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    }
    sites = context.list_data_docs_sites()
    for other_site in [name for name in sites if name != SITE_NAME]:
        context.delete_data_docs_site(other_site)  # GX's default local_site: one site only
    if SITE_NAME not in sites:
        context.add_data_docs_site(SITE_NAME, site_config)  # type: ignore[arg-type]
    elif sites[SITE_NAME] != site_config:
        context.update_data_docs_site(SITE_NAME, site_config)  # type: ignore[arg-type]
    return context


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        io.write_text(path, text)


def clear_previous_run(context: FileDataContext, site_dir: Path) -> None:
    """Drop earlier validation results and the built site: the report shows one run.

    History lives in DVC/git (``metrics/data_quality.json`` and the data versions), not
    in an ever-growing GX result store.
    """
    store = context.validation_results_store
    for key in store.list_keys():
        store.remove_key(key)
    if site_dir.exists():
        shutil.rmtree(site_dir)


def sync_checkpoint(context: FileDataContext, name: str, suite: ExpectationSuite) -> Checkpoint:
    """Add or update asset, batch definition, suite, validation definition and checkpoint.

    One checkpoint per table: a checkpoint passes the same batch parameters to all its
    validation definitions, and each dataframe asset needs its own dataframe.
    """
    load_gx()
    import great_expectations as gx
    from great_expectations.datasource.fluent import PandasDatasource

    try:
        data_source = context.data_sources.get(DATA_SOURCE_NAME)
    except KeyError:
        data_source = context.data_sources.add_pandas(DATA_SOURCE_NAME)
    if not isinstance(data_source, PandasDatasource):
        raise ValueError(
            f"{context.root_directory}/great_expectations.yml: data source "
            f"{DATA_SOURCE_NAME!r} is a {data_source.type!r} source, expected pandas; "
            "remove it from fluent_datasources and rerun"
        )
    if name in data_source.get_asset_names():
        asset = data_source.get_asset(name)
    else:
        asset = data_source.add_dataframe_asset(name)
    try:
        batch_definition = asset.get_batch_definition(BATCH_DEFINITION_NAME)
    except KeyError:
        batch_definition = asset.add_batch_definition_whole_dataframe(BATCH_DEFINITION_NAME)
    _reuse_expectation_ids(context, suite)
    validation_definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch_definition, suite=suite)
    )
    return context.checkpoints.add_or_update(
        gx.Checkpoint(
            name=name,
            validation_definitions=[validation_definition],
            # No UpdateDataDocsAction: it would render the values as GX stored them;
            # publish_docs builds the pages from an escaped copy instead.
            actions=[],
            # SUMMARY keeps up to 20 example values per failed expectation: enough to read,
            # small enough for a corpus of millions of passages.
            result_format="SUMMARY",
        )
    )


def _reuse_expectation_ids(context: FileDataContext, suite: ExpectationSuite) -> None:
    """Give each unchanged expectation the id it already has in the stored suite.

    GX's ``suites.add_or_update`` means to do this, but compares expectations including
    their ids, so every sync would mint new ids and rewrite the committed suite files.
    """
    from great_expectations.exceptions import DataContextError

    try:
        stored = context.suites.get(suite.name)
    except DataContextError:
        return
    ids_by_definition = {
        _definition(expectation): expectation.id for expectation in stored.expectations
    }
    for expectation in suite.expectations:
        expectation.id = ids_by_definition.get(_definition(expectation))


def _definition(expectation: Any) -> str:
    """An expectation's configuration without its id, as a comparable string."""
    configuration = expectation.configuration.to_json_dict()
    configuration.pop("id", None)
    return json.dumps(configuration, sort_keys=True)


def run_id(run_time: dt.datetime) -> Any:
    from great_expectations.core.run_identifier import RunIdentifier

    return RunIdentifier(run_name=RUN_NAME, run_time=run_time)


def only_validation_result(
    checkpoint_result: CheckpointResult, name: str
) -> tuple[Any, ExpectationSuiteValidationResult]:
    """The (result key, validation result) of a one-suite checkpoint run."""
    results = list(checkpoint_result.run_results.items())
    if len(results) != 1:
        raise RuntimeError(f"checkpoint {name!r} returned {len(results)} results, expected 1")
    return results[0]


def escaped_for_docs(value: Any) -> Any:
    """``value`` (an expectation's ``result``) with every string in it HTML-escaped (pure).

    GX 1.x escapes the parameters of its sentence templates but puts the values it shows in
    table cells (the unexpected values and their counts, an observed value) into the page
    as they are: a passage holding ``<img src=x onerror=...>`` became an element and its
    handler ran when the page was opened. Escaped, it shows as the text it is.
    """
    if isinstance(value, str):
        return html.escape(value, quote=True)
    if isinstance(value, dict):
        return {key: escaped_for_docs(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [escaped_for_docs(item) for item in value]
    return value


def publish_docs(
    context: FileDataContext,
    result_key: Any,
    validation: ExpectationSuiteValidationResult,
    suite_name: str,
) -> None:
    """Build the suite's and the result's Data Docs pages from the result with its values
    escaped (:func:`escaped_for_docs`).

    The escaped copy replaces the stored result (``gx/uncommitted``, kept only for these
    pages); ``validation`` itself, which the front page and the metrics read, is unchanged.
    """
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
    )

    escaped = copy.deepcopy(validation)
    for expectation_result in escaped.results:
        expectation_result.result = escaped_for_docs(expectation_result.result)
    context.validation_results_store.set(result_key, escaped)
    context.build_data_docs(
        site_names=[SITE_NAME],
        resource_identifiers=[result_key, ExpectationSuiteIdentifier(name=suite_name)],
    )


def site_page(context: FileDataContext, resource: Any, site_dir: Path) -> str | None:
    """A resource's Data Docs page relative to the site folder (None if not built)."""
    urls = context.get_docs_sites_urls(
        resource_identifier=resource, site_name=SITE_NAME, only_if_exists=True
    )
    url = urls[0].get("site_url") if urls else None
    if not url:
        return None
    page = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
    return Path(os.path.relpath(page, site_dir)).as_posix()
