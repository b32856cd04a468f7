"""Suites: loading, grid expansion, policy entries, the built-in suites and their errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from mpsched.envs import PolicyError, registry, scenarios
from mpsched.experiments.suite import SuiteError, load_suite, names, scenario_hash

BUILT_IN = ("dams-paper", "daps-paper", "leaderboard", "rtx-paper", "srpt-ecf-paper")


def small(**changes: object) -> dict:
    suite = {
        "name": "small",
        "seeds": 2,
        "groups": [{"name": "g", "scenarios": ["dams-rtt-40"], "policies": ["minrtt", "dams"]}],
    }
    suite.update(changes)
    return suite


def test_built_in_suites_load_and_expand() -> None:
    """Every built-in suite the issue names is there and expands to distinct keys."""
    assert set(BUILT_IN) <= set(names())
    expected = {  # groups x scenarios x policies x seeds, counted by hand from the YAML files
        # the groups; the real-trace variant of trace and the ideal-cc, cubic and 20 ms queue variants of
        # every group, without the optimum
        "dams-paper": 2 * 8 * 10 + 5 * 8 * 5 + 6 * 8 * 5 + 4 * 8 * 5 + 2 * 7 * 10
        + 3 * (2 * 7 * 10 + 5 * 7 * 5 + 6 * 7 * 5 + 4 * 7 * 5),
        "daps-paper": (6 + 3 + 2 * 6) * 2 * 3,  # and the ideal-cc and cubic variants of table-ii
        "rtx-paper": (1 + 5) * 4 * 4 * 6 * 5,  # the groups and five sensitivity variants of each
        "srpt-ecf-paper": (1 + 3) * 4 * 10,  # and three sensitivity variants
        # and the held DAMS-C, the optimum and the agent; on the four video scenarios, two rollouts
        "leaderboard": 13 * (len(registry.ids("baseline")) + 3) * 10 + 4 * 2 * 10,
    }
    for name, count in expected.items():
        episodes = load_suite(name).episodes()
        assert len(episodes) == count, name
        assert len({e.key for e in episodes}) == count, name


def test_quick_variants_are_smaller() -> None:
    for name in BUILT_IN:
        full, quick = load_suite(name), load_suite(name, quick=True)
        assert quick.quick and not full.quick
        assert len(quick.episodes()) <= len(full.episodes())
        assert max(e.case.scenario.duration_s for e in quick.episodes()) <= \
            max(e.case.scenario.duration_s for e in full.episodes())
    quick = load_suite("leaderboard", quick=True)
    assert {e.seed for e in quick.episodes()} == {0, 1}
    assert {e.case.scenario.duration_s for e in quick.episodes()} == {15.0}


def test_leaderboard_runs_every_baseline_the_optimum_and_the_agent_on_video_web_bulk_and_dynamics() -> None:
    """And on video the honest and the clairvoyant rollout of DAMS."""
    suite = load_suite("leaderboard")
    assert [g.name for g in suite.groups] == ["video", "web", "bulk", "dynamics"]
    every = registry.ids("baseline") + ["dams-c(hold_gain=1.5)", "optimum", "agent:default"]
    for g in suite.groups:
        rollouts = ["rollout:dams", "rollout:dams(variant=clairvoyant)"] if g.name == "video" else []
        assert [p.label for p in g.policies] == every + rollouts
    traced = [c for g in suite.groups for c in g.cases
              if any(p.bandwidth and p.bandwidth["type"] == "trace" for p in c.scenario.paths)]
    assert {c.name for c in traced} >= {"video-avc-cellular", "web-wifi-lte", "bulk-wifi-lte-olia"}
    # each dynamics scenario is the dynamics suite's scenario of the same name
    dynamics = {c.name: c.hash for g in load_suite("dynamics").groups for c in g.cases}
    moving = suite.group("dynamics").cases
    assert len(moving) == 5 and all(dynamics[c.name] == c.hash for c in moving)


def test_grid_over_built_in_names_gives_the_built_ins() -> None:
    suite = load_suite("dams-paper")
    rtt = suite.group("rtt")
    assert [c.name for c in rtt.cases] == [f"dams-rtt-{r}" for r in (40, 80, 120, 160, 200)]
    assert [c.params for c in rtt.cases] == [{"rtt2": r} for r in (40, 80, 120, 160, 200)]
    assert rtt.cases[1].hash == scenario_hash(scenarios.get("dams-rtt-80"))


def test_grid_set_and_name(tmp_path: Path) -> None:
    """``set`` with [*] and an index; a whole-field value keeps its type; a delay key
    replaces the others; the name is formatted."""
    suite = load_suite(small(groups=[{
        "name": "g",
        "scenarios": [{
            "name": "lossy-{cc}-{rtt}",
            "base": {"duration_s": 2, "paths": [{"bandwidth": 3, "rtt_ms": 20}, {"bandwidth": 2, "rtt_ms": 60}],
                     "workload": {"type": "avc"}},
            "grid": {"cc": ["newreno", "cubic"], "rtt": [30, 90]},
            "set": {"paths[*].cc": "{cc}", "paths[1].one_way_delay_ms": "{rtt}"},
        }],
        "policies": ["minrtt"],
    }]))
    cases = suite.groups[0].cases
    assert [c.name for c in cases] == ["lossy-newreno-30", "lossy-newreno-90", "lossy-cubic-30", "lossy-cubic-90"]
    sc = cases[3].scenario
    assert [p.cc for p in sc.paths] == ["cubic", "cubic"]
    assert sc.paths[1].rtt_s == pytest.approx(0.18) and sc.paths[0].rtt_s == pytest.approx(0.02)
    assert len({c.hash for c in cases}) == 4


def test_setting_a_controller_drops_the_parameters_only_another_takes() -> None:
    """A ccp path's ccp_gain goes when a grid (or a sensitivity variant) gives it another
    controller, as a scenario with ccp_gain on a newreno path is refused."""
    base = {"duration_s": 2, "paths": [{"bandwidth": 3, "rtt_ms": 20, "cc": "ccp", "ccp_gain": 1.5}],
            "workload": {"type": "avc"}}
    suite = load_suite(small(groups=[{"name": "g", "policies": ["minrtt"], "scenarios": [
        {"name": "p-{cc}", "base": base, "grid": {"cc": ["ccp", "newreno"]}, "set": {"paths[*].cc": "{cc}"}}]}]))
    ccp, newreno = (c.scenario.paths[0] for c in suite.groups[0].cases)
    assert (ccp.cc, ccp.ccp_gain, newreno.cc) == ("ccp", 1.5, "newreno")
    assert "ccp_gain" not in newreno.to_dict()


def test_scenario_files_resolve_against_the_suite_folder(tmp_path: Path) -> None:
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "two.yaml").write_text(textwrap.dedent("""
        name: two
        duration_s: 2
        paths: [{bandwidth: 3, rtt_ms: 20}, {bandwidth: 2, rtt_ms: 60}]
        workload: {type: bulk, rate_mbps: 4}
    """))
    (tmp_path / "suite.yaml").write_text(textwrap.dedent("""
        name: files
        groups:
          - name: g
            scenarios: [sc/two.yaml]
            policies: [minrtt]
    """))
    suite = load_suite(tmp_path / "suite.yaml")
    assert suite.groups[0].cases[0].name == "two"
    assert suite.source == str((tmp_path / "suite.yaml").resolve())


def test_scenario_hash_does_not_depend_on_where_the_trace_file_is(tmp_path: Path) -> None:
    trace = "0.0 2.0\n1.0 3.0\n"
    hashes = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "t.log").write_text(trace)
        suite = load_suite(small(groups=[{"name": "g", "policies": ["minrtt"], "scenarios": [{
            "name": "traced",
            "base": {"duration_s": 2, "workload": {"type": "avc"},
                     "paths": [{"bandwidth": {"type": "trace", "format": "cooked",
                                              "file": f"{tmp_path / folder}/t.log"},
                                "rtt_ms": 20}]}}]}]))
        hashes.append(suite.groups[0].cases[0].hash)
    assert hashes[0] == hashes[1]


def test_policy_entries() -> None:
    suite = load_suite(small(groups=[{"name": "g", "scenarios": ["dams-rtt-40"], "policies": [
        "minrtt",
        {"name": "dams-robust", "params": {"alpha": 0.5}},
        {"name": "edf", "label": "edf-drop", "drop_expired": True},
        {"name": "optimum", "resources": {"num_cpus": 2, "memory_gb": 4}},
        "agent:ppo-video",
        "my_module:MyPolicy",
    ]}]))
    p = {x.label: x for x in suite.groups[0].policies}
    assert list(p) == ["minrtt", "dams-robust(alpha=0.5)", "edf-drop", "optimum", "agent:ppo-video",
                       "my_module:MyPolicy"]
    assert [x.kind for x in p.values()] == ["baseline", "baseline", "baseline", "optimum", "agent", "user"]
    assert p["minrtt"].batched and p["my_module:MyPolicy"].batched
    assert not p["optimum"].batched and not p["agent:ppo-video"].batched
    assert p["optimum"].resources == {"num_cpus": 2.0, "memory_gb": 4.0}
    drops = {e.policy.label: e.drop_expired for e in suite.episodes()}
    assert drops["edf-drop"] and not drops["minrtt"]
    # the optimum's rivals: what it does not try on its own (registered baselines with
    # default parameters it does), each with its drop_expired
    opt = next(e for e in suite.episodes() if e.policy.kind == "optimum")
    assert [(r.label, drop) for r, drop in opt.rivals] == [
        ("dams-robust(alpha=0.5)", False), ("agent:ppo-video", False), ("my_module:MyPolicy", False)]
    assert all(not e.rivals for e in suite.episodes() if e.policy.kind != "optimum")


def test_star_is_every_baseline() -> None:
    suite = load_suite(small(groups=[{"name": "g", "scenarios": ["dams-rtt-40"], "policies": ["*"]}]))
    assert [p.name for p in suite.groups[0].policies] == registry.ids("baseline")


def test_optimum_entry_solves_and_replays_the_episode() -> None:
    """``optimum`` in a suite builds the solver's replay; its result carries the relaxed
    upper bound that the report's gap column divides by."""
    pytest.importorskip("ortools", reason="the optimum needs OR-Tools (the solve extra)")
    short = {"base": "dams-dynamic-1-rtt-40", "set": {"duration_s": 3}}
    suite = load_suite(small(groups=[{"name": "g", "scenarios": [{"name": "short", **short}],
                                      "policies": [{"name": "optimum", "params": {"slot_ms": 5}}, "dams"]}]))
    optimum, dams = suite.groups[0].policies
    assert optimum.kind == "optimum" and not optimum.batched
    case = suite.groups[0].cases[0]
    result = optimum.run(case.scenario, 0, drop_expired=False)
    assert result.policy == "optimum"
    bound = result.extra["upper_bound"]
    assert result.summary["weighted_on_time_rate"] <= bound + 1e-12
    assert dams.run(case.scenario, 0, drop_expired=False).summary["weighted_on_time_rate"] <= bound + 1e-12
    with pytest.raises(Exception, match="slot_ms"):
        load_suite(small(groups=[{"name": "g", "scenarios": ["dams-rtt-40"],
                                  "policies": [{"name": "optimum", "params": {"slot_ms": -1}}]}])
                   ).groups[0].policies[0].build()


