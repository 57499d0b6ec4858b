"""deploy/kubernetes: the base and the school's overlay render with `kubectl kustomize`, every object they make
passes the Kubernetes schemas (kubernetes-validate, strict: no unknown field), and what a class needs is there:
sticky websockets on ingress-nginx, probes on Streamlit's health, rooms in a Redis that keeps them, the autoscaler
on the Deployment, pods that run as users without privileges. Without a cluster: nothing is applied."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
KUSTOMIZATIONS = {"base": ROOT / "deploy" / "kubernetes" / "base",
                  "school": ROOT / "deploy" / "kubernetes" / "overlays" / "school"}
KUBERNETES_VERSION = "1.30.0"  # a release clusters still run (kubernetes-validate bundles its schemas)
COMPOSE = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
TEMPLATE = (ROOT / "deploy" / "nginx.conf.template").read_text()
HEALTH = "/_stcore/health"
APP_PORT = 8501  # the Dockerfile's CMD: transformer-viz --host 0.0.0.0 --port 8501
NGINX = "nginx.ingress.kubernetes.io/"


@functools.cache
def render(name: str) -> tuple[dict, ...]:
    """The objects `kubectl kustomize` makes of one kustomization (skips, saying why, without kubectl)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the manifests are rendered with `kubectl kustomize`")
    result = subprocess.run([kubectl, "kustomize", str(KUSTOMIZATIONS[name])], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return tuple(obj for obj in yaml.safe_load_all(result.stdout) if obj)


@pytest.fixture(params=list(KUSTOMIZATIONS))
def objects(request) -> tuple[dict, ...]:
    return render(request.param)


def one(objects, kind: str, name: str | None = None) -> dict:
    found = [obj for obj in objects if obj["kind"] == kind and name in (None, obj["metadata"]["name"])]
    assert len(found) == 1, f"{len(found)} {kind} named {name}"
    return found[0]


def app(objects) -> dict:
    return one(objects, "Deployment")


def app_container(objects) -> dict:
    (container,) = app(objects)["spec"]["template"]["spec"]["containers"]
    return container


def environment(objects) -> dict[str, str]:
    return {variable["name"]: variable.get("value") for variable in app_container(objects).get("env", [])}


def redis(objects) -> dict:
    return one(objects, "StatefulSet")


def pod_specs(objects) -> list[dict]:
    return [obj["spec"]["template"]["spec"] for obj in objects if "template" in obj.get("spec", {})]


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and selector.items() <= labels.items()


def pod_labels(workload: dict) -> dict:
    return workload["spec"]["template"]["metadata"]["labels"]


def container_port(container: dict, port: int | str) -> int:
    """The container's port number a probe's or a Service's port names (a number, or a port's name)."""
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    return number


def quantity(text: str | int) -> float:
    """A Kubernetes quantity as a number: "500m" CPU -> 0.5, "2Gi" -> 2 * 2**30."""
    units = {"m": 1e-3, "": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 1e3, "M": 1e6, "G": 1e9}
    number, unit = re.fullmatch(r"([\d.]+)([a-zA-Z]*)", str(text)).groups()
    return float(number) * units[unit]


def test_every_rendered_object_passes_the_kubernetes_schemas_strictly(objects):
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate "
                                              "(requirements-dev.txt): the schemas the objects are checked with")
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            where = "/".join(map(str, error.path))
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {where}: {error.message}")
    kinds = {obj["kind"] for obj in objects}
    assert kinds >= {"Deployment", "Service", "Ingress", "StatefulSet", "HorizontalPodAutoscaler",
                     "PodDisruptionBudget", "NetworkPolicy"}


def test_the_ingress_keeps_each_browser_on_its_replica_by_a_cookie(objects):
    """A Streamlit session is one websocket on one replica: ingress-nginx's cookie affinity, persistent (the
    default, balanced, moves some browsers to a new pod when pods are added), under compose's cookie name."""
    ingress = one(objects, "Ingress")
    annotations = ingress["metadata"]["annotations"]
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert annotations[NGINX + "affinity"] == "cookie"
    assert annotations[NGINX + "affinity-mode"] == "persistent"
    assert annotations[NGINX + "session-cookie-name"] == "tviz_replica"  # deploy/nginx.conf.template's
    assert "tviz_replica=" in TEMPLATE


