"""`check` sees the readers: the group inventory (each live group's type, state, members and
lag per topic) and its rules, through the job's CLI (in this process, on the tests'
SparkSession), against the session's plain broker, with real kafka-python consumer groups.
Every group and topic of this module is named under its own prefix (`P`); the broker's other
groups are other tests' and are left out of every assertion.

    setup    `lags` (2 partitions): `lagging` commits 2+2, 6 records are written, `calm`
             commits 6+4, 2 more are written; `busy` reads all 12, commits and keeps
             polling (Stable, one member); `gone` commits 1 on `gone-t`; `again` commits 3
             on `again-t`
    first    check: `lagging` lags 8 (over the threshold 5): group_lagging; the inventory
             holds every group's exact lag and topic id
    change   `gone-t` deleted; `again-t` deleted and created again (the broker drops their
             offsets); `past` commits offset 7 on the new, empty `again-t`
    second   check: `gone` stale (deleted), `again` stale (recreated: another topic id than
             the inventory recorded), `past` stale (recreated: past the log end); `calm` and
             `busy` get neither rule
    site     report --site: the groups' page, opened in a headless Chromium, shows the
             newest inventory and the lag per day; a group id carrying markup shows as text
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from provisioning.kafka.codes import topic_id_text
from provisioning.kinds.groups.rules import DROPPED_GONE, DROPPED_NEW_ID, PAST_END
from tests.helpers import Completed, run_cli_in_process, write_conf, write_manifest_table
from tests.integration.test_site import browser  # noqa: F401 (the headless Chromium)

pytestmark = pytest.mark.integration

P = f"gchk{secrets.token_hex(3)}-"
LAGS, GONE_T, AGAIN_T = f"{P}lags", f"{P}gone-t", f"{P}again-t"
LAGGING, CALM, BUSY, GONE, AGAIN, PAST = (f"{P}{n}" for n in ("lagging", "calm", "busy",
                                                              "gone", "again", "past"))
# A group id with markup in it: the site shows it as text.
MARKUP = f"{P}<script>window.injected = 1</script> \"q\" 's' &amp;"
TOPIC_RULES = ("offline_partition", "under_replicated", "below_min_isr",
               "min_insync_within_rf", "unmanaged", "drift", "leader_not_preferred",
               "idle_topic", "empty_topic", "disk_usage", "disk_forecast")


def wait_for(what: str, check: Any, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for partition, n in per_partition.items():
        for i in range(n):
            producer.send(topic, f"record-{i}".encode(), partition=partition)
    producer.flush()
    producer.close()


def consume(bootstrap: str, topic: str, group: str, records: int) -> KafkaConsumer:
    """A classic group's consumer that read `records` records of `topic` and committed."""
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read, deadline = 0, time.monotonic() + 60
    while read < records and time.monotonic() < deadline:
        read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
    assert read == records
    consumer.commit()
    return consumer


class Member(threading.Thread):
    """`consumer` (already committed) polling on until stopped: one live member."""

    def __init__(self, consumer: KafkaConsumer) -> None:
        super().__init__(daemon=True)
        self.consumer, self.stop = consumer, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(timeout_ms=200)
        self.consumer.close()


@dataclass
class Flow:
    work: Path
    runs: dict[str, Completed] = field(default_factory=dict)
    ids: dict[str, dict[str, str | None]] = field(default_factory=dict)

    @property
    def wh(self) -> Path:
        return self.work / "wh"

    def run_id(self, name: str) -> str:
        return str(self.runs[name].json()["run_id"])


def topic_ids(admin: KafkaAdminClient) -> dict[str, str | None]:
    return {t["name"]: topic_id_text(t.get("topic_id"))
            for t in admin.describe_topics([LAGS, GONE_T, AGAIN_T]) if not t.get("error_code")}


def offsets(admin: KafkaAdminClient, group: str) -> dict[Any, Any]:
    return dict(admin.list_group_offsets([group])[group])