def test_optimum_entry_takes_the_suite_policies_as_candidates(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite's optimum row is at least each of the suite's policies, those the optimum
    does not try on its own included: here a user class that sends the block with the
    most bytes left (a made-up rival that beats every registered baseline would be the
    row's source)."""
    pytest.importorskip("ortools", reason="the optimum needs OR-Tools (the solve extra)")
    (tmp_path / "largest_first.py").write_text(textwrap.dedent("""
        import numpy as np
        from mpsched.envs import WAIT

        class LargestFirst:
            name = "largest-first"

            def decide(self, obs):
                s = obs.sendable()
                return int(s[np.argmax(obs.unsent_bytes[s])]) if len(s) else WAIT
    """))
    monkeypatch.chdir(tmp_path)
    short = {"base": "dams-dynamic-1-rtt-40", "set": {"duration_s": 3}}
    suite = load_suite(small(groups=[{"name": "g", "scenarios": [{"name": "short", **short}],
                                      "policies": ["optimum", "largest_first:LargestFirst",
                                                   {"name": "dams-robust", "params": {"alpha": 0.2},
                                                    "drop_expired": True}]}]))
    episodes = {e.policy.label: e for e in suite.episodes() if e.seed == 0}
    opt = episodes["optimum"]
    result = opt.policy.run(opt.case.scenario, 0, False, None, opt.rivals)
    values = result.extra["candidate_values"]
    assert {"largest_first:LargestFirst (suite)", "dams-robust(alpha=0.2)+drop (suite)", "replay", "dams",
            "dams+drop"} <= set(values)
    for label in ("largest_first:LargestFirst", "dams-robust(alpha=0.2)"):
        e = episodes[label]
        score = e.policy.run(e.case.scenario, 0, e.drop_expired).summary["weighted_on_time_rate"]
        assert score == values[label + ("+drop" if e.drop_expired else "") + " (suite)"]
        assert score <= result.summary["weighted_on_time_rate"]


def test_user_policy_from_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "first_block.py").write_text(textwrap.dedent("""
        from mpsched.envs import WAIT

        class FirstBlock:
            name = "first-block"

            def __init__(self, offset=0):
                self.offset = offset

            def decide(self, obs):
                s = obs.sendable()
                return int(s[min(self.offset, len(s) - 1)]) if len(s) else WAIT
    """))
    monkeypatch.chdir(tmp_path)
    suite = load_suite(small(groups=[{"name": "g", "scenarios": ["dams-rtt-40"],
                                      "policies": [{"name": "first_block:FirstBlock", "params": {"offset": 1}}]}]))
    spec = suite.groups[0].policies[0]
    assert spec.label == "first_block:FirstBlock(offset=1)"
    assert spec.build().offset == 1
    with pytest.raises(PolicyError, match="cannot import module 'no_such_module'"):
        load_suite(small(groups=[{"name": "g", "scenarios": ["dams-rtt-40"],
                                  "policies": ["no_such_module:X"]}])).groups[0].policies[0].build()
    with pytest.raises(PolicyError, match="has no attribute 'Missing'"):
        load_suite(small(groups=[{"name": "g", "scenarios": ["dams-rtt-40"],
                                  "policies": ["first_block:Missing"]}])).groups[0].policies[0].build()


@pytest.mark.parametrize("change, match", [
    ({"name": "bad name"}, "name: got 'bad name'"),
    ({"seeds": 0}, "seeds: got 0"),
    ({"colour": "red"}, "colour: got 'red'"),
    ({"groups": []}, "groups: got"),
    ({"groups": [{"name": "g", "scenarios": ["no-such-scenario"], "policies": ["minrtt"]}]},
     r"scenarios\[0\]\.base: got 'no-such-scenario'"),
    ({"groups": [{"name": "g", "scenarios": ["dams-rtt-40"], "policies": ["no-such-policy"]}]},
     r"policies\[0\]\.name: got 'no-such-policy'"),
    ({"groups": [{"name": "g", "scenarios": ["dams-rtt-40"], "policies": [{"name": "dams", "params": {"x": 1}}]}]},
     "takes no parameter 'x'"),
    ({"groups": [{"name": "g", "scenarios": ["dams-rtt-40"], "policies": ["minrtt", "minrtt"]}]},
     "distinct labels"),
    ({"groups": [{"name": "g", "scenarios": ["dams-rtt-40"], "policies": ["minrtt"]},
                 {"name": "h", "scenarios": ["dams-rtt-40"], "policies": ["minrtt"]}]},
     r"each \(scenario, policy, seed\) once"),
    ({"groups": [{"name": "g", "scenarios": [{"base": "dams-rtt-{x}", "grid": {"y": [1]}}],
                  "policies": ["minrtt"]}]}, "name grid variables"),
    ({"groups": [{"name": "g", "scenarios": [{"base": "dams-rtt-40", "set": {"paths[5].cc": "cubic"}}],
                  "policies": ["minrtt"]}]}, "an index within paths"),
    ({"groups": [{"name": "g", "scenarios": [{"base": "dams-rtt-40", "set": {"paths[0].cc": "vegas"}}],
                  "policies": ["minrtt"]}]}, r"a valid scenario \(paths\[0\]\.cc"),
    ({"quick": {"groups": ["nope"]}}, "quick.groups"),
    ({"sensitivity": {"name": "v"}}, "sensitivity: got"),
    ({"sensitivity": [{"name": "v"}]}, r"sensitivity\[0\]\.set: got None"),
    ({"sensitivity": [{"name": "a b", "set": {"paths[*].cc": "cubic"}}]}, r"sensitivity\[0\]\.name"),
    ({"sensitivity": [{"name": "v", "set": {"paths[*].cc": "cubic"}, "groups": ["nope"]}]},
     r"sensitivity\[0\]\.groups: got \['nope'\]"),
    ({"sensitivity": [{"name": "v", "set": {"paths[*].cc": "vegas"}}]}, r"a valid scenario \(paths\[0\]\.cc"),
    ({"sensitivity": [{"name": "v", "set": {"paths[*].cc": "cubic"}, "policies": ["rr"]}]},
     r"sensitivity\[0\]\.policies: got \['rr'\]"),
    ({"sensitivity": [{"name": "v", "set": {"paths[*].cc": "cubic"}},
                      {"name": "v", "set": {"paths[*].cc": "lia"}}]}, r"sensitivity\[1\]\.name"),
    ({"sensitivity": [{"name": "v", "set": {"paths[*].cc": "cubic"}, "colour": 1}]}, r"sensitivity\[0\]\.colour"),
    ({"split": ["g"]}, "split: got"),
    ({"split": {"train": ["g"]}}, r"split\.test: got None"),
    ({"split": {"train": ["g"], "test": ["nope"]}}, r"split\.test: got \['nope'\]; expected names of groups"),
    ({"split": {"train": ["g"], "test": ["g"]}}, "not in both"),
    ({"split": {"train": ["g"], "test": ["h"], "valid": ["g"]}}, r"split\.valid"),
])
def test_errors_name_the_field(change: dict, match: str) -> None:
    with pytest.raises(SuiteError, match=match):
        load_suite(small(**change))


def test_a_sensitivity_variant_is_each_group_with_one_choice_changed() -> None:
    """A variant copies the groups it names with its ``set`` applied after the entries'
    own, renames groups and scenarios NAME@VARIANT, keeps the seeds and policies unless
    told, and follows its group in the quick variant."""
    groups = [{"name": "g", "scenarios": [{"base": "dams-rtt-{r}", "grid": {"r": [40, 80]},
                                           "set": {"paths[0].loss": 0.01}}], "policies": ["minrtt", "dams"]},
              {"name": "h", "scenarios": ["dams-rtt-120"], "policies": ["minrtt"], "seeds": [7]}]
    sensitivity = [{"name": "cubic", "set": {"paths[*].cc": "cubic"}},
                   {"name": "ideal", "groups": ["g"], "set": {"paths[*].cc": "ideal", "paths[0].loss": 0.0},
                    "seeds": 1, "policies": ["dams"]}]
    suite = load_suite(small(groups=groups, sensitivity=sensitivity, quick={"groups": ["h"], "seeds": 1}))
    by_name = {g.name: g for g in suite.groups}
    assert list(by_name) == ["g", "h", "g@cubic", "h@cubic", "g@ideal"]
    base, cubic, ideal = by_name["g"], by_name["g@cubic"], by_name["g@ideal"]
    assert [c.name for c in cubic.cases] == ["dams-rtt-40@cubic", "dams-rtt-80@cubic"]
    assert (cubic.variant_of, cubic.variant, cubic.seeds) == ("g", "cubic", (0, 1))
    assert by_name["h@cubic"].seeds == (7,)
    for b, v in zip(base.cases, cubic.cases):
        assert [p.cc for p in b.scenario.paths] == ["newreno", "newreno"]
        assert [p.cc for p in v.scenario.paths] == ["cubic", "cubic"]
        assert v.scenario.paths[0].loss.rate == b.scenario.paths[0].loss.rate == 0.01  # the entry's set is kept
        assert v.scenario.name == v.name and v.hash != b.hash
    assert [p.loss.rate for p in ideal.cases[0].scenario.paths] == [0.0, 0.0]
    assert ([p.label for p in ideal.policies], ideal.seeds) == (["dams"], (0,))
    quick = load_suite(small(groups=groups, sensitivity=sensitivity, quick={"groups": ["h"], "seeds": 1}), quick=True)
    assert [g.name for g in quick.groups] == ["h", "h@cubic"]
    assert len(suite.episodes()) == 2 * 2 * 2 + 1 + 2 * 2 * 2 + 1 + 2


def test_split_names_disjoint_groups_and_episodes() -> None:
    """The agents suite's split: train, validation and test groups, no (scenario, seed) in
    two parts, the paper's test traces never in training; a suite may share scenarios
    across the split on other seeds but not on the same ones."""
    suite = load_suite("agents")
    assert suite.split == {"train": ("train-constant", "train-square", "train-trace"), "validation": ("validation",),
                           "test": ("test-dynamic", "test-trace", "test-workload", "test-paths", "test-hsdpa",
                                    "test-rtt")}
    train = {(c.name, s) for g in suite.split_groups("train") for c in g.cases for s in g.seeds}
    validation = {(c.name, s) for g in suite.split_groups("validation") for c in g.cases for s in g.seeds}
    test = {(c.name, s) for g in suite.split_groups("test") for c in g.cases for s in g.seeds}
    assert train and validation and test and not train & test and not train & validation and not validation & test
    files = {str(p.bandwidth.get("file", "")).rsplit("/", 1)[-1] for g in suite.split_groups("train")
             for c in g.cases for p in c.scenario.paths if p.bandwidth}
    assert "cellular-1.50.txt" not in files and "cellular-2.36.txt" not in files
    assert {c.scenario.workload["type"] for g in suite.split_groups("train") for c in g.cases} == {"avc"}
    assert load_suite("agents", quick=True).split["train"] == ()
    two = [{"name": "g", "scenarios": ["dams-rtt-40"], "policies": ["minrtt"], "seeds": [0, 1]},
           {"name": "h", "scenarios": ["dams-rtt-40"], "policies": ["dams"], "seeds": [2]}]
    assert load_suite(small(groups=two, split={"train": ["g"], "test": ["h"]})).split_groups("test")[0].seeds == (2,)
    two[1]["seeds"] = [1]
    with pytest.raises(SuiteError, match=r"split\.test: got \[\['dams-rtt-40', 1\]\]"):
        load_suite(small(groups=two, split={"train": ["g"], "test": ["h"]}))
    with pytest.raises(SuiteError, match="split: got None; expected a suite with a split"):
        load_suite(small()).split_groups("train")


def test_unknown_suite_lists_the_built_ins() -> None:
    with pytest.raises(SuiteError, match="dams-paper"):
        load_suite("no-such-suite")


def test_files_of_built_in_suites_ship_with_the_package() -> None:
    """Every file a built-in suite's scenario reads lies in the suites' traces folder (or
    its hsdpa folder, beside their licence), matches the package-data patterns
    (traces/*.txt, traces/hsdpa/*.txt) and is not ignored by git (which ignores *.log)."""
    from mpsched.experiments.suite import SUITES_DIR

    files = set()
    for name in names():
        for g in load_suite(name).groups:
            for c in g.cases:
                for p in c.scenario.to_dict()["paths"]:
                    if p.get("bandwidth", {}).get("type") == "trace":
                        files.add(Path(p["bandwidth"]["file"]))
    assert files
    for f in files:
        assert f.parent in (SUITES_DIR / "traces", SUITES_DIR / "traces" / "hsdpa"), f
        assert f.suffix == ".txt" and f.is_file(), f
    assert (SUITES_DIR / "traces" / "hsdpa" / "LICENSE").is_file()
