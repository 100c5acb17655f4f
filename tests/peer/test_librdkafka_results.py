"""The reading of librdkafka's runner summary and the verdict `make peer-tests` gives."""

from __future__ import annotations

from pathlib import Path

from tests.peer import results

LISTS = Path(__file__).parent
SUMMARY = """\
noise before
TEST 20250101000000 (bare, scenario default) SUMMARY
#==================================================================#
|\x1b[32m <MAIN>                                   |     PASSED |  12.000s \x1b[0m|
|\x1b[32m 0001_multiobj                            |     PASSED |   1.234s \x1b[0m|
|\x1b[31m 0081_admin                               |     FAILED |   3.000s \x1b[0m|\x1b[31m \
do_test_CreateAcls:1539: Expected success\x1b[0m
|\x1b[36m 0004_conf                                |    SKIPPED |   0.000s \x1b[0m|\x1b[36m \
Filtered due to negative test flags\x1b[0m
|\x1b[36m 0170_share_consumer_subscription         |    SKIPPED |   0.000s \x1b[0m|\x1b[36m \
not applicable for broker version 4.0.0.0\x1b[0m
|\x1b[35m 0091_max_poll_interval_timeout           |    RUNNING |  60.000s \x1b[0m|
#==================================================================#
"""


def test_summary_rows_are_read_without_colours_and_without_tests_outside_the_suite() -> None:
    found = results.parse_summary(SUMMARY)

    assert sorted(found) == [
        "0001_multiobj",
        "0081_admin",
        "0091_max_poll_interval_timeout",
        "0170_share_consumer_subscription",
    ]
    assert found["0001_multiobj"].state == "PASSED"
    assert found["0081_admin"].state == "FAILED"
    assert found["0081_admin"].reason == "do_test_CreateAcls:1539: Expected success"
    assert found["0170_share_consumer_subscription"].state == "SKIPPED"
    # A test still running when the runner gave up did not pass.
    assert found["0091_max_poll_interval_timeout"].state == "FAILED"


def test_a_runner_that_printed_no_summary_fails_every_must_pass_test() -> None:
    verdict = results.judge(results.parse_summary("segfault\n"), ["0001_multiobj"], {})

    assert not verdict.ok
    assert verdict.must_pass_failed == ["0001_multiobj"]


def test_verdict_fails_on_must_pass_failures_and_on_failures_no_list_explains() -> None:
    found = results.parse_summary(SUMMARY)

    verdict = results.judge(found, ["0001_multiobj"], {"0081_admin": "ACLs (issue 17)"})
    assert not verdict.ok
    assert verdict.unlisted_failed == ["0091_max_poll_interval_timeout"]

    verdict = results.judge(
        found,
        ["0001_multiobj", "0091_max_poll_interval_timeout"],
        {"0081_admin": "ACLs (issue 17)"},
    )
    assert verdict.must_pass_failed == ["0091_max_poll_interval_timeout"]
    assert verdict.counts == {"PASSED": 1, "FAILED": 2, "SKIPPED": 1}


def test_a_passing_test_off_the_must_pass_list_is_reported_but_does_not_fail_the_run() -> None:
    found = results.parse_summary(SUMMARY)

    verdict = results.judge(found, [], {"0001_multiobj": "reason"})
    assert verdict.newly_passing == ["0001_multiobj"]
    assert results.judge(found, [], {}).newly_passing == ["0001_multiobj"]
    assert verdict.unlisted_failed == ["0081_admin", "0091_max_poll_interval_timeout"]


def test_a_partial_run_checks_only_the_must_pass_tests_it_selected() -> None:
    verdict = results.judge(
        results.parse_summary(SUMMARY), ["0001_multiobj", "0012_produce_consume"], {}, {"0001"}
    )

    assert verdict.must_pass_failed == []


