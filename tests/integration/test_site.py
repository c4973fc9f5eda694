"""`report --site`: real runs through the CLI (apply, a change, check twice) on the session's
plain broker emptied first (brokers.reset: check judges every topic of a cluster, so no
other module's topics may be on it), the site written from the tables, then opened from the
file system in a headless Chromium: what its pages show, that the search finds a topic,
that no page logs an error or asks for anything outside the site. Regenerated with no new
commit, the site is the same, byte for byte. And a site made from data whose topic, owner and
config value carry markup (a script, quotes, ampersands) shows them as text."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dev.devkafka import KafkaCluster
from provisioning.views.site import render_site, write_files
from provisioning.views.site.html import size as size_text
from provisioning.views.site.html import topic_file
from tests.helpers import REPO, run_cli, write_conf, write_manifest_table
from tests.support.brokers import reset
from tests.unit.test_site import HOSTILE, HOSTILE_TOPIC, hostile_data

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

HOUR = "3600000"
POLICIES = {"create": [{"name": "required_configs",
                        "configs": {"retention.ms": f"^{HOUR}$"}}]}
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
# Records written before the first check and between the two (site.events-audit stays
# empty).
WRITTEN = ({"site.orders": 30, "site.payments": 5}, {"site.orders": 20, "site.payments": 10})
PARTITIONS = {"site.orders": 3, "site.events-audit": 1, "site.payments": 2}
CREATED = "plan planned -> validate validated -> apply created -> verify created"


@pytest.fixture(scope="module")
def broker(kafka: KafkaCluster) -> Iterator[KafkaCluster]:
    reset(kafka)
    yield kafka
    reset(kafka)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium (Debian's chromium and chromium-driver, which .ci/run installs)
    that keeps its console and network logs."""
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        pytest.skip(f"no {CHROMIUM} or {DRIVER}: apt-get install chromium chromium-driver "
                    "(.ci/run does) to run the site in a browser")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,1600", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _manifest(spark: Any, table: Path, with_payments: bool) -> None:
    rows = [
        {"cluster": "local", "topic": "site.orders", "partitions": 3, "replication_factor": 1,
         "configs": {"retention.ms": HOUR}, "owner": "orders-team"},
        # No retention: check's required_configs finds it, an error.
        {"cluster": "local", "topic": "site.events-audit", "partitions": 1,
         "replication_factor": 1, "configs": {}, "owner": "audit-team"},
    ]
    if with_payments:
        rows.append({"cluster": "local", "topic": "site.payments", "partitions": 2,
                     "replication_factor": 1, "configs": {"retention.ms": HOUR},
                     "owner": "payments-team"})
    write_manifest_table(spark, table, [{**r, "state": "present"} for r in rows])


