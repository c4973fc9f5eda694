"""ACL bindings in bulk: the job's batched CreateAcls / DeleteAcls against one request per
binding and against a plain batched kafka-python script, on the same secured broker.

    .venv/bin/python bench/acl_batch.py [--bindings 1000] [--reps 3] [--methods ...]

One local KRaft broker with SASL/PLAIN and the StandardAuthorizer (dev/devkafka,
the broker the ACL tests start). Its second SASL listener advertises a loopback proxy
(tests/support/tcpproxy), and every method reaches the broker through it, so the requests
counted by API key are what each method really sent.

The bindings: `--bindings` / 2 principals `User:bench-NNNNN`, each granted READ and WRITE on
its own literal topic `acl-bench.NNNNN`. Each method grants them all, then revokes them
all, and the broker is checked empty of them before the next method runs. Measured, each
from launching the process to its exit:

  loop     bench/acl_batch.py direct --per-binding: one kafka-python CreateAcls per
           binding, sequential, then one DeleteAcls (exact-match filter) per binding
           (what a tool that sends a request per binding does)
  floor    bench/acl_batch.py direct: one CreateAcls for all, then one DeleteAcls for all
  job      ./spark-submit.sh jobs/provision_topics.py apply --conf ... --json (cold, classic
           Spark) over an ACL manifest table of the bindings (`acls.max_changes_per_cluster`
           raised to fit); then the same table with every row `state: absent`, applied with
           --allow-revokes. Each is a whole run: manifests, snapshot, plan, policies, the
           authority check, the requests, verify by DescribeAcls, the audit.
  connect  the same through --remote, a thin client of a Spark Connect server started and
           warmed once
Nothing asserts a time; the machine's load is recorded beside each figure.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from bench.run import JOB, LOAD, SUBMIT, loadavg, machine  # noqa: E402
from dev.devkafka import (  # noqa: E402
    KafkaCluster,
    ListenerSpec,
    SaslUsers,
    free_ports,
)
from dev.sparkconnect import ConnectServer, warm_up  # noqa: E402
from tests.support.tcpproxy import KafkaProxy  # noqa: E402

PY = sys.executable
METHODS = ("loop", "floor", "job", "connect")
API = {29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls"}
PREFIX = "acl-bench."
# provisioning.run.engine's step lines (the ACL phases' names are capitalized).
STEP = re.compile(r"step (?P<name>[A-Za-z_ ]+): (?P<secs>[0-9.]+)s \(at [0-9.]+\)")


def principals(count: int) -> list[str]:
    return [f"User:bench-{i:05d}" for i in range(count)]


def binding_specs(bindings: int) -> list[tuple[str, str, str]]:
    """(principal, topic, operation) of every binding: two operations per principal."""
    return [(p, f"{PREFIX}{p.split('-')[1]}", op)
            for p in principals(bindings // 2) for op in ("READ", "WRITE")]


# -- the direct kafka-python baselines (run as their own process) --------------------------

def direct(args: argparse.Namespace) -> int:
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    started = time.time()
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="PLAIN", sasl_plain_username="admin",
                             sasl_plain_password=os.environ["ACL_BENCH_PASSWORD"],
                             request_timeout_ms=120_000, client_id="bench-acls")
    acls = [ACL(p, "*", ACLOperation[op], ACLPermissionType.ALLOW,
                ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))
            for p, topic, op in binding_specs(args.bindings)]
    filters = [ACLFilter(a.principal, a.host, a.operation, a.permission_type,
                         ResourcePatternFilter(ResourceType.TOPIC, a.resource_pattern.resource_name,
                                               ACLResourcePatternType.LITERAL)) for a in acls]
    errors: list[str] = []
    connected = time.time()
    if args.per_binding:
        for acl in acls:
            errors += [str(e) for e in admin.create_acls([acl])["failed"]]
    else:
        errors += [str(e) for e in admin.create_acls(acls)["failed"]]
    granted = time.time()
    if args.per_binding:
        for f in filters:
            errors += [str(e) for _, _, e in admin.delete_acls([f]) if e.errno]
    else:
        errors += [str(e) for _, _, e in admin.delete_acls(filters) if e.errno]
    revoked = time.time()
    admin.close()
    print(json.dumps({"errors": errors[:5], "started": started, "connected": connected,
                      "granted": granted, "revoked": revoked}))
    return 1 if errors else 0


def run_direct(bootstrap: str, bindings: int, per_binding: bool, password: str
               ) -> dict[str, Any]:
    cmd = [PY, str(Path(__file__).resolve()), "direct", "--bootstrap", bootstrap,
           "--bindings", str(bindings), *(["--per-binding"] if per_binding else [])]
    launched = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "ACL_BENCH_PASSWORD": password})
    exited = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"direct failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"grant": out["granted"] - launched, "revoke": out["revoked"] - out["granted"],
            "exit": exited - launched, "command": " ".join(cmd)}


# -- the job --------------------------------------------------------------------------

def job_tables(work: Path, bindings: int) -> tuple[Path, Path, Path]:
    """The topic manifest (one topic) and the two ACL manifest tables (present, absent),
    written by jobs/load_manifest.py."""
    tables = work / "manifests"
    topics, grants, revokes = tables / "topics", tables / "acls", tables / "acls_absent"
    if (revokes / "_delta_log").exists():
        return topics, grants, revokes
    tables.mkdir(parents=True, exist_ok=True)
    rows = [{"cluster": "local", "principal": p, "resource_type": "TOPIC",
             "resource_name": f"{PREFIX}{p.split('-')[1]}", "operations": ["READ", "WRITE"]}
            for p in principals(bindings // 2)]
    for kind, source, table, data in (
            ("topics", tables / "topics.json", topics,
             [{"cluster": "local", "topic": f"{PREFIX}live", "partitions": 1,
               "replication_factor": 1}]),
            ("acls", tables / "acls.json", grants, rows),
            ("acls", tables / "absent.json", revokes, [dict(r, state="absent") for r in rows])):
        source.write_text(json.dumps(data))
        proc = subprocess.run([str(SUBMIT), str(LOAD), "--kind", kind, "--source", str(source),
                               "--table", str(table)], capture_output=True, text=True,
                              timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"load_manifest failed: {proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return topics, grants, revokes


def job_conf(path: Path, bootstrap: str, warehouse: Path, topics: Path, acls: Path,
             bindings: int) -> Path:
    path.write_text(json.dumps({
        "clusters": {"local": {
            "bootstrap_servers": bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_username_env": "ACL_BENCH_USER",
            "sasl_password_env": "ACL_BENCH_PASSWORD"}},
        "tables": {"manifests": [str(topics)], "acl_manifests": [str(acls)],
                   "audit": str(warehouse / "topic_audit"),
                   "runs": str(warehouse / "provision_runs"),
                   "snapshots": str(warehouse / "topic_snapshots")},
        "acls": {"max_changes_per_cluster": max(bindings, 200)},
        "spark": {"settings": {"spark.sql.session.timeZone": "UTC"}},
    }, indent=2))
    return path


def run_job(work: Path, bootstrap: str, bindings: int, password: str,
            spark_args: Sequence[str]) -> dict[str, Any]:
    topics, grants, revokes = job_tables(work.parent, bindings)
    # The job's tables outlive its runs, as in production: one warehouse per method.
    warehouse = work.parent / f"{work.name.split('-r')[0]}-warehouse"
    env = {**os.environ, "ACL_BENCH_USER": "admin", "ACL_BENCH_PASSWORD": password}
    result: dict[str, Any] = {}
    for name, table, flags, outcome in (("grant", grants, [], "granted"),
                                        ("revoke", revokes, ["--allow-revokes"], "revoked")):
        conf = job_conf(work / f"{name}.json", bootstrap, warehouse, topics, table, bindings)
        cmd = [str(SUBMIT), *spark_args, str(JOB), "apply", "--conf", str(conf), *flags,
               "--json"]
        launched = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=work,
                              env=env)
        exited = time.time()
        output = proc.stdout + proc.stderr
        (work / f"{name}.log").write_text(output)
        if proc.returncode != 0:
            raise RuntimeError(f"job {name} failed ({proc.returncode}): {output[-4000:]}")
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        counts = doc["acls"]["counts"]
        if counts != {outcome: bindings}:
            raise RuntimeError(f"job {name}: ACL outcomes {counts}, not {bindings} {outcome}")
        steps: dict[str, float] = {}
        for m in STEP.finditer(output):
            steps[m["name"]] = steps.get(m["name"], 0.0) + float(m["secs"])
        result[name] = exited - launched
        result[f"{name}_steps"] = {k: round(v, 2) for k, v in steps.items()}
        result[f"{name}_command"] = " ".join(cmd)
    return result


# -- harness --------------------------------------------------------------------------

def live_bench_bindings(cluster: KafkaCluster) -> int:
    from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
    from provisioning.kafka.client import ClusterAdmin
    from provisioning.kinds.acls.requests import describe_acls

    assert cluster.sasl is not None
    conf = ClusterConf("local", cluster.bootstrap_servers, "SASL_PLAINTEXT", "PLAIN")
    with ClusterAdmin(conf, Credentials(Secret("admin"), Secret(cluster.sasl.admin_password)),
                      KafkaConf()) as admin:
        found = describe_acls(admin) or []
    return sum(1 for b in found if str(b["principal"]).startswith("User:bench-"))


def measure(method: str, rep: int, root: Path, cluster: KafkaCluster, proxy: KafkaProxy,
            args: argparse.Namespace, connect: str | None) -> dict[str, Any]:
    password = cluster.sasl.admin_password if cluster.sasl else ""
    bootstrap = f"127.0.0.1:{proxy.port}"
    before = dict(proxy.requests)
    load = loadavg()[0]
    if method in ("loop", "floor"):
        result = run_direct(bootstrap, args.bindings, method == "loop", password)
    else:
        work = root / f"{method}-r{rep}"
        work.mkdir(parents=True)
        spark_args = ["--remote", connect] if method == "connect" and connect else \
            ["--driver-memory", "1g"]
        result = run_job(work, bootstrap, args.bindings, password, spark_args)
    left = live_bench_bindings(cluster)
    if left:
        raise RuntimeError(f"{method}: {left} bench bindings left on the broker")
    result["requests"] = {API[k]: proxy.requests[k] - before.get(k, 0) for k in API}
    result.update(method=method, rep=rep, load=load)
    print(json.dumps(result), flush=True)
    return result


def summarize(results: Sequence[Mapping[str, Any]], bindings: int) -> str:
    rows = [f"{bindings:,} bindings, medians of {max(r['rep'] for r in results) + 1} "
            "repetitions; seconds from launching the process", "",
            "| method | grant | revoke | CreateAcls | DeleteAcls | DescribeAcls | load |",
            "|---|---|---|---|---|---|---|"]
    for method in METHODS:
        mine = [r for r in results if r["method"] == method]
        if not mine:
            continue
        grant = statistics.median(r["grant"] for r in mine)
        revoke = statistics.median(r["revoke"] for r in mine)
        req = mine[-1]["requests"]
        rows.append(f"| {method} | {grant:.1f} | {revoke:.1f} | {req['CreateAcls']} | "
                    f"{req['DeleteAcls']} | {req['DescribeAcls']} | "
                    f"{statistics.median(r['load'] for r in mine):.2f} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=("direct",), default=None)
    parser.add_argument("--bootstrap")
    parser.add_argument("--per-binding", action="store_true")
    parser.add_argument("--bindings", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", default=None, help="write results JSON here (and .md beside)")
    args = parser.parse_args(argv)
    if args.bindings < 2 or args.bindings % 2:
        parser.error("--bindings must be an even number of at least 2")
    if args.command == "direct":
        return direct(args)
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown method(s) {sorted(unknown)}; known: {', '.join(METHODS)}")

    root = Path(tempfile.mkdtemp(prefix="acl-bench-"))
    (port,) = free_ports(1)
    proxy = KafkaProxy(port)
    cluster = KafkaCluster(root / "kafka", nodes=1, heap_mb=1024,
                           sasl=SaslUsers(admin_password=f"bench{secrets.token_hex(8)}"),
                           listeners=(ListenerSpec("SASL", "SASL_PLAINTEXT"),
                                      ListenerSpec("PROXIED", "SASL_PLAINTEXT",
                                                   advertised_port=port)))
    server: ConnectServer | None = None
    results: list[dict[str, Any]] = []
    try:
        cluster.start(timeout_s=120)
        proxy.upstream_port = int(cluster.bootstrap_servers_for("PROXIED").split(":")[1])
        proxy.start()
        if "connect" in methods:
            server = ConnectServer(root / "connect")
            server.start()
            warm_up(server.address)
        # The job's first run makes its tables (and pays for it): not counted.
        for method in ("job", "connect"):
            if method in methods:
                measure(method, -1, root, cluster, proxy, args,
                        server.address if server else None)
        for rep in range(args.reps):
            for method in methods:
                results.append(measure(method, rep, root, cluster, proxy, args,
                                       server.address if server else None))
    finally:
        if server is not None:
            server.stop()
        proxy.stop()
        cluster.stop()
    summary = summarize(results, args.bindings)
    print(summary)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"machine": machine(), "results": results}, indent=1))
        out.with_suffix(".md").write_text(summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
