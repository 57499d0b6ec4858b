"""The deployment files agree with each other and with the app: image, compose, nginx template."""

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
DOCKERFILE = (ROOT / "Dockerfile").read_text()
TEMPLATE = (ROOT / "deploy" / "nginx.conf.template").read_text()
ENVSH_EXPORTS = ("TVIZ_UPSTREAM_SERVERS", "TVIZ_REPLICA_ROUTES")  # what deploy/replicas.envsh fills in


def test_the_image_runs_the_packaged_command_as_a_user_with_a_health_check():
    assert re.search(r"^USER (?!root)\w+", DOCKERFILE, re.M)
    assert "/_stcore/health" in DOCKERFILE.split("HEALTHCHECK", 1)[1]
    assert 'CMD ["transformer-viz", "--host", "0.0.0.0", "--port", "8501"]' in DOCKERFILE
    assert "download.pytorch.org/whl/cpu" in DOCKERFILE  # never PyPI's CUDA build


def test_the_image_is_pinned_and_installs_readmes_cpu_torch_before_the_package():
    """A reproducible image: an exact base tag (or a digest), torch pinned to README's version from the CPU index,
    installed alone before the package (whose torch range then keeps it)."""
    from test_install import readme_torch

    assert re.search(r"^FROM python:\d+\.\d+\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?$", DOCKERFILE, re.M)
    runs = re.findall(r"^RUN (.*)$", DOCKERFILE, re.M)
    torch = runs.index(f"pip install torch=={readme_torch()} --index-url https://download.pytorch.org/whl/cpu")
    package = next(i for i, run in enumerate(runs) if run.startswith('pip install ".['))
    assert torch < package and "--extra-index-url" not in DOCKERFILE


def test_each_replica_has_cpu_and_memory_limits_and_downloads_stay_off():
    """The CPU limit is what the replica's training workers are sized from (TVIZ_TRAININGS_AT_ONCE=0 in the image);
    no Hugging Face downloads on a served app unless its host sets TVIZ_HF_DOWNLOADS=1."""
    app = COMPOSE["services"]["app"]
    limits = app["deploy"]["resources"]["limits"]
    assert float(limits["cpus"]) >= 1 and re.fullmatch(r"\d+[GM]", limits["memory"])
    assert "TVIZ_TRAININGS_AT_ONCE" not in app["environment"] and "ENV TVIZ_TRAININGS_AT_ONCE=0" in DOCKERFILE
    assert "TVIZ_HF_DOWNLOADS" not in app["environment"]
    assert not re.search(r"^ENV .*TVIZ_HF_DOWNLOADS", DOCKERFILE, re.M)  # transformer-viz's default: 0


def test_compose_builds_that_image_and_fills_every_placeholder_of_the_template():
    app, proxy = COMPOSE["services"]["app"], COMPOSE["services"]["proxy"]
    assert (ROOT / "deploy" / app["build"]["context"] / app["build"]["dockerfile"]).resolve() == ROOT / "Dockerfile"
    assert app["deploy"]["replicas"] >= 2 and app["environment"]["TVIZ_REDIS_URL"].startswith("redis://redis:")
    mounted = dict(volume.split(":")[:2] for volume in proxy["volumes"])
    assert mounted["./nginx.conf.template"].startswith("/etc/nginx/templates/")
    envsh = mounted["./replicas.envsh"]
    assert re.fullmatch(r"/docker-entrypoint\.d/1\d-[\w-]+\.envsh", envsh)  # sourced before envsubst's 20-...sh
    assert os.access(ROOT / "deploy" / "replicas.envsh", os.X_OK)  # the entrypoint sources only executable ones
    placeholders = set(re.findall(r"\$\{(TVIZ_\w+)\}", TEMPLATE))
    assert placeholders == set(proxy["environment"]) - {"TVIZ_APP"} | set(ENVSH_EXPORTS)
    assert proxy["environment"]["TVIZ_APP"] == "app:8501" and proxy["image"].startswith("nginx:1.27-bookworm")


def source_envsh(app: str) -> subprocess.CompletedProcess:
    """Source deploy/replicas.envsh as the nginx image's entrypoint does, with TVIZ_APP=app; print its exports."""
    script = f'. "{ROOT / "deploy" / "replicas.envsh"}" && ' + " && ".join(f'echo "${name}"' for name in ENVSH_EXPORTS)
    return subprocess.run(["sh", "-ec", script], env={"PATH": os.environ["PATH"], "TVIZ_APP": app},
                          capture_output=True, text=True, timeout=30)


def test_the_proxy_lists_every_address_of_the_replicas_service():
    result = source_envsh("localhost:8501")
    assert result.returncode == 0, result.stderr
    servers, routes = result.stdout.splitlines()
    assert servers.split() == ["server", "127.0.0.1:8501;"]
    assert routes.split() == ["127.0.0.1:8501", "127.0.0.1:8501;"]


@pytest.mark.parametrize("app", ["no-such-replica.invalid:8501", "localhost", ""])
def test_the_proxy_does_not_start_without_a_replica(app):
    result = source_envsh(app)
    assert result.returncode != 0 and "no app replica" in result.stderr


def test_browsers_are_placed_in_turn_and_kept_by_a_cookie_not_by_address():
    """tests/test_nginx_placement.py checks the behaviour on nginx itself."""
    upstream = re.search(r"upstream tviz_app \{(.*?)\}", TEMPLATE, re.S)[1]
    assert "least_conn;" in upstream and "zone " in upstream and "hash" not in upstream
    assert not re.search(r"^\s*ip_hash", TEMPLATE, re.M) and "proxy_pass http://$tviz_replica;" in TEMPLATE
    assert "proxy_set_header Upgrade $http_upgrade;" in TEMPLATE  # Streamlit's websocket


def test_compose_keeps_the_rooms_across_a_redis_restart():
    """tests/test_rooms_outage.py checks the app over such a restart; here, that compose asks for it."""
    redis = COMPOSE["services"]["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command and "--appendfsync everysec" in command
    assert any(volume.endswith(":/data") for volume in redis["volumes"])  # the file outlives the container