def _produce(bootstrap: str, counts: dict[str, int]) -> None:
    """`counts[topic]` records of 100 bytes into each topic, spread over its partitions."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for topic, n in counts.items():
            for i in range(n):
                producer.send(topic, b"x" * 100, partition=i % PARTITIONS[topic])
        producer.flush()
    finally:
        producer.close()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _open(driver: Any, path: Path) -> None:
    driver.get(path.as_uri())


def _points(driver: Any, chart: str) -> list[tuple[str, str]]:
    from selenium.webdriver.common.by import By

    svg = driver.find_element(By.CSS_SELECTOR, f'svg[data-chart="{chart}"]')
    return [(c.get_attribute("data-x"), c.get_attribute("data-y"))
            for c in svg.find_elements(By.CSS_SELECTOR, "circle.point")]


def _cells(driver: Any, selector: str) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in driver.find_elements(By.CSS_SELECTOR, f"{selector} tbody tr")]


def _assert_quiet_and_inside(browser: Any, root: str) -> None:
    """No console message of the pages opened since the last call, and no request outside
    `root`."""
    console = browser.get_log("browser")
    assert [e for e in console if e["level"] in ("SEVERE", "WARNING")] == []
    asked = sorted({json.loads(e["message"])["message"]["params"]["request"]["url"]
                    for e in browser.get_log("performance")
                    if json.loads(e["message"])["message"]["method"]
                    == "Network.requestWillBeSent"})
    assert asked and [u for u in asked if not u.startswith(root + "/")
                      and not u.startswith("data:")] == []


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve(root: Path) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_site_shows_the_runs_and_is_the_same_when_made_again(
        broker: KafkaCluster, spark: Any, connect_server: Any, browser: Any,
        tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    warehouse = tmp_path / "wh"
    _manifest(spark, warehouse / "desired_topics", with_payments=False)
    # How full the disk is is the machine's: no disk rule here.
    conf = write_conf(tmp_path / "conf.yaml", broker.bootstrap_servers, warehouse,
                      extra={"policies": POLICIES, "checks": {"disk_used_ratio": 1}})

    def cli(*args: str) -> Any:
        done = run_cli([*args, "--conf", str(conf), "--json"], remote=connect_server.address)
        assert done.returncode in (0, 1), done.output[-3000:]
        return done.json()

    # The events topic breaks the create policy: apply blocks it, so it is made by hand.
    first = cli("apply")
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("site.events-audit", 1, 1)], raise_errors=True)
    finally:
        admin.close()
    _manifest(spark, warehouse / "desired_topics", with_payments=True)
    second = cli("apply")
    checks = []
    for written in WRITTEN:
        _produce(broker.bootstrap_servers, written)
        checks.append(cli("check"))
    runs = {r["run_id"]: r for r in spark.read.format("delta").load(
        str(warehouse / "provision_runs")).collect()}
    # What the last check measured, as the site must show it.
    measured = {r["topic"]: r for r in spark.read.format("delta").load(
        str(warehouse / "provision_runs_inventory"))
        .where(f"run_id = '{checks[1]['run_id']}'").collect()}
    assert {t: r["records"] for t, r in measured.items()} == {
        "site.orders": 50, "site.payments": 15, "site.events-audit": 0}

    site = tmp_path / "site"
    made = run_cli(["report", "--conf", str(conf), "--site", str(site), "--since", "3",
                    "--json"], remote=connect_server.address)
    assert made.returncode == 0, made.output[-3000:]
    first_files = _files(site)

    today = str(runs[checks[1]["run_id"]]["started_at"].date())
    findings = len(checks[1]["violations"])
    _open(browser, site / "index.html")
    assert browser.find_element(By.CSS_SELECTOR, "section.cluster h2").text == "Cluster local"
    assert _points(browser, "findings per day: local") == [(today, str(findings))]
    assert _points(browser, "bytes per day: local") == [
        (today, str(sum(r["size_bytes"] for r in measured.values())))]
    screenshot = tmp_path / "overview.png"
    browser.save_screenshot(str(screenshot))
    print(f"site overview screenshot: {screenshot}")

    # The second apply's page: the one change, by kind.
    assert json.loads(made.stdout.strip().splitlines()[-1])["runs"] == 4
    _open(browser, site / "runs" / "index.html")
    listed = _cells(browser, "table")
    assert [(r[0], r[1], r[2]) for r in listed] == [
        (checks[1]["run_id"], "check", runs[checks[1]["run_id"]]["status"]),
        (checks[0]["run_id"], "check", runs[checks[0]["run_id"]]["status"]),
        (second["run_id"], "apply", runs[second["run_id"]]["status"]),
        (first["run_id"], "apply", runs[first["run_id"]]["status"])]
    browser.find_element(By.LINK_TEXT, first["run_id"]).click()
    assert [h.text for h in browser.find_elements(By.TAG_NAME, "h2")] == [
        "topics (2, 1 failing)"]
    assert _cells(browser, "table.changes") == [
        ["local/site.events-audit", "CREATE", "blocked",
         "plan blocked (POLICY_VIOLATION: required_configs: config retention.ms is required "
         "(matching ^3600000$); add it to the topic's configs)"],
        ["local/site.orders", "CREATE", "created", CREATED]]
    browser.back()
    browser.find_element(By.LINK_TEXT, second["run_id"]).click()
    assert [h.text for h in browser.find_elements(By.TAG_NAME, "h2")] == ["topics (1)"]
    assert browser.find_element(By.CSS_SELECTOR, "p.unchanged").text == "2 unchanged."
    assert _cells(browser, "table.changes") == [
        ["local/site.payments", "CREATE", "created", CREATED]]

    # A topic's history, from the search.
    _open(browser, site / "topics" / "index.html")
    box = browser.find_element(By.ID, "search")
    box.send_keys("paym")
    payments = measured["site.payments"]["size_bytes"]
    assert _cells(browser, "table.search") == [
        ["local", "site.payments", size_text(payments), "2", "0"]]
    browser.find_element(By.LINK_TEXT, "site.payments").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "Topic site.payments"
    assert [r[1:] for r in _cells(browser, "table.history")] == [
        [f"{second['run_id']} (apply)", "CREATE", CREATED]]
    assert _points(browser, "size per day") == [(today, str(payments))]
    assert _points(browser, "records per day") == [(today, "15")]

    _open(browser, site / "findings.html")
    since = runs[checks[0]["run_id"]]["started_at"].strftime("%Y-%m-%d %H:%M:%S UTC")
    assert [r[:5] for r in _cells(browser, "table.findings")] == [
        ["error", "local", "site.events-audit", "required_configs", since]]
    _open(browser, site / "inventory.html")
    assert [r[1] for r in _cells(browser, "table.largest")] == [
        "site.orders", "site.payments", "site.events-audit"]

    _assert_quiet_and_inside(browser, site.as_uri())

    # Served by a static server, the same.
    server = _serve(site)
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        browser.get(base + "/topics/index.html")
        browser.find_element(By.ID, "search").send_keys("local/site.ord")
        assert _cells(browser, "table.search") == [
            ["local", "site.orders", size_text(measured["site.orders"]["size_bytes"]), "3",
             "0"]]
        browser.find_element(By.LINK_TEXT, "site.orders").click()
        assert browser.find_element(By.TAG_NAME, "h1").text == "Topic site.orders"
        _assert_quiet_and_inside(browser, base)
    finally:
        server.shutdown()
        server.server_close()

    # No new commit: the same files, byte for byte.
    again = run_cli(["report", "--conf", str(conf), "--site", str(site), "--since", "3",
                     "--json"], remote=connect_server.address)
    assert again.returncode == 0, again.output[-3000:]
    assert _files(site) == first_files
    keep = REPO / "build" / "site-test"
    shutil.rmtree(keep, ignore_errors=True)
    shutil.copytree(site, keep)
    shutil.copy(screenshot, keep / "overview.png")
    print(f"site kept at {keep.resolve()}")


def test_markup_in_a_topic_owner_and_config_shows_as_text(browser: Any,
                                                           tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    def ran_no_script() -> bool:
        return browser.execute_script("return typeof window.injected") == "undefined"

    site = tmp_path / "site"
    write_files(site, render_site(hostile_data()))
    _open(browser, site / topic_file("local", HOSTILE_TOPIC))
    assert ran_no_script()
    assert browser.find_element(By.TAG_NAME, "h1").text == f"Topic {HOSTILE_TOPIC}"
    manifest = browser.find_elements(By.TAG_NAME, "table")[0]
    assert [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in manifest.find_elements(By.CSS_SELECTOR, "tbody tr")] == [
        ["local", HOSTILE_TOPIC, "present", "1", "1", "-", f"x.note={HOSTILE}", HOSTILE, "-"]]
    _open(browser, site / "findings.html")
    assert ran_no_script()
    assert [[r[2], r[5], r[6]] for r in _cells(browser, "table.findings")] == [
        [HOSTILE_TOPIC, f"config missing: {HOSTILE}", HOSTILE]]
    # The search writes the index's names into the page as text, too.
    _open(browser, site / "topics" / "index.html")
    browser.find_element(By.ID, "search").send_keys("window")
    assert [r[:2] for r in _cells(browser, "table.search")] == [["local", HOSTILE_TOPIC]]
    assert ran_no_script()
    _assert_quiet_and_inside(browser, site.as_uri())