def test_the_committed_lists_are_well_formed_and_disjoint() -> None:
    for must_pass_file in sorted(LISTS.glob("librdkafka-*.must-pass")):
        must_pass = results.read_must_pass(must_pass_file)
        excluded = results.read_excluded(
            must_pass_file.with_name(must_pass_file.name.replace(".must-pass", ".excluded"))
        )
        assert must_pass, must_pass_file
        assert len(must_pass) == len(set(must_pass)), must_pass_file
        assert not set(must_pass) & set(excluded), must_pass_file
        for name in [*must_pass, *excluded]:
            assert results.ROW.match(f"| {name} | PASSED | 1.0s |"), name
        assert all(excluded.values()), f"every exclusion needs its reason: {must_pass_file}"


def test_a_must_pass_test_that_fails_again_alone_still_fails_the_verdict() -> None:
    run = {
        "0110_batch_size": results.TestResult("0110_batch_size", "FAILED", "avg 3868"),
        "0118_commit_rebalance": results.TestResult("0118_commit_rebalance", "FAILED", "x"),
        "0001_multiobj": results.TestResult("0001_multiobj", "PASSED", ""),
    }
    alone = {
        "0110_batch_size": results.TestResult("0110_batch_size", "PASSED", ""),
        "0118_commit_rebalance": results.TestResult("0118_commit_rebalance", "FAILED", "x"),
    }
    must_pass = ["0001_multiobj", "0110_batch_size", "0118_commit_rebalance"]
    merged, flaky = results.merge_retry(run, alone, ["0110_batch_size", "0118_commit_rebalance"])
    assert flaky == ["0110_batch_size"]
    assert merged["0110_batch_size"].state == "PASSED"
    assert "avg 3868" in merged["0110_batch_size"].reason
    verdict = results.judge(merged, must_pass, {})
    assert verdict.must_pass_failed == ["0118_commit_rebalance"] and not verdict.ok
    # A retry that printed nothing (runner crashed) changes nothing.
    merged, flaky = results.merge_retry(run, {}, ["0110_batch_size"])
    assert flaky == [] and merged == run


def test_the_three_broker_tests_have_their_home_in_the_cluster_lists() -> None:
    # Every test of the cluster run is judged there, and the one-broker run (where they
    # fail, as on a one-broker Kafka) excludes each one saying where it passes.
    from tests.peer.librdkafka_suite import CLUSTER_TESTS

    for cluster_file in sorted(LISTS.glob("librdkafka-*-cluster.must-pass")):
        suite = cluster_file.name.removesuffix("-cluster.must-pass")
        cluster = results.read_must_pass(cluster_file)
        cluster_excluded = results.read_excluded(cluster_file.with_suffix(".excluded"))
        one_broker = results.read_excluded(LISTS / f"{suite}.excluded")
        assert sorted(n[:4] for n in [*cluster, *cluster_excluded]) == sorted(
            CLUSTER_TESTS.split(",")
        ), cluster_file
        for name in cluster:
            assert cluster_file.name in one_broker[name], (suite, name)
    assert sorted(LISTS.glob("librdkafka-*-cluster.must-pass")), "no cluster lists"


def test_the_share_consumer_tests_have_their_home_in_the_share_lists() -> None:
    # The share run judges every share-consumer test; the one-broker run, told the broker
    # is Kafka 4.0 where they skip, names none of them.
    from tests.peer.librdkafka_suite import SHARE_TESTS

    share_files = sorted(LISTS.glob("librdkafka-*-share.must-pass"))
    assert share_files, "no share lists"
    for share_file in share_files:
        suite = share_file.name.removesuffix("-share.must-pass")
        judged = [
            *results.read_must_pass(share_file),
            *results.read_excluded(share_file.with_suffix(".excluded")),
        ]
        assert sorted(n[:4] for n in judged) == sorted(SHARE_TESTS.split(",")), share_file
        one_broker = [
            *results.read_must_pass(LISTS / f"{suite}.must-pass"),
            *results.read_excluded(LISTS / f"{suite}.excluded"),
        ]
        assert not [n for n in one_broker if n[:4] in SHARE_TESTS.split(",")], suite
