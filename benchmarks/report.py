"""Every benchmark, one after the other, and one report: `make bench` (about 50 minutes here) or
`make bench QUICK=1` (a reduced run of a few minutes).

  .venv/bin/python benchmarks/report.py [--quick] [--only savina,broadcast] [--no-run]

Runs each script of BENCHMARKS below with a progress bar (its own output goes to
RESULTS/logs/<stem>.log), then writes a README next to the results: one summary table (workload,
lfrl, Ray, the best other peer, the ratios and the target), each benchmark's plot and table, how to
reproduce each row, and the reference papers' figures with their setup next to ours. The full run
writes benchmarks/results/ and benchmarks/README.md; `--quick` writes build/bench-quick/ (README.md
included), so that it never replaces the committed results. `--no-run` only rewrites the README from
the summaries already there. A script that fails is reported with its log's last lines; the others
still run, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import geometric_mean

from common import QUICK_RESULTS
from tqdm import tqdm

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass
class Benchmark:
    stem: str  # the script benchmarks/<stem>.py, and its results <stem>.md/.png/.json
    what: str
    full: tuple[str, ...]  # its arguments in `make bench`
    quick: tuple[str, ...]  # in `make bench QUICK=1`
    minutes: float  # how long the full run took here (the progress bar's weights)
    quick_minutes: float


BENCHMARKS = [
    Benchmark("runtime_overhead", "The cost of lfpy's runtime per reaction and per tag against plain Python calls",
              (), ("--quick",), 0.5, 0.2),
    Benchmark("savina", "The Savina actor micro-benchmarks: LF programs against Pykka, Ray actors, asyncio and "
              "threads", (), ("--quick",), 2.4, 0.7),
    Benchmark("broadcast", "A 10 MB array to 2-16 receivers per round, lfrl against Ray's object store",
              (), ("--quick",), 1, 0.7),
    Benchmark("federation", "Federated programs in processes: a tag's cost and parallel federates",
              (), ("--quick",), 0.3, 0.3),
    Benchmark("scale", "A round of one driver and 1-64 federates (an int or 64 KiB each way): lfrl against a "
              "multiprocessing.Pipe star and Ray actors, and the waiting workers' CPU time; 1-16 federates on a local "
              "3-node Ray cluster (TCP) against a star of TCP connections and Ray actors", (), ("--quick",), 10, 1.5),
    Benchmark("cluster", "Federates on a Ray cluster (three nodes simulated on this machine): a tag's round trip "
              "across nodes and sampling synchronised every step on two nodes, lfrl against Ray actors; DQN with "
              "its actors on two nodes against one host", (), ("--quick",), 2, 1),
    Benchmark("vs_ray", "Parallel sampling: lfrl against Ray, gymnasium's vector environments, SB3's "
              "SubprocVecEnv and EnvPool", (), ("--quick",), 8, 1),
    Benchmark("qlearning", "Synchronized parallel Q-learning, lfrl against Ray", (), ("--quick",), 4, 1),
    Benchmark("multiagent", "Multi-agent inference: lfrl against Ray and the batched single-process bound",
              (), ("--quick",), 3.7, 0.5),
    Benchmark("replay", "Prioritized replay: pyreplay against cpprb and Tianshou",
              ("--seconds", "2", "--rounds", "4", "--out", "replay"), ("--quick", "--no-fanout", "--out", "replay"),
              2.8, 0.5),
    Benchmark("replay_sb3", "Replay for Stable-Baselines3: SB3's own buffer against pyreplay.sb3's (uniform, "
              "prioritized, frame_stack) and cpprb, alone and under DQN and SAC; an Atari buffer's memory",
              (), ("--quick",), 8, 1),
    Benchmark("learners", "The learners' time to a known return, lfrl against Stable-Baselines3 and SBX (its JAX "
              "port), and DQN's training throughput on Pong, lfrl against SB3", ("--seeds", "1"), ("--quick",), 32, 4),
    # its 640 runs take hours: `make bench` runs those the committed learners_steps.csv lacks (--resume)
    Benchmark("learners_steps", "Sample efficiency over many seeds: the environment steps lfrl and Stable-Baselines3 "
              "need to reach each learner's threshold", ("--resume", "--jobs", "2"), ("--quick",), 0.2, 0.5),
    Benchmark("portable", "What `lfrl run --portable` costs: torch's kernels pinned against as the processor picks "
              "them", ("--rounds", "1"), ("--quick",), 1.5, 0.5),
    Benchmark("parallel_learners", "SAC's updates/s with each batch split over L learner reactors (1 and 2 "
              "runtime threads)", ("--rounds", "1", "--nets", "64,64"),
              ("--quick",), 1.1, 0.7),
]

# The reference papers' figures and their setup, next to ours (filled from the summaries): our rows
# whose workload starts with the prefix, or only the one named after `|` when it was measured (the
# paper's size; a quick run measures smaller ones, shown with their sizes).
PAPERS = [
    ("Gym sampling (CartPole)", "LF 1.21x Ray", "sampling (CartPole-v1, |sampling (CartPole-v1, 32 envs)"),
    ("Atari sampling", "LF 11.62x Ray", "sampling (ALE/Pong-v5, |sampling (ALE/Pong-v5, 32 envs)"),
    ("synchronized parallel Q-learning", "31.2% less training time than Ray (0.69x)", "synchronized Q-learning"),
    ("multi-agent inference", "LF 5.12x Ray", "multi-agent inference"),
    ("broadcast 10 MB to 16 receivers", "LF 7.1 ms, Ray 24.3 ms per round (3.4x)", "broadcast 10 MB to 16 receivers"),
    ("Savina (reactor runtime; Akka's Python counterpart is Pykka)", "LF (C++ runtime) 1.86x Akka, 1.42x CAF "
     "(geometric mean)", "Savina "),
    ("PingPong, LF Python target on lfc's C runtime", "2.1 us per round trip (1,000,000 in 2.1 s)",
     "Savina PingPong"),
]
PAPER_SETUP = (
    "Kwok, Lohstroh, Lee: *Efficient Parallel Reinforcement Learning Framework using the Reactor Model* "
    "(arXiv 2312.04704): 32 cores, a GIL-free Python fork, Ray written with one blocking call per step and an Atari "
    "reset after every step. Menard et al.: *High-Performance Deterministic Concurrency Using Lingua Franca* "
    "(Savina on LF's C++ runtime against Akka and CAF). Ours: this machine (below), stock CPython 3.11 with its "
    "GIL, Ray and the peers written as their documentation recommends, every contender interleaved in rounds.")


def run(benchmarks: list[Benchmark], quick: bool, results: Path) -> list[str]:
    """Runs the scripts; returns the stems that failed."""
    logs = results / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LFRL_BENCH_RESULTS": str(results), "PYTHONUNBUFFERED": "1"}
    weights = [b.quick_minutes if quick else b.minutes for b in benchmarks]
    failed = []
    with tqdm(total=round(sum(weights) * 60), unit="s", desc="benchmarks",
              bar_format="{l_bar}{bar}| {postfix} [{elapsed}<{remaining}]") as bar:
        for bench, minutes in zip(benchmarks, weights, strict=True):
            bar.set_postfix_str(bench.stem)
            args = bench.quick if quick else bench.full
            start = time.monotonic()
            with open(logs / f"{bench.stem}.log", "w") as log:
                status = subprocess.run([sys.executable, str(HERE / f"{bench.stem}.py"), *args], cwd=ROOT, env=env,
                                        stdout=log, stderr=subprocess.STDOUT).returncode
            seconds = time.monotonic() - start
            if status != 0:
                failed.append(bench.stem)
                tail = (logs / f"{bench.stem}.log").read_text().splitlines()[-15:]
                tqdm.write(f"benchmarks/{bench.stem}.py failed (status {status}); the end of "
                           f"{logs / bench.stem}.log:\n" + "\n".join("  " + line for line in tail))
            else:
                tqdm.write(f"{bench.stem}: {seconds:.0f} s")
            bar.update(round(minutes * 60))
    return failed


def fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    digits = 0 if abs(x) >= 100 else 1 if abs(x) >= 10 else 2 if abs(x) >= 0.1 else 4
    return f"{x:,.{digits}f}" + (f" {unit}" if unit else "")


def ratio(x: float | None) -> str:
    return f"{x:.2f}x" if x is not None else "-"


def summary_table(summaries: dict[str, dict]) -> list[str]:
    lines = ["| workload | unit | lfrl | Ray | best other peer | lfrl vs Ray | lfrl vs peer | target | met | note |",
             "|---|---|---:|---:|---:|---:|---:|---|---|---|"]
    for stem, data in summaries.items():
        for row in data["rows"]:
            peer = f"{fmt(row['peer'])} ({row['peer_name']})" if row["peer"] is not None else "-"
            met = {True: "yes", False: "**no**", None: "-"}[row["met"]]
            lines.append(f"| [{row['workload']}](#{stem}) | {row['unit']} | {fmt(row['lfrl'])} | {fmt(row['ray'])} | "
                         f"{peer} | {ratio(row['vs_ray'])} | {ratio(row['vs_peer'])} | {row['target']} | {met} | "
                         f"{row['note']} |")
    return lines


def paper_table(summaries: dict[str, dict]) -> list[str]:
    rows = [row for data in summaries.values() for row in data["rows"]]
    lines = ["| experiment | reference paper | ours |", "|---|---|---|"]
    for experiment, theirs, wanted in PAPERS:
        prefix, _, exact = wanted.partition("|")
        mine = [r for r in rows if r["workload"].startswith(prefix)]
        if exact and any(r["workload"] == exact for r in mine):
            mine = [r for r in mine if r["workload"] == exact]
        if not mine:
            ours = "not measured in this run"
        elif prefix == "Savina ":  # a suite: geometric means, as the paper gives them
            means = {name: geometric_mean(xs) for name in ("Pykka", "asyncio", "threads")
                     if len(xs := [r.get("others", {}).get(name) for r in mine]) == len(mine) and all(xs)}
            if all(r["vs_ray"] for r in mine):
                means["Ray actors"] = geometric_mean([r["vs_ray"] for r in mine])
            ours = (f"lfrl over {len(mine)} benchmarks, geometric mean: "
                    + ", ".join(f"{ratio(x)} {name}" for name, x in means.items()))
        else:
            ours = "; ".join(
                f"{r['workload']}: lfrl {fmt(r['lfrl'], r['unit'])}"
                + (f", {ratio(r['vs_ray'])} Ray" if r["vs_ray"] is not None else "")
                + (f", {ratio(r['vs_peer'])} {r['peer_name']}" if r["vs_peer"] is not None else "")
                for r in mine)
        lines.append(f"| {experiment} | {theirs} | {ours} |")
    return lines


def write_readme(benchmarks: list[Benchmark], quick: bool, results: Path, failed: list[str]) -> Path:
    readme = results / "README.md" if quick else HERE / "README.md"
    prefix = os.path.relpath(results, readme.parent) + "/"
    prefix = "" if prefix == "./" else prefix
    summaries = {}
    for bench in benchmarks:
        path = results / f"{bench.stem}.json"
        if path.exists():
            summaries[bench.stem] = json.loads(path.read_text())
    hosts: dict[str, list[str]] = {}
    for stem, data in summaries.items():
        hosts.setdefault(data.get("host", "this machine").split(", Python")[0], []).append(stem)  # the machine
    make = "make bench QUICK=1" if quick else "make bench"
    if len(hosts) <= 1:
        where = f"`{make}` ran every script below one after the other on {next(iter(hosts), 'this machine')}"
    else:  # scripts re-run alone on another machine since
        where = (f"`{make}` runs every script below one after the other; these tables come from more than one machine ("
                 + "; ".join(f"{host}: {', '.join(stems)}" for host, stems in hosts.items()) + ")")
    text = ["# Benchmarks", "",
            f"{where} (each table gives the load during its own run). Each script interleaves its contenders in rounds (medians, min-max over "
            "rounds in its table), checks that they computed the same thing and prints no ratio where they did not. "
            "Ratios are speed-ups: above 1, lfrl is faster." + (" **A reduced (quick) run**: fewer rounds and "
                                                               "smaller sizes than `make bench`." if quick else ""),
            ""]
    if failed:
        text += [f"**Failed in this run**: {', '.join(failed)} (their logs: `{prefix}logs/`).", ""]
    text += ["## Summary", "", *summary_table(summaries), "",
             "## The reference papers and ours", "", PAPER_SETUP, "", *paper_table(summaries), ""]
    for bench in benchmarks:
        text += [f"## {bench.stem}", "", bench.what + ".", ""]
        data = summaries.get(bench.stem)
        if data is None:
            text += ["No results: " + ("it failed in this run." if bench.stem in failed else "not run yet."), ""]
            continue
        text += [f"Reproduce: `{data['command']}`. Table: [{bench.stem}.md]({prefix}{bench.stem}.md).", ""]
        if (results / f"{bench.stem}.png").exists():
            text += [f"![{bench.stem}]({prefix}{bench.stem}.png)", ""]
    readme.write_text("\n".join(text))
    return readme


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the reduced run, into build/bench-quick")
    parser.add_argument("--only", help="comma-separated benchmarks to run (the README covers all)")
    parser.add_argument("--no-run", action="store_true", help="only rewrite the README from the summaries there")
    args = parser.parse_args()
    known = {b.stem: b for b in BENCHMARKS}
    only = args.only.split(",") if args.only else list(known)
    unknown = [s for s in only if s not in known]
    if unknown:
        sys.exit(f"report.py: error: no benchmark named {', '.join(unknown)} (known: {', '.join(known)})")
    results = QUICK_RESULTS if args.quick else HERE / "results"
    if not args.no_run and not args.only:  # the README speaks of this run only: no summary of an earlier one
        for bench in BENCHMARKS:
            (results / f"{bench.stem}.json").unlink(missing_ok=True)
    failed = [] if args.no_run else run([known[s] for s in only], args.quick, results)
    readme = write_readme(BENCHMARKS, args.quick, results, failed)
    print(f"wrote {readme.relative_to(ROOT)}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