def test_the_ingress_keeps_a_quiet_websocket_open(objects):
    """ingress-nginx closes a connection after 60 s without a byte by default; a class reads a figure longer."""
    annotations = one(objects, "Ingress")["metadata"]["annotations"]
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        assert int(annotations[NGINX + timeout]) >= 3600, timeout


def test_the_ingress_takes_the_uploads_the_app_takes_and_streams_them(objects):
    annotations = one(objects, "Ingress")["metadata"]["annotations"]
    body = re.search(r"client_max_body_size (\w+);", TEMPLATE)[1]
    assert annotations[NGINX + "proxy-body-size"] == body == "17m"
    assert annotations[NGINX + "proxy-request-buffering"] == "off"


def test_the_ingress_backend_names_the_app_services_port(objects):
    """The class goes to the app's Service by the name of a port it has, and that port reaches the app's."""
    ingress, service = one(objects, "Ingress"), one(objects, "Service", "transformer-viz")
    (rule,) = ingress["spec"]["rules"]
    (root,) = [path for path in rule["http"]["paths"] if path["path"] == "/"]
    assert root["pathType"] == "Prefix"
    backend = root["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]
    (port,) = [port for port in service["spec"]["ports"] if port["name"] == backend["port"]["name"]]
    assert container_port(app_container(objects), port["targetPort"]) == APP_PORT


def test_the_warm_up_check_is_not_reachable_through_the_ingress(objects):
    """Streamlit's script health check runs the whole app per request (the launcher warms up with it, inside the
    pod): from outside it goes to a Service that selects no pod, never to the app."""
    (rule,) = one(objects, "Ingress")["spec"]["rules"]
    (check,) = [path for path in rule["http"]["paths"] if path["path"] == "/_stcore/script-health-check"]
    assert check["pathType"] == "Exact"
    refused = one(objects, "Service", check["backend"]["service"]["name"])
    assert "selector" not in refused["spec"] and refused["metadata"]["name"] != "transformer-viz"
    assert not any(obj["kind"] in ("Endpoints", "EndpointSlice") for obj in objects)


def test_the_service_selects_the_deployments_pods_and_only_those(objects):
    deployment, service = app(objects), one(objects, "Service", "transformer-viz")
    selector = service["spec"]["selector"]
    assert selects(selector, pod_labels(deployment))
    assert selects(deployment["spec"]["selector"]["matchLabels"], pod_labels(deployment))
    assert not selects(selector, pod_labels(redis(objects)))


def test_the_probes_ask_streamlits_health_on_the_apps_port(objects):
    container = app_container(objects)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        check = container[probe]["httpGet"]
        assert check["path"] == HEALTH, probe
        assert container_port(container, check["port"]) == APP_PORT, probe
    assert container["livenessProbe"]["failureThreshold"] * container["livenessProbe"]["periodSeconds"] >= 45


def test_no_container_is_privileged_and_every_one_runs_as_a_user_without_escalation(objects):
    """What Pod Security's "restricted" level asks (the school's namespace enforces it), for every container."""
    specs = pod_specs(objects)
    assert len(specs) == 2  # the app and Redis
    for spec in specs:
        pod = spec.get("securityContext", {})
        assert pod.get("seccompProfile", {}).get("type") == "RuntimeDefault"
        assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC")
        for container in spec["containers"] + spec.get("initContainers", []):
            context = container.get("securityContext", {})
            name = container["name"]
            assert context.get("privileged") is not True, name
            assert context.get("allowPrivilegeEscalation") is False, name
            assert "ALL" in context.get("capabilities", {}).get("drop", []), name
            assert not context.get("capabilities", {}).get("add"), name
            assert context.get("runAsNonRoot", pod.get("runAsNonRoot")) is True, name
            assert context.get("runAsUser", pod.get("runAsUser", 1)) != 0, name


def test_the_root_filesystems_are_read_only_and_the_app_writes_to_empty_dirs(objects):
    """The app writes /tmp (torch, the training pool's forkserver socket) and, with the hf extra, its cache."""
    for spec in pod_specs(objects):
        for container in spec["containers"]:
            assert container["securityContext"].get("readOnlyRootFilesystem") is True, container["name"]
    spec = app(objects)["spec"]["template"]["spec"]
    empty = {volume["name"] for volume in spec["volumes"] if "emptyDir" in volume}
    mounted = {mount["mountPath"]: mount["name"] for mount in app_container(objects)["volumeMounts"]}
    assert mounted["/tmp"] in empty and mounted["/home/tviz/.cache"] in empty
    assert re.search(r"^RUN useradd .*--uid 1000 tviz", (ROOT / "Dockerfile").read_text(), re.M)
    assert spec["securityContext"]["runAsUser"] == 1000


def test_every_image_is_pinned_to_a_version(objects):
    """An exact version (or a digest): never latest, never untagged, never a floating major like redis:7-alpine."""
    images = [container["image"] for spec in pod_specs(objects)
              for container in spec["containers"] + spec.get("initContainers", [])]
    assert len(images) == 2
    for image in images:
        reference, _, digest = image.partition("@")
        tag = reference.rsplit("/", 1)[-1].partition(":")[2]  # after the registry's host:port, if any
        assert re.fullmatch(r"v?\d+\.\d+\.\d+[\w.-]*", tag) or re.fullmatch(r"sha256:[0-9a-f]{64}", digest), image


def test_the_app_image_is_the_tag_compose_builds(objects):
    tag = app_container(objects)["image"].rsplit(":", 1)[1]
    assert COMPOSE["services"]["app"]["image"] == f"transformer-viz:{tag}"


def test_redis_keeps_the_rooms_in_an_append_only_file_on_its_volume_claim(objects):
    """compose's Redis command (every write to the file, flushed each second), its data dir on a claim of the
    StatefulSet's own: a Redis restart keeps the rooms."""
    statefulset = redis(objects)
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--appendfsync") + 1] == "everysec"
    data_dir = command[command.index("--dir") + 1]
    compose = COMPOSE["services"]["redis"]["command"]
    assert command == [*compose[:1], "--dir", data_dir, *compose[1:]]  # compose's, with its data dir said
    claims = {claim["metadata"]["name"]: claim for claim in statefulset["spec"]["volumeClaimTemplates"]}
    (mount,) = [mount for mount in container["volumeMounts"] if mount["mountPath"] == data_dir]
    claim = claims[mount["name"]]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert quantity(claim["spec"]["resources"]["requests"]["storage"]) >= 2**30
    volumes = statefulset["spec"]["template"]["spec"].get("volumes", [])
    assert mount["name"] not in {volume["name"] for volume in volumes}  # the claim's, not a volume of the pod


def test_redis_has_a_headless_service_that_selects_its_pod(objects):
    statefulset = redis(objects)
    service = one(objects, "Service", statefulset["spec"]["serviceName"])
    assert service["spec"]["clusterIP"] == "None"
    assert selects(service["spec"]["selector"], pod_labels(statefulset))
    assert not selects(service["spec"]["selector"], pod_labels(app(objects)))
    assert statefulset["spec"]["replicas"] == 1


def test_the_redis_url_names_the_redis_service_and_its_port(objects):
    """TVIZ_REDIS_URL (transformer_viz/app/rooms/store.py) at the headless Service, in the app's namespace, on a
    port the Service has, which reaches the port Redis listens on."""
    from transformer_viz.app.rooms.store import REDIS_URL_VARIABLE

    url = urlsplit(environment(objects)[REDIS_URL_VARIABLE])
    statefulset = redis(objects)
    service = one(objects, "Service", statefulset["spec"]["serviceName"])
    assert url.scheme == "redis" and url.hostname == service["metadata"]["name"]
    (port,) = [port for port in service["spec"]["ports"] if port["port"] == url.port]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container_port(container, port["targetPort"]) == 6379
    assert service["metadata"].get("namespace") == app(objects)["metadata"].get("namespace")


def test_hub_downloads_stay_off(objects):
    from transformer_viz.app.launch import SERVED_DEFAULTS

    assert environment(objects)["TVIZ_HF_DOWNLOADS"] == SERVED_DEFAULTS["TVIZ_HF_DOWNLOADS"] == "0"


def test_each_replica_has_one_cpu_and_the_memory_of_the_benches_peak(objects):
    """One interpreter serves reruns on one core; its training workers are sized from the CPU limit (the image's
    TVIZ_TRAININGS_AT_ONCE=0: one per whole CPU of the quota); bench/bench_memory.py's peak is 2.0 GiB."""
    resources = app_container(objects)["resources"]
    assert quantity(resources["requests"]["cpu"]) == quantity(resources["limits"]["cpu"]) == 1
    assert quantity(resources["requests"]["memory"]) >= 2 * 2**30
    assert quantity(resources["limits"]["memory"]) >= quantity(resources["requests"]["memory"])
    assert "TVIZ_TRAININGS_AT_ONCE" not in environment(objects)


def test_the_autoscaler_scales_the_deployment_on_cpu_and_owns_its_replicas(objects):
    """autoscaling/v2 on the Deployment's CPU utilization; the Deployment has no replicas of its own, which every
    `kubectl apply` would set it back to (ending the sessions of the pods above it); removals wait."""
    hpa, deployment = one(objects, "HorizontalPodAutoscaler"), app(objects)
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == ("apps/v1", "Deployment",
                                                                       deployment["metadata"]["name"])
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "Resource" and metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"]["type"] == "Utilization"
    assert 0 < metric["resource"]["target"]["averageUtilization"] <= 100
    assert 2 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    assert "replicas" not in deployment["spec"]
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 1800


def test_a_disruption_takes_one_app_pod_at_a_time(objects):
    budget = one(objects, "PodDisruptionBudget")
    assert selects(budget["spec"]["selector"]["matchLabels"], pod_labels(app(objects)))
    assert budget["spec"].get("maxUnavailable") == 1 and "minAvailable" not in budget["spec"]


def test_only_the_ingress_controller_reaches_the_app_and_only_the_app_reaches_redis(objects):
    """The app trusts its proxies' X-Forwarded-For (TVIZ_TRUSTED_PROXIES) and Redis has no password."""
    policies = [obj for obj in objects if obj["kind"] == "NetworkPolicy"]

    def admitted(workload: dict) -> list[dict]:
        (policy,) = [p for p in policies if selects(p["spec"]["podSelector"]["matchLabels"], pod_labels(workload))]
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        (rule,) = policy["spec"]["ingress"]
        return rule["from"]

    (controller,) = admitted(app(objects))
    assert controller == {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
    (peer,) = admitted(redis(objects))
    assert list(peer) == ["podSelector"] and selects(peer["podSelector"]["matchLabels"], pod_labels(app(objects)))
    assert environment(objects)["TVIZ_TRUSTED_PROXIES"]


def test_the_school_sets_its_namespace_image_host_and_class_size():
    base, school = render("base"), render("school")
    (namespace,) = [obj for obj in school if obj["kind"] == "Namespace"]
    name = namespace["metadata"]["name"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert all(obj["metadata"].get("namespace") == name for obj in school if obj["kind"] != "Namespace")
    assert not any(obj["metadata"].get("namespace") for obj in base)
    (rule,) = one(school, "Ingress")["spec"]["rules"]
    (base_rule,) = one(base, "Ingress")["spec"]["rules"]
    assert rule["host"] != base_rule["host"] and [rule["host"]] == one(school, "Ingress")["spec"]["tls"][0]["hosts"]
    bounds = [(one(objs, "HorizontalPodAutoscaler")["spec"]["minReplicas"],
               one(objs, "HorizontalPodAutoscaler")["spec"]["maxReplicas"]) for objs in (base, school)]
    assert bounds[0] != bounds[1]
    assert app_container(school)["image"] != app_container(base)["image"]