@pytest.fixture(scope="module")
def flow(kafka: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    bootstrap = kafka.bootstrap_servers
    done = Flow(tmp_path_factory.mktemp("gchk"))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(LAGS, 2, 1), NewTopic(GONE_T, 1, 1),
                         NewTopic(AGAIN_T, 1, 1)])
    produce(bootstrap, LAGS, {0: 2, 1: 2})
    consume(bootstrap, LAGS, LAGGING, 4).close()
    produce(bootstrap, LAGS, {0: 4, 1: 2})
    consume(bootstrap, LAGS, CALM, 10).close()
    produce(bootstrap, LAGS, {0: 2})
    member = Member(consume(bootstrap, LAGS, BUSY, 12))
    member.start()
    marked = KafkaConsumer(bootstrap_servers=bootstrap, group_id=MARKUP,
                           enable_auto_commit=False)
    marked.commit({TopicPartition(LAGS, 0): OffsetAndMetadata(5, "", -1),
                   TopicPartition(LAGS, 1): OffsetAndMetadata(4, "", -1)})
    marked.close()
    produce(bootstrap, GONE_T, {0: 1})
    consume(bootstrap, GONE_T, GONE, 1).close()
    produce(bootstrap, AGAIN_T, {0: 3})
    consume(bootstrap, AGAIN_T, AGAIN, 3).close()

    write_manifest_table(spark, done.wh / "desired_topics", [])
    conf = write_conf(done.work / "check.yaml", bootstrap, done.wh, extra={
        "groups": {"lag_threshold": 5},
        "checks": {"severity": dict.fromkeys(TOPIC_RULES, "off")}})
    try:
        wait_for("busy to be Stable", lambda: {
            g["group_id"]: g["group_state"] for g in admin.list_groups()}.get(BUSY) == "Stable")
        done.ids["first"] = topic_ids(admin)
        done.runs["first"] = run_cli_in_process(["check", "--conf", str(conf), "--json"])
        admin.delete_topics([GONE_T, AGAIN_T])
        # The broker drops a deleted topic's committed offsets.
        wait_for("the offsets dropped", lambda: offsets(admin, GONE) == {}
                 and offsets(admin, AGAIN) == {})

        def created() -> bool:
            try:
                admin.create_topics([NewTopic(AGAIN_T, 1, 1)])
            except TopicAlreadyExistsError:
                return False
            return True

        wait_for(f"{AGAIN_T} created again", created)
        past = KafkaConsumer(bootstrap_servers=bootstrap, group_id=PAST,
                             enable_auto_commit=False)
        past.commit({TopicPartition(AGAIN_T, 0): OffsetAndMetadata(7, "", -1)})
        past.close()
        done.ids["second"] = topic_ids(admin)
        done.runs["second"] = run_cli_in_process(["check", "--conf", str(conf), "--json"])
        done.runs["site"] = run_cli_in_process(["report", "--conf", str(conf), "--site",
                                                str(done.work / "site"), "--json"])
        yield done
    finally:
        member.stop.set()
        member.join(30)
        admin.close()


def findings(flow: Flow, run: str) -> list[tuple[Any, ...]]:
    """(rule, severity, topic, detail) of one run's findings about this module's groups."""
    checked = flow.runs[run]
    assert checked.returncode == 0, checked.output[-3000:]
    return sorted((v["rule"], v["severity"], v["topic"], v["detail"])
                  for v in checked.json()["violations"] if P in str(v.get("detail")))


def inventory(spark: Any, flow: Flow, run: str) -> list[tuple[Any, ...]]:
    """One run's group inventory rows of this module's groups, as tuples."""
    rows = (spark.read.format("delta").load(str(flow.wh / "provision_runs_inventory_groups"))
            .where(f"run_id = '{flow.run_id(run)}'").collect())
    return sorted((r["group"], r["type"], r["group_state"], r["members"], r["topic"],
                   r["topic_id"], r["partitions"], r["lag"], r["topic_state"], r["reason"],
                   r["error"]) for r in rows if r["group"].startswith(P))


def test_a_group_lagging_over_the_threshold_is_found_with_its_exact_lag(flow: Flow) -> None:
    assert findings(flow, "first") == [
        ("group_lagging", "warning", None,
         f"group {LAGGING} (type classic, state Empty, 0 members) lags 8 records on topic "
         f"{LAGS}, over groups.lag_threshold 5")]


