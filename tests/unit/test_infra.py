"""Static checks of the deployment files in infra/ (no Docker or Kubernetes needed).

They catch what would otherwise surface only at `docker compose up`, `prefect deploy` or a
first nightly run: files that do not parse, entrypoints that are not flows, a schedule that
drifted from params.yaml, COPY sources missing from the build context, environment
variables nobody defines or reads, dangling depends_on, clashing ports, undeclared volumes,
a GPU that is not actually requested, and credentials in git.
"""

from __future__ import annotations

import configparser
import fnmatch
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from repo import REPO as ROOT

INFRA = ROOT / "infra"
PREFECT_YAML = INFRA / "prefect.yaml"
COMPOSE = INFRA / "docker-compose.yml"
ENV_EXAMPLE = INFRA / ".env.example"
K8S_GPU_TEMPLATE = INFRA / "k8s" / "gpu-job-template.json"
K8S_TRAIN_JOB = INFRA / "k8s" / "train-job.yaml"
K8S_QDRANT = INFRA / "k8s" / "qdrant.yaml"
ENTRYPOINT_SCRIPT = INFRA / "worker-entrypoint.sh"
DOCKERFILES = [INFRA / "Dockerfile", INFRA / "Dockerfile.gpu", INFRA / "mlflow" / "Dockerfile"]
# The worker images' build context is the repository root (see docker-compose.yml).
WORKER_DOCKERFILES = DOCKERFILES[:2]

# The flow contract's schedule, used only while params.yaml has no `flow` section.
CONTRACT_SCHEDULE = "0 2 * * *"

# Where "the project reads this variable" is looked up: the code, the offline switches, the
# params (flow.webhook_env, graph.llm_api_key_env name variables) and infra's own scripts.
PROJECT_SOURCE_GLOBS = [
    "pipelines/**/*.py",
    "flows/**/*.py",
    "pipelines/common/offline.env",
    "params.yaml",
    "infra/worker-entrypoint.sh",
    "infra/postgres/*.sh",
]

# Variables the third-party images document and read themselves.
IMAGE_VARIABLES = {
    "postgres": {"POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"},
    "minio/minio": {"MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"},
    "qdrant/qdrant": {"QDRANT__TELEMETRY_DISABLED"},
}

ENV_NAME = r"[A-Z_][A-Z0-9_]*"
# ${VAR}, ${VAR:-default}, ${VAR:?error} (compose interpolation); $$VAR is the container's.
COMPOSE_INTERPOLATION = re.compile(rf"(?<!\$)\$\{{({ENV_NAME})(?::?[-?][^}}]*)?\}}")
# {{ $VAR }} in prefect.yaml (Prefect's environment-variable placeholder).
PREFECT_ENV_PLACEHOLDER = re.compile(rf"\{{\{{\s*\$({ENV_NAME})\s*\}}\}}")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def env_example() -> dict[str, str]:
    """infra/.env.example as a dict; any line that is not blank, a comment or KEY=VALUE fails."""
    entries: dict[str, str] = {}
    for number, line in enumerate(ENV_EXAMPLE.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = re.fullmatch(rf"({ENV_NAME})=(\S*)", stripped)
        assert match, f"{ENV_EXAMPLE}:{number}: not KEY=VALUE without spaces or quotes: {line!r}"
        assert match.group(1) not in entries, f"{ENV_EXAMPLE}:{number}: {match.group(1)} twice"
        entries[match.group(1)] = match.group(2)
    return entries


def compose_text() -> str:
    """docker-compose.yml without its comment lines (which may quote ${VAR} as an example)."""
    lines = COMPOSE.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("#"))


def compose_services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = load_yaml(COMPOSE)["services"]
    return services


def deployments() -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in load_yaml(PREFECT_YAML)["deployments"]}


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    pairs = []
    for line in logical:
        if line.strip():
            instruction, _, arguments = line.strip().partition(" ")
            pairs.append((instruction.upper(), arguments.strip()))
    return pairs


def dockerignore_excludes(relative_path: str) -> bool:
    """Whether .dockerignore leaves relative_path (or a folder above it) out of the context.

    Docker's rules: patterns are relative to the context root, `**/` matches any number of
    folders (none included), `!` re-includes, and the last matching pattern wins.
    """
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    parts = Path(relative_path).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        variants = [pattern, pattern[3:]] if pattern.startswith("**/") else [pattern]
        if any(fnmatch.fnmatchcase(c, v) for c in candidates for v in variants):
            excluded = not negated
    return excluded


