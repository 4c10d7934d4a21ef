"""The sample mirror served over real HTTP: arXiv's Atom API, e-prints, time and faults."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from repo import REPO

from pipelines.mirror.corpora.stacks import CORPUS_DIR, STACKS_SOURCE, build_stacks_mirror
from pipelines.mirror.corpora.synthetic import generate_mirror
from pipelines.mirror.corpora.synthetic.kinds import PDF_ONLY, TEX_GZ, TEX_TAR, WITHDRAWN
from pipelines.mirror.layout import format_time, load_entries, parse_time
from pipelines.mirror.listing import QueryError, parse_search_query, run_query
from pipelines.mirror.manifest import Manifest
from pipelines.mirror.server import MirrorServer, serving

ATOM = "{http://www.w3.org/2005/Atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
ARXIV = "{http://arxiv.org/schemas/atom}"
TIMEOUT = 10  # seconds; only the stall test uses a short one on purpose


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    folder = tmp_path_factory.mktemp("served") / "mirror"
    return folder, generate_mirror(folder, 48, 11)


@pytest.fixture
def server(mirror: tuple[Path, Manifest]) -> Iterator[MirrorServer]:
    with MirrorServer(mirror[0]) as running:
        yield running


@pytest.fixture(scope="module")
def entries(mirror: tuple[Path, Manifest]) -> list[dict[str, Any]]:
    lines = (mirror[0] / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def query(server: MirrorServer, **params: Any) -> requests.Response:
    return requests.get(f"{server.base_url}/api/query", params=params, timeout=TIMEOUT)


def feed(response: requests.Response) -> ElementTree.Element:
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("application/atom+xml")
    return ElementTree.fromstring(response.content)


def entry_ids(root: ElementTree.Element) -> list[str]:
    return [entry.findtext(f"{ATOM}id", "") for entry in root.findall(f"{ATOM}entry")]


def latest_versions(
    entries: list[dict[str, Any]], now: str | None = None
) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if now is not None and entry["updated"] > now:
            continue
        known = latest.get(entry["paper_id"])
        if known is None or entry["version"] > known["version"]:
            latest[entry["paper_id"]] = entry
    return latest


def all_pages(server: MirrorServer, search_query: str, page: int) -> list[ElementTree.Element]:
    roots, start = [], 0
    while True:
        root = feed(
            query(server, search_query=search_query, start=start, max_results=page,
                  sortBy="lastUpdatedDate", sortOrder="ascending")
        )  # fmt: skip
        roots.append(root)
        start += page
        if start >= int(root.findtext(f"{OPENSEARCH}totalResults", "0")):
            return roots


CATEGORIES = "cat:math.CO OR cat:math.NT OR cat:math.AT OR cat:math.QA OR cat:math.RT OR cat:math.CA OR cat:math.CV OR cat:math.GR"  # noqa: E501


# -- the Atom listing -------------------------------------------------------------------


def test_feed_is_arxiv_atom_with_every_entry_field(
    server: MirrorServer, entries: list[dict[str, Any]]
) -> None:
    root = feed(query(server, search_query="cat:math.CO", max_results=5))
    assert root.tag == f"{ATOM}feed"
    assert root.findtext(f"{ATOM}title", "").startswith("ArXiv Query: search_query=cat:math.CO")
    assert root.findtext(f"{ATOM}id", "").startswith("http://arxiv.org/api/")
    assert root.find(f"{ATOM}updated") is not None
    assert root.findtext(f"{OPENSEARCH}itemsPerPage") == "5"
    assert root.findtext(f"{OPENSEARCH}startIndex") == "0"
    by_id = {f"{e['paper_id']}v{e['version']}": e for e in entries}
    items = root.findall(f"{ATOM}entry")
    assert len(items) == 5
    for item in items:
        entry_id = item.findtext(f"{ATOM}id", "")
        assert entry_id.startswith("http://arxiv.org/abs/")
        source = by_id[entry_id.removeprefix("http://arxiv.org/abs/")]
        assert item.findtext(f"{ATOM}title") == source["title"]
        assert item.findtext(f"{ATOM}summary") == source["summary"]
        assert item.findtext(f"{ATOM}updated") == source["updated"]
        assert item.findtext(f"{ATOM}published") == source["published"]
        authors = [a.findtext(f"{ATOM}name") for a in item.findall(f"{ATOM}author")]
        assert authors == source["authors"]
        assert item.findtext(f"{ARXIV}comment") == source["comment"]
        primary = item.find(f"{ARXIV}primary_category")
        assert primary is not None and primary.get("term") == source["primary_category"]
        terms = [c.get("term") for c in item.findall(f"{ATOM}category")]
        assert terms == source["categories"] and "math.CO" in terms
        links = {link.get("title") or link.get("rel"): link for link in item.findall(f"{ATOM}link")}
        assert links["pdf"].get("type") == "application/pdf"
        assert (
            links["pdf"].get("href", "").endswith(f"/pdf/{source['paper_id']}v{source['version']}")
        )
        assert links["alternate"].get("type") == "text/html"
        assert "source" not in links  # the synthetic sample's ids name no real paper


def test_a_stacks_paper_is_listed_with_the_link_to_its_chapter(tmp_path: Path) -> None:
    chapters = ("categories.tex", "fields.tex")
    start, end = date(2024, 1, 1), date(2024, 3, 31)
    build_stacks_mirror(
        tmp_path / "stacks", REPO / CORPUS_DIR, start=start, end=end, chapters=chapters
    )
    with serving(tmp_path / "stacks") as base_url:
        answer = requests.get(
            f"{base_url}/api/query", params={"search_query": "cat:math.AG"}, timeout=TIMEOUT
        )
    items = feed(answer).findall(f"{ATOM}entry")
    sources = {
        item.findtext(f"{ATOM}id", "").removeprefix("http://arxiv.org/abs/"): [
            (link.get("href"), link.get("rel"))
            for link in item.findall(f"{ATOM}link")
            if link.get("title") == "source"
        ]
        for item in items
    }
    assert sources == {
        "stacks/2607001v1": [(STACKS_SOURCE + "categories.tex", "related")],
        "stacks/2607002v1": [(STACKS_SOURCE + "fields.tex", "related")],
    }


def test_listing_shows_only_the_latest_version_of_each_paper(
    server: MirrorServer, entries: list[dict[str, Any]]
) -> None:
    roots = all_pages(server, CATEGORIES, 50)
    listed = [entry_id for root in roots for entry_id in entry_ids(root)]
    expected = {
        f"http://arxiv.org/abs/{pid}v{e['version']}" for pid, e in latest_versions(entries).items()
    }
    assert sorted(listed) == sorted(expected)
    assert len(listed) == len({entry_id.rsplit("v", 1)[0] for entry_id in listed})


def test_pagination_covers_every_match_once_in_last_updated_order(
    server: MirrorServer, entries: list[dict[str, Any]]
) -> None:
    roots = all_pages(server, CATEGORIES, 7)
    assert len(roots) >= 7
    listed = []
    for number, root in enumerate(roots):
        assert root.findtext(f"{OPENSEARCH}startIndex") == str(7 * number)
        assert root.findtext(f"{OPENSEARCH}itemsPerPage") == "7"
        page = root.findall(f"{ATOM}entry")
        assert len(page) == 7 or number == len(roots) - 1
        listed += [(e.findtext(f"{ATOM}updated", ""), e.findtext(f"{ATOM}id", "")) for e in page]
    assert listed == sorted(listed)  # ascending by lastUpdatedDate, ties by id
    assert len(listed) == len(set(listed)) == len(latest_versions(entries))
    past_the_end = feed(query(server, search_query=CATEGORIES, start=len(listed), max_results=7))
    assert entry_ids(past_the_end) == []
    assert past_the_end.findtext(f"{OPENSEARCH}totalResults") == str(len(listed))


def test_descending_and_submitted_date_orders(server: MirrorServer) -> None:
    down = feed(query(server, search_query=CATEGORIES, max_results=100,
                      sortBy="lastUpdatedDate", sortOrder="descending"))  # fmt: skip
    up = feed(query(server, search_query=CATEGORIES, max_results=100,
                    sortBy="lastUpdatedDate", sortOrder="ascending"))  # fmt: skip
    assert entry_ids(down) == list(reversed(entry_ids(up)))
    submitted = feed(query(server, search_query=CATEGORIES, max_results=100,
                           sortBy="submittedDate", sortOrder="ascending"))  # fmt: skip
    published = [e.findtext(f"{ATOM}published", "") for e in submitted.findall(f"{ATOM}entry")]
    assert published == sorted(published)


def test_category_filter_and_boolean_grouping(
    server: MirrorServer, entries: list[dict[str, Any]]
) -> None:
    latest = latest_versions(entries)

    def ids(search: str) -> set[str]:
        return {i for root in all_pages(server, search, 100) for i in entry_ids(root)}

    def expected(test: Any) -> set[str]:
        return {f"http://arxiv.org/abs/{p}v{e['version']}" for p, e in latest.items() if test(e)}

    co, nt = ids("cat:math.CO"), ids("cat:math.NT")
    assert co == expected(lambda e: "math.CO" in e["categories"]) and co
    assert nt == expected(lambda e: "math.NT" in e["categories"]) and nt
    assert ids("cat:math.CO OR cat:math.NT") == co | nt
    assert ids("cat:math.CO AND cat:math.NT") == co & nt
    assert ids("cat:math.CO ANDNOT cat:math.NT") == co - nt
    assert ids("(cat:math.CO OR cat:math.NT) ANDNOT cat:math.CO") == nt - co
    assert ids("cat:math.XX") == set()


def test_date_range_is_inclusive_at_minute_resolution(
    server: MirrorServer, entries: list[dict[str, Any]]
) -> None:
    latest = latest_versions(entries)
    target = sorted(latest.values(), key=lambda e: e["updated"])[len(latest) // 2]
    moment = parse_time(target["updated"])
    minute = moment.strftime("%Y%m%d%H%M")
    before = (moment - timedelta(minutes=1)).strftime("%Y%m%d%H%M")
    wanted = f"http://arxiv.org/abs/{target['paper_id']}v{target['version']}"

    def listed(low: str, high: str) -> list[str]:
        search = f"({CATEGORIES}) AND lastUpdatedDate:[{low} TO {high}]"
        return [i for root in all_pages(server, search, 100) for i in entry_ids(root)]

    assert wanted in listed(minute, minute)
    assert wanted in listed("202401010000", minute)
    assert wanted not in listed("202401010000", before)
    window = listed("202402010000", "202402292359")
    expected = {
        f"http://arxiv.org/abs/{p}v{e['version']}"
        for p, e in latest.items()
        if "2024-02-01T00:00:00Z" <= e["updated"] <= "2024-02-29T23:59:59Z"
    }
    assert set(window) == expected and expected


def test_set_now_hides_future_versions_and_shows_the_latest_visible_one(
    mirror: tuple[Path, Manifest], server: MirrorServer, entries: list[dict[str, Any]]
) -> None:
    _folder, manifest = mirror
    revised = next(r for r in manifest.versions if r.version == 2 and r.kind in (TEX_TAR, TEX_GZ))
    v1 = manifest.record(revised.paper_id, 1)
    between = format_time(parse_time(revised.updated) - timedelta(seconds=1))
    assert v1.updated <= between < revised.updated

    server.set_now(between)
    assert server.now == between
    root = feed(query(server, id_list=revised.paper_id))
    assert entry_ids(root) == [f"http://arxiv.org/abs/{revised.paper_id}v1"]
    future = [i for r in all_pages(server, CATEGORIES, 100) for i in entry_ids(r)]
    visible = latest_versions(entries, between)
    assert len(future) == len(visible) < len(latest_versions(entries))
    latest_eprint = requests.get(f"{server.base_url}/e-print/{revised.paper_id}", timeout=TIMEOUT)
    assert latest_eprint.content == (mirror[0] / str(v1.eprint)).read_bytes()
    hidden = requests.get(f"{server.base_url}/e-print/{revised.versioned_id}", timeout=TIMEOUT)
    assert hidden.status_code == 404

    server.set_now(revised.updated)
    root = feed(query(server, id_list=revised.paper_id))
    assert entry_ids(root) == [f"http://arxiv.org/abs/{revised.versioned_id}"]
    shown = requests.get(f"{server.base_url}/e-print/{revised.versioned_id}", timeout=TIMEOUT)
    assert shown.status_code == 200

    server.set_now("2023-12-31T23:59:59Z")
    only_old = [i for r in all_pages(server, CATEGORIES, 100) for i in entry_ids(r)]
    assert all("/math/" in entry_id for entry_id in only_old)  # only 2005 v1s are that old
    server.set_now(None)
    assert server.now is None


def test_id_list_selects_papers_and_versions(
    mirror: tuple[Path, Manifest], server: MirrorServer
) -> None:
    _folder, manifest = mirror
    revised = next(r for r in manifest.versions if r.version == 2)
    other = next(p for p in manifest.papers() if p != revised.paper_id)
    root = feed(query(server, id_list=f"{revised.paper_id}v1,{other}"))
    latest_other = manifest.latest()[other]
    assert entry_ids(root) == [
        f"http://arxiv.org/abs/{revised.paper_id}v1",
        f"http://arxiv.org/abs/{latest_other.versioned_id}",
    ]
    combined = feed(query(server, id_list=other, search_query="cat:math.XX"))
    assert entry_ids(combined) == []


def test_no_query_gives_an_empty_feed(server: MirrorServer) -> None:
    root = feed(query(server))
    assert root.findtext(f"{OPENSEARCH}totalResults") == "0" and entry_ids(root) == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"search_query": "ti:partitions"}, "unsupported field 'ti'"),
        ({"search_query": "all:electron AND cat:math.CO"}, "unsupported field 'all'"),
        ({"search_query": "(cat:math.CO OR cat:math.NT"}, "unbalanced parentheses"),
        ({"search_query": "cat:math.CO AND"}, "ends where a term was expected"),
        ({"search_query": "lastUpdatedDate:[2024 TO 202402010000]"}, "YYYYMMDDHHMM"),
        ({"search_query": "lastUpdatedDate:202401010000"}, "needs a range"),
        ({"search_query": "cat:math.CO", "start": "-1"}, "start must be non-negative"),
        ({"search_query": "cat:math.CO", "max_results": "ten"}, "max_results must be an integer"),
        ({"search_query": "cat:math.CO", "max_results": "5000"}, "at most 2000"),
        ({"search_query": "cat:math.CO", "sortBy": "title"}, "sortBy must be"),
        ({"id_list": "1234.123"}, "incorrect id format for 1234.123"),
    ],
)
def test_unsupported_or_malformed_queries_get_arxivs_error_feed(
    server: MirrorServer, params: dict[str, str], message: str
) -> None:
    response = query(server, **params)
    assert response.status_code == 400
    root = ElementTree.fromstring(response.content)
    (error,) = root.findall(f"{ATOM}entry")
    assert error.findtext(f"{ATOM}id", "").startswith("http://arxiv.org/api/errors#")
    assert error.findtext(f"{ATOM}title") == "Error"
    assert message in error.findtext(f"{ATOM}summary", "")


# -- e-prints ---------------------------------------------------------------------------


def test_eprints_are_the_stored_bytes_with_the_sidecar_content_type(
    mirror: tuple[Path, Manifest], server: MirrorServer
) -> None:
    folder, manifest = mirror
    checked = set()
    with requests.Session() as session:  # one keep-alive connection, like ingest
        for record in manifest.versions:
            if record.kind == WITHDRAWN or record.kind in checked and record.version == 1:
                continue
            checked.add(record.kind)
            response = session.get(
                f"{server.base_url}/e-print/{record.versioned_id}", timeout=TIMEOUT
            )
            assert response.status_code == 200, record
            assert response.headers["Content-Type"] == record.content_type
            assert "Content-Encoding" not in response.headers
            assert response.content == (folder / str(record.eprint)).read_bytes()
    assert {TEX_TAR, TEX_GZ, PDF_ONLY} <= checked
    assert any(record.paper_id.startswith("math/") for record in manifest.versions)


def test_old_style_ids_and_latest_version_without_a_version(
    mirror: tuple[Path, Manifest], server: MirrorServer
) -> None:
    folder, manifest = mirror
    old = next(record for record in manifest.latest().values() if "/" in record.paper_id)
    response = requests.get(f"{server.base_url}/e-print/{old.paper_id}", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.content == (folder / str(old.eprint)).read_bytes()
    root = feed(query(server, search_query=f"id:{old.paper_id}"))
    assert entry_ids(root) == [f"http://arxiv.org/abs/{old.versioned_id}"]


def test_withdrawn_versions_are_listed_but_have_no_eprint(
    mirror: tuple[Path, Manifest], server: MirrorServer
) -> None:
    _folder, manifest = mirror
    withdrawn = manifest.of_kind(WITHDRAWN)[0]
    root = feed(query(server, id_list=withdrawn.paper_id))
    (item,) = root.findall(f"{ATOM}entry")
    assert item.findtext(f"{ATOM}id", "").endswith(withdrawn.versioned_id)
    assert "withdrawn" in item.findtext(f"{ARXIV}comment", "")
    for path in (withdrawn.versioned_id, withdrawn.paper_id):
        response = requests.get(f"{server.base_url}/e-print/{path}", timeout=TIMEOUT)
        assert response.status_code == 404 and "withdrawn" in response.text
    earlier = requests.get(
        f"{server.base_url}/e-print/{withdrawn.paper_id}v{withdrawn.version - 1}", timeout=TIMEOUT
    )
    assert earlier.status_code == 200


@pytest.mark.parametrize(
    "path", ["/", "/abs/2401.00001", "/e-print/", "/e-print/2401.99999v1", "/e-print/nonsense"]
)
def test_unknown_paths_are_404(server: MirrorServer, path: str) -> None:
    response = requests.get(f"{server.base_url}{path}", timeout=TIMEOUT)
    assert response.status_code == 404


def test_only_get_is_served(server: MirrorServer) -> None:
    response = requests.post(f"{server.base_url}/api/query", timeout=TIMEOUT)
    assert response.status_code == 501


# -- faults -----------------------------------------------------------------------------


def first_tar(manifest: Manifest) -> str:
    return next(r.versioned_id for r in manifest.versions if r.kind == TEX_TAR)


@pytest.mark.parametrize("status", ["429", "503", "500"])
def test_status_faults_then_normal_service(mirror: tuple[Path, Manifest], status: str) -> None:
    with MirrorServer(mirror[0], faults={"/api/query": [status, status]}) as server:
        for _ in range(2):
            response = query(server, search_query="cat:math.CO")
            assert response.status_code == int(status)
            if status == "500":
                assert "Retry-After" not in response.headers
            else:
                assert response.headers["Retry-After"] == "1"
        assert query(server, search_query="cat:math.CO").status_code == 200
        assert [fault for _path, fault in server.faults_applied] == [status, status]
        assert len(server.requests) == 3


def test_faults_apply_only_to_their_prefix_longest_first(mirror: tuple[Path, Manifest]) -> None:
    tar = first_tar(mirror[1])
    faults = {"/e-print/": ["500"], f"/e-print/{tar}": ["503"]}
    with MirrorServer(mirror[0], faults=faults) as server:
        assert query(server, search_query="cat:math.CO").status_code == 200
        url = f"{server.base_url}/e-print/{tar}"
        assert requests.get(url, timeout=TIMEOUT).status_code == 503
        assert requests.get(url, timeout=TIMEOUT).status_code == 500
        assert requests.get(url, timeout=TIMEOUT).status_code == 200
        server.add_faults("/e-print/", ["429"])
        assert requests.get(url, timeout=TIMEOUT).status_code == 429


def test_stall_outlasts_a_short_client_timeout(mirror: tuple[Path, Manifest]) -> None:
    with MirrorServer(mirror[0], faults={"/api/query": ["stall"]}, stall_seconds=5.0) as server:
        with pytest.raises(requests.exceptions.ReadTimeout):
            query_url = f"{server.base_url}/api/query?search_query=cat:math.CO"
            requests.get(query_url, timeout=0.3)
        assert server.faults_applied == [("/api/query?search_query=cat:math.CO", "stall")]
        assert query(server, search_query="cat:math.CO").status_code == 200


def test_reset_closes_the_connection_without_a_response(mirror: tuple[Path, Manifest]) -> None:
    tar = first_tar(mirror[1])
    with MirrorServer(mirror[0], faults={f"/e-print/{tar}": ["reset"]}) as server:
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(f"{server.base_url}/e-print/{tar}", timeout=TIMEOUT)
        assert requests.get(f"{server.base_url}/e-print/{tar}", timeout=TIMEOUT).status_code == 200


def test_truncate_sends_half_the_body_under_the_full_length(
    mirror: tuple[Path, Manifest],
) -> None:
    folder, manifest = mirror
    record = next(r for r in manifest.versions if r.kind == TEX_TAR)
    full = (folder / str(record.eprint)).read_bytes()
    with MirrorServer(folder, faults={"/e-print/": ["truncate", "truncate"]}) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
        try:
            connection.request("GET", f"/e-print/{record.versioned_id}")
            response = connection.getresponse()
            assert response.status == 200
            assert response.getheader("Content-Length") == str(len(full))
            with pytest.raises(http.client.IncompleteRead) as caught:
                response.read()
            assert caught.value.partial == full[: len(full) // 2]
        finally:
            connection.close()
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            requests.get(f"{server.base_url}/e-print/{record.versioned_id}", timeout=TIMEOUT)
        assert requests.get(f"{server.base_url}/e-print/{record.versioned_id}",
                            timeout=TIMEOUT).content == full  # fmt: skip


def test_unknown_faults_and_bad_prefixes_are_refused(mirror: tuple[Path, Manifest]) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        MirrorServer(mirror[0], faults={"/api/query": ["418"]})
    with pytest.raises(ValueError, match="must be a path"):
        MirrorServer(mirror[0], faults={"api/query": ["429"]})


# -- lifecycle --------------------------------------------------------------------------


def test_server_stops_on_exit_and_its_port_closes(mirror: tuple[Path, Manifest]) -> None:
    with MirrorServer(mirror[0]) as server:
        url = server.base_url
        assert url.startswith("http://127.0.0.1:")
        port = int(url.rsplit(":", 1)[1])
        session = requests.Session()
        assert session.get(f"{url}/e-print/{first_tar(mirror[1])}", timeout=TIMEOUT).ok
    # The idle keep-alive connection above did not keep the server alive.
    session.close()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 2):
        pass
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url


def test_stop_does_not_wait_for_a_stalled_request(mirror: tuple[Path, Manifest]) -> None:
    server = MirrorServer(mirror[0], faults={"/api/query": ["stall"]}, stall_seconds=60.0)
    errors: list[BaseException] = []

    def client(url: str) -> None:
        try:
            requests.get(url, timeout=30)
        except requests.exceptions.RequestException as error:
            errors.append(error)

    with server:
        waiting = threading.Thread(
            target=client, args=(f"{server.base_url}/api/query?search_query=cat:math.CO",)
        )
        waiting.start()
        assert server.wait_for_requests(1)  # the request has reached the stall
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        stopper.join(timeout=10)
        waiting.join(timeout=10)
        assert not stopper.is_alive() and not waiting.is_alive()
    assert errors and isinstance(errors[0], requests.exceptions.ConnectionError)


def test_missing_mirror_names_the_command_to_run(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="mathembed sample"):
        MirrorServer(tmp_path / "nowhere")
    with (
        pytest.raises(FileNotFoundError, match="run mathembed sample first"),
        serving(tmp_path / "nowhere"),
    ):
        pass


# -- the pure parts -----------------------------------------------------------------------


def test_and_binds_tighter_than_or(mirror: tuple[Path, Manifest]) -> None:
    entries = load_entries(mirror[0])
    both = parse_search_query("cat:math.XX AND cat:math.CO OR cat:math.NT")
    grouped = parse_search_query("cat:math.XX AND (cat:math.CO OR cat:math.NT)")
    nt = [e for e in entries if "math.NT" in e.categories]
    assert nt and all(both(e) for e in nt)
    assert not any(grouped(e) for e in entries)


def test_run_query_is_pure_and_time_aware(mirror: tuple[Path, Manifest]) -> None:
    entries = load_entries(mirror[0])
    params = {"search_query": CATEGORIES, "max_results": "1000"}
    everything = run_query(params, entries, None)
    early = run_query(params, entries, parse_time("2024-02-01T00:00:00Z"))
    assert early.total < everything.total
    assert all(e.updated <= "2024-02-01T00:00:00Z" for e in early.entries)
    with pytest.raises(QueryError):
        run_query({"search_query": "au:Ramanujan"}, entries, None)