def test_the_inventory_holds_each_groups_exact_lag_per_topic(spark: Any, flow: Flow) -> None:
    ids = flow.ids["first"]
    assert inventory(spark, flow, "first") == sorted([
        (LAGGING, "classic", "Empty", 0, LAGS, ids[LAGS], 2, 8, "live", None, None),
        (CALM, "classic", "Empty", 0, LAGS, ids[LAGS], 2, 2, "live", None, None),
        (BUSY, "classic", "Stable", 1, LAGS, ids[LAGS], 2, 0, "live", None, None),
        (MARKUP, "classic", "Empty", 0, LAGS, ids[LAGS], 2, 3, "live", None, None),
        (GONE, "classic", "Empty", 0, GONE_T, ids[GONE_T], 1, 0, "live", None, None),
        (AGAIN, "classic", "Empty", 0, AGAIN_T, ids[AGAIN_T], 1, 0, "live", None, None)])


def test_groups_whose_topics_were_deleted_or_made_again_are_stale(flow: Flow) -> None:
    assert flow.ids["second"][AGAIN_T] != flow.ids["first"][AGAIN_T]
    empty = "(type classic, state Empty, 0 members): every topic it committed offsets on is gone"
    assert findings(flow, "second") == sorted([
        ("group_lagging", "warning", None,
         f"group {LAGGING} (type classic, state Empty, 0 members) lags 8 records on topic "
         f"{LAGS}, over groups.lag_threshold 5"),
        ("stale_group", "warning", None,
         f"group {GONE} {empty}: {GONE_T} deleted ({DROPPED_GONE})"),
        ("stale_group", "warning", None,
         f"group {AGAIN} {empty}: {AGAIN_T} recreated ({DROPPED_NEW_ID})"),
        ("stale_group", "warning", None,
         f"group {PAST} {empty}: {AGAIN_T} recreated ({PAST_END})")])


def test_the_second_runs_inventory_says_which_topics_are_gone_and_how(
        spark: Any, flow: Flow) -> None:
    first, second = flow.ids["first"], flow.ids["second"]
    assert inventory(spark, flow, "second") == sorted([
        (LAGGING, "classic", "Empty", 0, LAGS, first[LAGS], 2, 8, "live", None, None),
        (CALM, "classic", "Empty", 0, LAGS, first[LAGS], 2, 2, "live", None, None),
        (BUSY, "classic", "Stable", 1, LAGS, first[LAGS], 2, 0, "live", None, None),
        (MARKUP, "classic", "Empty", 0, LAGS, first[LAGS], 2, 3, "live", None, None),
        (GONE, "classic", "Empty", 0, GONE_T, first[GONE_T], 0, None, "deleted",
         DROPPED_GONE, None),
        (AGAIN, "classic", "Empty", 0, AGAIN_T, first[AGAIN_T], 0, None, "recreated",
         DROPPED_NEW_ID, None),
        (PAST, "classic", "Empty", 0, AGAIN_T, second[AGAIN_T], 1, None, "recreated",
         PAST_END, None)])


def test_the_sites_group_page_shows_the_newest_inventory_and_the_lag_per_day(
        browser: Any, flow: Flow) -> None:  # noqa: F811 (the fixture)
    from selenium.webdriver.common.by import By

    built = flow.runs["site"]
    assert built.returncode == 0, built.output[-3000:]
    browser.get((flow.work / "site" / "groups" / "index.html").as_uri())
    assert browser.execute_script("return typeof window.injected") == "undefined"
    assert browser.find_element(By.TAG_NAME, "h1").text == "Consumer groups"
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "header a")] == [
        "Overview", "Runs", "Topics", "Findings", "Inventory", "Groups"]
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in browser.find_elements(By.CSS_SELECTOR, "table tbody tr")]
    assert sorted(r for r in rows if r[1].startswith(P)) == sorted([
        ["local", LAGGING, "classic", "Empty", "0", LAGS, "8", "live"],
        ["local", CALM, "classic", "Empty", "0", LAGS, "2", "live"],
        ["local", BUSY, "classic", "Stable", "1", LAGS, "0", "live"],
        ["local", MARKUP, "classic", "Empty", "0", LAGS, "3", "live"],
        ["local", GONE, "classic", "Empty", "0", GONE_T, "-", "deleted"],
        ["local", AGAIN, "classic", "Empty", "0", AGAIN_T, "-", "recreated"],
        ["local", PAST, "classic", "Empty", "0", AGAIN_T, "-", "recreated"]])
    # Both checks ran today: one point a day, the day's last check.
    chart = browser.find_element(By.CSS_SELECTOR,
                                 f'svg[data-chart="lag of {LAGGING} on {LAGS} (local)"]')
    assert [c.get_attribute("data-y") for c in chart.find_elements(
        By.CSS_SELECTOR, "circle.point")] == ["8"]