# --- every file parses ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [PREFECT_YAML, COMPOSE, K8S_GPU_TEMPLATE, K8S_TRAIN_JOB], ids=lambda p: p.name
)
def test_deployment_file_parses_to_a_mapping(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    assert isinstance(document, dict) and document, f"{path} is empty or not a mapping"


def test_env_example_parses_and_holds_placeholders_only() -> None:
    entries = env_example()
    assert entries
    secret_like = re.compile(r"PASSWORD|SECRET|TOKEN|_API_KEY")
    for key, value in entries.items():
        if secret_like.search(key):
            assert value == "" or value.startswith("change-me"), (
                f"infra/.env.example: {key} must be empty or a change-me placeholder, got {value!r}"
            )


def test_no_env_file_with_credentials_is_in_git() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    env_files = [
        p for p in tracked if Path(p).name == ".env" or Path(p).name.endswith(".env.local")
    ]
    assert env_files == []
    ignored = subprocess.run(["git", "check-ignore", "-q", "infra/.env"], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "infra/.env (the real credentials) must be git-ignored"
    assert dockerignore_excludes("infra/.env"), "infra/.env must stay out of the images"


# --- prefect.yaml ----------------------------------------------------------------------------


def test_prefect_yaml_is_what_prefect_deploy_accepts() -> None:
    from prefect.cli.deploy._models import PrefectYamlModel

    model = PrefectYamlModel.model_validate(load_yaml(PREFECT_YAML))
    assert {d.name for d in model.deployments} == {"nightly-retrain", "train-gpu"}
    # An explicit pull step: without one `prefect deploy` records the deploying machine's folder.
    assert model.pull == [
        {"prefect.deployments.steps.set_working_directory": {"directory": "/app"}}
    ]
    for dockerfile in WORKER_DOCKERFILES:
        workdirs = [a for i, a in dockerfile_instructions(dockerfile) if i == "WORKDIR"]
        assert workdirs[-1] == "/app", f"{dockerfile}: the code must be where the pull step goes"


def test_deployments_use_the_cpu_and_gpu_pools() -> None:
    by_name = deployments()
    assert by_name["nightly-retrain"]["work_pool"]["name"] == "cpu"
    assert by_name["nightly-retrain"]["entrypoint"] == "flows/nightly.py:nightly_retrain"
    assert by_name["train-gpu"]["work_pool"]["name"] == "gpu"
    assert by_name["train-gpu"]["entrypoint"] == "flows/train_gpu.py:train_gpu"
    assert by_name["train-gpu"]["work_pool"]["job_variables"]["gpu_count"] == 1


@pytest.mark.parametrize("name", ["nightly-retrain", "train-gpu"])
def test_deployment_entrypoint_is_a_flow_taking_its_parameters(name: str) -> None:
    from prefect import Flow
    from prefect.flows import load_flow_from_entrypoint

    deployment = deployments()[name]
    file_part, _, _ = deployment["entrypoint"].partition(":")
    assert (ROOT / file_part).is_file(), f"{name}: entrypoint file {file_part} does not exist"
    loaded = load_flow_from_entrypoint(str(ROOT / deployment["entrypoint"]))
    assert isinstance(loaded, Flow)
    assert loaded.name == name
    schema = loaded.parameters
    unknown = set(deployment.get("parameters", {})) - set(schema.properties)
    assert not unknown, f"{name}: prefect.yaml passes parameters the flow lacks: {unknown}"
    if deployment.get("schedules"):
        # A scheduled run gets nothing but the deployment's parameters.
        missing = set(schema.required or []) - set(deployment.get("parameters", {}))
        assert not missing, f"{name}: scheduled runs would lack required parameters {missing}"


def test_nightly_schedule_equals_params_flow_schedule() -> None:
    params = load_yaml(ROOT / "params.yaml")
    flow_section = params.get("flow") or {"schedule": CONTRACT_SCHEDULE, "timezone": "UTC"}
    (schedule,) = deployments()["nightly-retrain"]["schedules"]
    assert schedule["cron"] == flow_section["schedule"]
    assert schedule["timezone"] == flow_section["timezone"]


def test_image_and_prefect_yaml_versions_match_the_installed_clients() -> None:
    import mlflow
    import prefect

    assert load_yaml(PREFECT_YAML)["prefect-version"] == prefect.__version__
    services = compose_services()
    assert services["prefect-server"]["image"].startswith(
        f"prefecthq/prefect:{prefect.__version__}-"
    )
    mlflow_from = [a for i, a in dockerfile_instructions(DOCKERFILES[2]) if i == "FROM"]
    assert mlflow_from == [f"ghcr.io/mlflow/mlflow:v{mlflow.__version__}"]


# --- Dockerfiles -------------------------------------------------------------------------------


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(INFRA)))
def test_dockerfile_copy_sources_exist_in_the_build_context(dockerfile: Path) -> None:
    context = ROOT if dockerfile in WORKER_DOCKERFILES else dockerfile.parent
    copies = [a for i, a in dockerfile_instructions(dockerfile) if i in {"COPY", "ADD"}]
    for arguments in copies:
        words = arguments.split()
        if any(w.startswith("--from=") for w in words):
            continue  # from another stage, not the context
        sources = [w for w in words if not w.startswith("--")][:-1]
        assert sources, f"{dockerfile}: COPY without a source: {arguments}"
        for source in sources:
            assert (context / source).exists(), f"{dockerfile}: COPY source {source} is missing"
            if context == ROOT and source not in {".", "./"}:
                assert not dockerignore_excludes(source), (
                    f"{dockerfile}: COPY source {source} is excluded by .dockerignore"
                )


def test_worker_images_carry_an_executable_entrypoint() -> None:
    for dockerfile in WORKER_DOCKERFILES:
        entrypoints = [a for i, a in dockerfile_instructions(dockerfile) if i == "ENTRYPOINT"]
        assert entrypoints == ['["/app/infra/worker-entrypoint.sh"]'], dockerfile
    assert not dockerignore_excludes("infra/worker-entrypoint.sh")
    assert os.access(ENTRYPOINT_SCRIPT, os.X_OK)
    mode = subprocess.run(
        ["git", "ls-files", "--stage", "infra/worker-entrypoint.sh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if mode:  # committed: git must record the executable bit, or COPY drops it
        assert mode[0] == "100755"


def test_build_context_leaves_out_local_state_and_keeps_the_pipeline() -> None:
    for left_out in [
        ".git",
        ".venv",
        "data/raw",
        "models/candidate",
        "mlruns/mlflow.db",
        "metrics_rs/target/release",
        ".dvc/cache",
        ".dvc/config.local",
    ]:
        assert dockerignore_excludes(left_out), f"{left_out} would be copied into the images"
    for kept in [
        "dvc.yaml",
        "dvc.lock",
        "params.yaml",
        ".dvc/config",
        "pipelines/cli.py",
        "flows/nightly.py",
        "metrics_rs/src",
        "gx/great_expectations.yml",
    ]:
        assert not dockerignore_excludes(kept), f"{kept} is needed in the images"


# --- docker-compose.yml ------------------------------------------------------------------------


def test_compose_depends_on_names_existing_services() -> None:
    services = compose_services()
    for name, service in services.items():
        depends_on = service.get("depends_on", {})
        for dependency in depends_on:
            assert dependency in services, f"{name} depends on unknown service {dependency}"
            if isinstance(depends_on, dict):
                condition = depends_on[dependency]["condition"]
                if condition == "service_healthy":
                    assert "healthcheck" in services[dependency], (
                        f"{name} waits for {dependency} to be healthy, which has no healthcheck"
                    )
                elif condition == "service_completed_successfully":
                    assert services[dependency].get("restart") == "no", dependency


def test_compose_long_running_services_have_healthchecks() -> None:
    for name in ["postgres", "minio", "mlflow", "prefect-server", "qdrant"]:
        assert "healthcheck" in compose_services()[name], name


def test_compose_host_ports_are_unique_and_local() -> None:
    seen: dict[int, str] = {}
    for name, service in compose_services().items():
        for mapping in service.get("ports", []):
            host_ip, host_port, container_port = str(mapping).split(":")
            assert host_ip == "127.0.0.1", f"{name}: {mapping} is reachable from other machines"
            assert int(host_port) not in seen, (
                f"host port {host_port}: {seen.get(int(host_port))} and {name}"
            )
            seen[int(host_port)] = name
            assert container_port.isdigit()
    # The `s3` remote in .dvc/config talks to MinIO on the published port.
    s3_remote = dvc_config()['remote "s3"']
    assert s3_remote["endpointurl"] == "http://127.0.0.1:9000"
    assert seen[9000] == "minio"


def test_compose_named_volumes_are_declared_and_used() -> None:
    document = load_yaml(COMPOSE)
    declared = set(document.get("volumes", {}))
    used = set()
    for name, service in document["services"].items():
        for volume in service.get("volumes", []):
            source = str(volume).split(":")[0]
            if source.startswith((".", "/")):
                assert (COMPOSE.parent / source).exists(), f"{name}: bind mount {source} is missing"
            else:
                assert source in declared, f"{name}: volume {source} is not declared"
                used.add(source)
    assert declared == used, f"declared but unused: {declared - used}"


def test_compose_build_contexts_and_dockerfiles_exist() -> None:
    for name, service in compose_services().items():
        build = service.get("build")
        if build is None:
            continue
        context = (COMPOSE.parent / build["context"]).resolve()
        dockerfile = context / build.get("dockerfile", "Dockerfile")
        assert dockerfile.is_file(), f"{name}: {dockerfile} is missing"


def test_compose_gpu_worker_reserves_one_nvidia_gpu_and_cpu_worker_none() -> None:
    services = compose_services()
    (device,) = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia"
    assert device["count"] == 1
    assert device["capabilities"] == ["gpu"]
    assert "deploy" not in services["worker-cpu"]
    for worker, pool in [("worker-cpu", "cpu"), ("worker-gpu", "gpu")]:
        command = services[worker]["command"]
        assert command[:3] == ["prefect", "worker", "start"]
        assert command[command.index("--pool") + 1] == pool
    # Both pools' deployments are served.
    assert {d["work_pool"]["name"] for d in deployments().values()} == {"cpu", "gpu"}


def test_compose_services_follow_the_architecture() -> None:
    services = compose_services()
    mlflow_command = " ".join(services["mlflow"]["command"])
    assert "--backend-store-uri=postgresql://" in mlflow_command
    assert "--artifacts-destination=s3://" in mlflow_command
    assert "--serve-artifacts" in mlflow_command
    prefect_db = services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert prefect_db.startswith("postgresql+asyncpg://")
    for worker in ["worker-cpu", "worker-gpu"]:
        environment = services[worker]["environment"]
        assert environment["PREFECT_API_URL"] == "http://prefect-server:4200/api"
        assert environment["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
        # The GPU flow's returned dvc.lock is read back by the CPU worker's nightly flow.
        results = environment["PREFECT_RESULTS_LOCAL_STORAGE_PATH"]
        assert f"prefect-results:{results}" in services[worker]["volumes"]


def test_compose_creates_the_bucket_of_the_dvc_s3_remote() -> None:
    bucket = re.fullmatch(r"s3://([^/]+)/.*", dvc_config()['remote "s3"']["url"])
    assert bucket, "the s3 remote's url is not s3://BUCKET/..."
    command = "\n".join(compose_services()["create-buckets"]["command"])
    assert "mc mb" in command and "$$DVC_BUCKET" in command and "$$MLFLOW_BUCKET" in command
    assert env_example()["DVC_BUCKET"] == bucket.group(1)
    assert "${DVC_BUCKET:-" + bucket.group(1) + "}" in compose_text()


def dvc_config() -> dict[str, dict[str, str]]:
    """.dvc/config's sections, named without DVC's quotes: remote "s3"."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".dvc" / "config", encoding="utf-8")
    return {section.strip("'"): dict(parser[section]) for section in parser.sections()}


# --- environment variables -----------------------------------------------------------------------


def project_sources_text() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8")
        for pattern in PROJECT_SOURCE_GLOBS
        for path in sorted(ROOT.glob(pattern))
    )


def is_tool_setting(name: str, image: str) -> bool:
    """Whether the tool that reads name documents it (checked against the tool itself)."""
    if name.startswith("PREFECT_"):
        import prefect.settings

        return hasattr(prefect.settings, name)
    if name.startswith("MLFLOW_"):
        import mlflow.environment_variables

        return hasattr(mlflow.environment_variables, name)
    if name.startswith("AWS_"):
        from botocore.configprovider import BOTOCORE_DEFAULT_SESSION_VARIABLES
        from botocore.credentials import EnvProvider

        boto_names = {EnvProvider.ACCESS_KEY, EnvProvider.SECRET_KEY}
        for _, env_names, _, _ in BOTOCORE_DEFAULT_SESSION_VARIABLES.values():
            boto_names.update([env_names] if isinstance(env_names, str) else env_names or [])
        return name in boto_names
    image_name = image.split(":")[0]
    return name in IMAGE_VARIABLES.get(image_name, set())


def named_variables() -> list[tuple[str, str, str]]:
    """(variable, where, image) for every variable the deployment files name."""
    named = []
    interpolated = COMPOSE_INTERPOLATION.findall(compose_text())
    named += [(v, "compose ${...}", "") for v in interpolated]
    for name, service in compose_services().items():
        image = service.get("image", "")
        named += [(v, f"compose service {name}", image) for v in service.get("environment", {})]
    prefect_text = PREFECT_YAML.read_text(encoding="utf-8")
    named += [
        (v, "prefect.yaml {{ $... }}", "") for v in PREFECT_ENV_PLACEHOLDER.findall(prefect_text)
    ]
    for deployment in deployments().values():
        job_env = deployment["work_pool"].get("job_variables", {}).get("env", {})
        named += [(v, f"prefect.yaml {deployment['name']} env", "") for v in job_env]
    named += [(v, ".env.example", "") for v in env_example()]
    return named


def test_every_named_variable_is_defined_or_read() -> None:
    defined = set(env_example())
    sources = project_sources_text()
    unaccounted = [
        f"{variable} ({where})"
        for variable, where, image in named_variables()
        if variable not in defined
        and not re.search(rf"\b{variable}\b", sources)
        and not is_tool_setting(variable, image)
    ]
    assert unaccounted == [], (
        "variables neither in infra/.env.example, nor read by the project, nor a setting of "
        f"the tool that gets them: {unaccounted}"
    )


def test_every_env_example_entry_reaches_compose() -> None:
    interpolated = set(COMPOSE_INTERPOLATION.findall(compose_text()))
    unused = set(env_example()) - interpolated
    assert unused == set(), f"infra/.env.example entries compose never uses: {unused}"


def test_required_credentials_have_no_silent_default() -> None:
    text = compose_text()
    for secret in ["POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD", "AWS_SECRET_ACCESS_KEY"]:
        forms = re.findall(rf"\$\{{{secret}(:?[-?])?", text)
        assert forms, f"{secret} is not used in compose"
        assert ":-" not in forms, f"{secret} must not fall back to a default"
    assert re.search(r"\$\{POSTGRES_PASSWORD:\?", text)


# --- the Kubernetes GPU work pool ---------------------------------------------------------


def k8s_template() -> dict[str, Any]:
    template: dict[str, Any] = json.loads(K8S_GPU_TEMPLATE.read_text(encoding="utf-8"))
    return template


def test_k8s_template_has_the_base_job_template_shape() -> None:
    from prefect.utilities.templating import find_placeholders

    template = k8s_template()
    assert set(template) == {"job_configuration", "variables"}
    jsonschema.Draft7Validator.check_schema(template["variables"])
    declared = set(template["variables"]["properties"])
    used = {p.name for p in find_placeholders(template["job_configuration"])}
    assert used - declared == set(), f"placeholders without a variable: {used - declared}"
    assert declared - used == set(), f"variables no placeholder uses: {declared - used}"
    (container,) = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["name"] == "prefect-job"  # the Kubernetes worker requires this name
    assert container["args"] == "{{ command }}"


def resolved_gpu_container(job_variables: dict[str, Any]) -> dict[str, Any]:
    """The Job's container as the worker renders it for a flow run with job_variables."""
    from prefect.utilities.templating import apply_values

    template = k8s_template()
    values = {
        name: spec["default"]
        for name, spec in template["variables"]["properties"].items()
        if "default" in spec
    }
    values.update(job_variables)
    configuration = apply_values(template["job_configuration"], values)
    container: dict[str, Any] = configuration["job_manifest"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    return container


def test_k8s_gpu_job_requests_and_limits_one_nvidia_gpu() -> None:
    job_variables = deployments()["train-gpu"]["work_pool"]["job_variables"]
    resources = resolved_gpu_container(job_variables)["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == 1
    assert resources["limits"]["nvidia.com/gpu"] == 1
    # The default alone (a deployment that sets nothing) also asks for one GPU.
    assert resolved_gpu_container({})["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_train_gpu_job_variables_fit_both_gpu_pool_kinds() -> None:
    """Valid for the Kubernetes pool and for compose's process pool (what Prefect checks)."""
    from prefect.workers.process import ProcessWorker

    job_variables = deployments()["train-gpu"]["work_pool"]["job_variables"]
    jsonschema.validate(job_variables, k8s_template()["variables"])
    process_variables = ProcessWorker.get_default_base_job_template()["variables"]
    jsonschema.validate(job_variables, process_variables)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"gpu_count": 0}, k8s_template()["variables"])


def test_k8s_gpu_job_takes_the_gpu_count_of_the_run() -> None:
    resources = resolved_gpu_container({"gpu_count": 4})["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == 4


def test_k8s_train_job_names_its_gpu_count_once_and_trains_one_process_per_gpu() -> None:
    """The plain Job: N GPUs requested and limited; training follows them (train.processes:
    auto starts one DDP process per visible GPU), so N is written in one place."""
    from pipelines.common.config import load_params

    job = yaml.safe_load(K8S_TRAIN_JOB.read_text(encoding="utf-8"))
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert job["spec"]["backoffLimit"] == 0  # a dead rank fails the Job, it is not rerun
    (container,) = job["spec"]["template"]["spec"]["containers"]
    resources = container["resources"]
    gpus = resources["requests"]["nvidia.com/gpu"]
    assert isinstance(gpus, int) and gpus > 1
    assert resources["limits"]["nvidia.com/gpu"] == gpus
    command = " ".join([*container["command"], *container["args"]])
    assert "dvc repro --single-item train" in command
    assert "nproc" not in command  # the count is the pod's GPUs, not a second number
    assert load_params(ROOT / "params.yaml").train.processes == "auto"
    assert container["envFrom"] == [{"secretRef": {"name": "mathembed-credentials"}}]


# --- Qdrant: search.engine: qdrant ------------------------------------------------------------


def qdrant_image_tag() -> str:
    image = str(compose_services()["qdrant"]["image"])
    assert re.fullmatch(r"qdrant/qdrant:v\d+\.\d+\.\d+", image), f"{image}: pin a release"
    return image.rpartition(":v")[2]


def test_compose_qdrant_is_the_client_s_version_where_search_engine_url_points() -> None:
    from importlib.metadata import version
    from urllib.parse import urlsplit

    from pipelines.common.config import load_params

    # The client refuses a server more than one minor version away; the same minor is safest.
    server_minor = qdrant_image_tag().split(".")[:2]
    assert server_minor == version("qdrant-client").split(".")[:2]
    qdrant = compose_services()["qdrant"]
    assert qdrant["ports"] == ["127.0.0.1:6333:6333"]
    assert "qdrant-data:/qdrant/storage" in qdrant["volumes"]  # collections outlive the container
    url = urlsplit(load_params(ROOT / "params.yaml").search.engine_url)
    assert (url.hostname, url.port) == ("127.0.0.1", 6333)  # the published port, from the host


class Readyz(http.server.BaseHTTPRequestHandler):
    """Answers GET /readyz with the status the test sets, as Qdrant does (200 or 503)."""

    status = 200

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self.send_response(self.status if self.path == "/readyz" else 404)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_compose_qdrant_healthcheck_asks_readyz_with_bash_alone(status: int, healthy: bool) -> None:
    """The image has no curl or wget: the check is bash's /dev/tcp, run here against a
    stand-in that answers /readyz on another port."""
    test = compose_services()["qdrant"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "bash", "-c"]
    assert "/dev/tcp/127.0.0.1/6333" in test[3] and "/readyz" in test[3]
    handler = type("ReadyzNow", (Readyz,), {"status": status})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        script = test[3].replace("$$", "$").replace("/6333", f"/{server.server_port}")
        result = subprocess.run(["bash", "-c", script], capture_output=True, timeout=10)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert (result.returncode == 0) == healthy, result.stderr


def k8s_qdrant() -> dict[str, dict[str, Any]]:
    documents = list(yaml.safe_load_all(K8S_QDRANT.read_text(encoding="utf-8")))
    by_kind = {document["kind"]: document for document in documents}
    assert len(by_kind) == len(documents), "one document of each kind"
    return by_kind


def test_k8s_qdrant_is_a_statefulset_with_its_claim_behind_a_service() -> None:
    manifest = k8s_qdrant()
    assert set(manifest) == {"Service", "StatefulSet"}
    service, stateful_set = manifest["Service"], manifest["StatefulSet"]
    assert (service["apiVersion"], stateful_set["apiVersion"]) == ("v1", "apps/v1")
    for document in (service, stateful_set):
        assert document["metadata"]["namespace"] == "mathembed"  # beside the train Job
    spec = stateful_set["spec"]
    assert spec["serviceName"] == service["metadata"]["name"] == "qdrant"
    pod_labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"] == pod_labels
    assert service["spec"]["selector"] == pod_labels
    assert service["spec"]["type"] == "ClusterIP"  # no API key: not outside the cluster
    (container,) = spec["template"]["spec"]["containers"]
    assert container["image"] == compose_services()["qdrant"]["image"]
    (port,) = container["ports"]
    (service_port,) = service["spec"]["ports"]
    assert (port["containerPort"], service_port["port"]) == (6333, 6333)
    assert service_port["targetPort"] == port["name"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    assert (
        container["resources"]["limits"]["memory"] == container["resources"]["requests"]["memory"]
    )
    (claim,) = spec["volumeClaimTemplates"]
    (mount,) = container["volumeMounts"]
    assert (mount["name"], mount["mountPath"]) == (claim["metadata"]["name"], "/qdrant/storage")
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"]
    environment = {item["name"]: item["value"] for item in container["env"]}
    assert environment == compose_services()["qdrant"]["environment"]


def test_infra_readme_names_the_qdrant_service_and_manifest() -> None:
    readme = (INFRA / "README.md").read_text(encoding="utf-8")
    assert "`k8s/qdrant.yaml`" in readme
    assert "| `qdrant` |" in readme
    assert "search.engine_url" in readme


# --- the worker entrypoint -----------------------------------------------------------------


def copy_entrypoint_setup(folder: Path) -> Path:
    """The entrypoint script and the repository's DVC config in ``folder``; the script's path."""
    (folder / ".dvc").mkdir()
    shutil.copy(ROOT / ".dvc" / "config", folder / ".dvc" / "config")
    (folder / "infra").mkdir()
    script = folder / "infra" / "worker-entrypoint.sh"
    shutil.copy(ENTRYPOINT_SCRIPT, script)
    return script


def test_worker_entrypoint_points_dvc_at_the_endpoint_then_runs_the_command(
    tmp_path: Path,
) -> None:
    """Run the real script in a copy of the repository's DVC setup (no git, as in the images)."""
    script = copy_entrypoint_setup(tmp_path)
    environment = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "DVC_S3_ENDPOINT_URL": "http://minio:9000",
        "DVC_DEFAULT_REMOTE": "s3",
    }
    result = subprocess.run(
        [str(script), "dvc", "remote", "default"],
        cwd="/",  # the script finds the repository from its own location
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "s3"  # the command ran, in the repository, after the setup
    local = configparser.ConfigParser()
    local.read(tmp_path / ".dvc" / "config.local", encoding="utf-8")
    assert local["'remote \"s3\"'"]["endpointurl"] == "http://minio:9000"
    assert local["core"]["no_scm"] == "True" or local["core"]["no_scm"] == "true"
    # .dvc/config itself is untouched.
    assert (tmp_path / ".dvc" / "config").read_text() == (ROOT / ".dvc" / "config").read_text()


def test_worker_entrypoint_passes_on_the_command_exit_status(tmp_path: Path) -> None:
    script = copy_entrypoint_setup(tmp_path)
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DVC_S3_ENDPOINT_URL", "DVC_DEFAULT_REMOTE"}
    }
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    result = subprocess.run(
        [str(script), "sh", "-c", "exit 7"], env=environment, capture_output=True, check=False
    )
    assert result.returncode == 7
    assert not (tmp_path / ".dvc" / "config.local").read_text().count("endpointurl")
