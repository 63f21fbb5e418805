"""Checkpoints (`lf.request_checkpoint`) and `lfrl run --resume`: a resumed run goes on exactly as
the uninterrupted one; a checkpoint that is broken or of another program is refused before anything
runs; state that cannot be saved is named."""

import json
import pickle
import struct
from pathlib import Path

import pytest

from tests.lfutil import run_lf, write

# Timers, a logical action with a value, an `after` delay across a bank, state with a random
# generator: everything that lives in the event queue and in reactors between two tags.
PROGRAM = """
target Python {
  fast: true
}

preamble {=
  import random
=}

reactor Source(n = 10, ckpt = 4) {
  output out
  state count = 0
  state rng = {= random.Random(7) =}
  logical action again(100 msec)
  timer t(0, 1 sec)

  reaction(t) -> out, again {=
    self.count += 1
    out.set((self.count, self.rng.random()))
    again.schedule(MSEC(200), self.count * 10)
    if self.count == self.ckpt:
      lf.request_checkpoint(os.path.join(lf.source_directory(), "at4.ckpt"))
    if self.count == self.n:
      request_stop()
  =}

  reaction(again) {=
    print(f"again {again.value} at {lf.time.logical_elapsed()}")
  =}
}

reactor Sink(bank_index = 0) {
  input inp
  output echo
  state total = 0.0
  reaction(inp) -> echo {=
    self.total += inp.value[1] * (self.bank_index + 1)
    echo.set(round(self.total, 9))
  =}
}

main reactor {
  s = new Source(n = 8)
  k = new[2] Sink()
  (s.out)+ -> k.inp after 500 msec
}
"""


def trace(path: Path) -> list[list]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_resumed_run_goes_on_exactly_as_the_uninterrupted_one(tmp_path: Path, workers: str) -> None:
    whole = run_lf(tmp_path, PROGRAM, "--workers", workers, trace=tmp_path / "whole.jsonl")
    assert whole.returncode == 0, whole.stderr
    checkpoint = tmp_path / "at4.ckpt"
    assert checkpoint.read_bytes().startswith(b"LFPYCKPT")
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []  # written atomically
    resumed = run_lf(tmp_path, PROGRAM, "--workers", workers, "--resume", str(checkpoint),
                     trace=tmp_path / "resumed.jsonl")
    assert resumed.returncode == 0, resumed.stderr
    # The checkpoint was written at the end of the tag of the fourth timer event (3 s).
    after = [entry for entry in trace(tmp_path / "whole.jsonl") if entry[:2] > [3_000_000_000, 0]]
    assert len(after) > 10
    assert trace(tmp_path / "resumed.jsonl") == after
    lines = whole.stdout.splitlines()
    assert resumed.stdout.splitlines() == lines[lines.index("again 40 at 3300000000"):]
    echoes = [entry[2:] for entry in after if entry[2].endswith(".echo")]
    assert echoes[-2:] == [["Test.k[0].echo", "2.157622544"], ["Test.k[1].echo", "4.315245089"]]


def saved_state(path: Path) -> dict:
    """A checkpoint's state, less the physical time it was written at."""
    data = path.read_bytes()
    (length,) = struct.unpack_from("<I", data, 8)
    state = pickle.loads(data[12 + length:])
    del state["elapsed"]
    state["reactors"]["Test.s"]["rng"] = state["reactors"]["Test.s"]["rng"].getstate()  # comparable
    return state


def test_a_resumed_run_writes_its_later_checkpoints_identically(tmp_path: Path) -> None:
    source = PROGRAM.replace("if self.count == self.ckpt:", "if self.count % self.ckpt == 0:").replace(
        '"at4.ckpt"', 'f"at{self.count}.ckpt"')
    assert run_lf(tmp_path, source).returncode == 0
    first = saved_state(tmp_path / "at8.ckpt")
    (tmp_path / "at8.ckpt").unlink()
    assert run_lf(tmp_path, source, "--resume", str(tmp_path / "at4.ckpt")).returncode == 0
    assert saved_state(tmp_path / "at8.ckpt") == first
    assert first["reactors"]["Test.s"]["count"] == 8


def refusal(tmp_path: Path, checkpoint: Path, source: str = PROGRAM) -> str:
    result = run_lf(tmp_path, source, "--resume", str(checkpoint))
    assert result.returncode == 1
    assert result.stdout == ""  # nothing of the program ran
    assert "Traceback" not in result.stderr
    return result.stderr.strip()


def test_broken_checkpoints_are_refused_before_anything_runs(tmp_path: Path) -> None:
    assert run_lf(tmp_path, PROGRAM).returncode == 0
    good = (tmp_path / "at4.ckpt").read_bytes()
    broken = tmp_path / "broken.ckpt"
    header_end = 12 + struct.unpack_from("<I", good, 8)[0]
    cases = {
        good[:-10]: f"truncated: {len(good) - header_end - 10} of its {len(good) - header_end} bytes of state are there",
        good[:30]: "truncated: the file ends after 30 bytes, inside its header",
        good[:-1] + bytes([good[-1] ^ 1]): "corrupt: its contents do not match their checksum",
        good + b"x": "corrupt: its contents do not match their checksum",
        b"PYREPLAY" + good[8:]: "not an lfpy checkpoint (it does not start with LFPYCKPT)",
        good[:12] + b"[" + good[13:]: "corrupt: its header cannot be read",
    }
    for data, reason in cases.items():
        broken.write_bytes(data)
        assert refusal(tmp_path, broken) == f"{broken}:1:1: error: {reason}"
    assert refusal(tmp_path, tmp_path / "missing.ckpt") == \
        f"{tmp_path / 'missing.ckpt'}:1:1: error: cannot read the checkpoint: No such file or directory"
    assert (tmp_path / "at4.ckpt").read_bytes() == good  # nothing overwritten


def test_a_checkpoint_of_another_program_is_refused(tmp_path: Path) -> None:
    assert run_lf(tmp_path, PROGRAM).returncode == 0
    checkpoint = tmp_path / "at4.ckpt"
    prefix = f"{checkpoint}:1:1: error: cannot resume this program from it: it was written by a different program: "
    assert refusal(tmp_path, checkpoint, PROGRAM.replace("Source(n = 8)", "Source(n = 9)")) == \
        prefix + "parameter n of Test.s is 9 here, 8 in the checkpoint"
    assert refusal(tmp_path, checkpoint, PROGRAM.replace("new[2] Sink()", "new[3] Sink()")) == \
        prefix + "this program has Test.k[2], its program does not"
    assert refusal(tmp_path, checkpoint, PROGRAM.replace("* (self.bank_index + 1)", "* self.bank_index")) == \
        prefix + "the code of its reactors or preambles differs from this one's"


def test_state_that_cannot_be_saved_is_named_and_the_run_stops(tmp_path: Path) -> None:
    source = """
target Python { fast: true }
preamble {=
  import threading
=}
main reactor {
  state guard = {= threading.Lock() =}
  state ticks = 0
  timer t(0, 1 sec)
  reaction(t) {=
    self.ticks += 1
    if self.ticks == 2:
      lf.request_checkpoint("never.ckpt")
  =}
  reaction(shutdown) {=
    print(f"ticks {self.ticks}")
  =}
}
"""
    result = run_lf(tmp_path, source, "--timeout", "10s")
    assert result.returncode == 1
    assert result.stderr.strip() == ("never.ckpt: error: checkpoint not written: cannot save 'guard' of Test "
                                     "(a _thread.lock): TypeError: cannot pickle '_thread.lock' object")
    assert result.stdout.strip() == "ticks 2"  # stopped at the next microstep; shutdown ran
    assert not (tmp_path / "never.ckpt").exists()


def test_programs_with_modes_cannot_be_checkpointed(tmp_path: Path) -> None:
    source = """
target Python { fast: true }
main reactor {
  timer t(0, 1 sec)
  initial mode A {
    reaction(t) {=
      lf.request_checkpoint("modal.ckpt")
    =}
  }
  mode B {}
}
"""
    write(tmp_path, source)
    result = run_lf(tmp_path, source, "--timeout", "3s")
    assert result.returncode == 1
    assert result.stderr.strip() == \
        "modal.ckpt: error: checkpoint not written: checkpoints of programs with modes are not supported"


FEDERATED = PROGRAM.replace("main reactor {", "federated reactor {")  # s in lfrl's process, k[0] and k[1] in their own


@pytest.mark.parametrize(("asker", "alone"), [("s", False), ("k[1]", False), ("s", True)],
                         ids=["s", "k[1]", "s-coordinator-only"])
def test_a_federated_program_resumes_exactly_as_its_uninterrupted_run(tmp_path: Path, asker: str, alone: bool) -> None:
    """The checkpoint holds the state of the reactors in every federate's process (the sinks' totals);
    asked for by the federate in lfrl's process (s, at 3 s) or by one in a process of its own (k[1],
    when the fourth value reaches it at 3.5 s). `alone`: the run that writes it has s in a process of
    its own too (--coordinator-only), and the resumed one, in lfrl's process, goes on from it."""
    assert FEDERATED != PROGRAM
    source = FEDERATED if asker == "s" else FEDERATED.replace(
        "if self.count == self.ckpt:", "if False:").replace("    echo.set(round(self.total, 9))\n", """\
    echo.set(round(self.total, 9))
    if self.bank_index == 1 and inp.value[0] == 4:
      lf.request_checkpoint(os.path.join(lf.source_directory(), "at4.ckpt"))
""").replace("preamble {=\n  import random\n=}", "preamble {=\n  import os, random\n=}")
    since = [3_000_000_000, 0] if asker == "s" else [3_500_000_000, 0]
    main = run_lf(tmp_path / "main", PROGRAM, trace=tmp_path / "main.jsonl")
    whole = run_lf(tmp_path, source, *(["--coordinator-only"] if alone else []), trace=tmp_path / "whole.jsonl")
    assert whole.returncode == 0, whole.stderr
    assert trace(tmp_path / "whole.jsonl") == trace(tmp_path / "main.jsonl")  # the same results as a main reactor
    assert main.stdout == whole.stdout
    resumed = run_lf(tmp_path, source, "--resume", str(tmp_path / "at4.ckpt"), trace=tmp_path / "resumed.jsonl")
    assert resumed.returncode == 0, resumed.stderr
    after = [entry for entry in trace(tmp_path / "whole.jsonl") if entry[:2] > since]
    assert len(after) > 10
    assert trace(tmp_path / "resumed.jsonl") == after
    echoes = [entry[2:] for entry in after if entry[2].endswith(".echo")]
    assert echoes[-2:] == [["Test.k[0].echo", "2.157622544"], ["Test.k[1].echo", "4.315245089"]]


def test_a_federate_state_that_cannot_be_saved_is_named_and_the_run_stops(tmp_path: Path) -> None:
    source = FEDERATED.replace("  state total = 0.0\n", "  state total = 0.0\n  state guard = {= threading.Lock() =}\n"
                               ).replace("import random", "import random, threading")
    result = run_lf(tmp_path, source)
    assert result.returncode == 1
    assert result.stderr.strip() == (f"{tmp_path / 'at4.ckpt'}: error: checkpoint not written: cannot save 'guard' of "
                                     "Test.k[0] (a _thread.lock): TypeError: cannot pickle '_thread.lock' object")
    assert not (tmp_path / "at4.ckpt").exists()


def test_programs_with_transient_federates_cannot_be_checkpointed(tmp_path: Path) -> None:
    source = FEDERATED.replace("  k = new[2] Sink()", "  @transient\n  k = new[2] Sink()")
    result = run_lf(tmp_path, source)
    assert result.returncode == 1
    assert result.stderr.strip() == (f"{tmp_path / 'at4.ckpt'}: error: checkpoint not written: checkpoints of "
                                     "programs with transient federates are not supported")


# A reactor that keeps a file open: its state saves only how much it wrote (`Appender`'s pickled
# form); `resumed()`, called by lfpy once the state is back and before the first tag, reopens the
# file next to the program and cuts it back to where the checkpoint left it.
RESUMING = """
target Python {
  fast: true
}

reactor Writer(name = "log.txt") {
  preamble {=
    class Appender:
      def __init__(self, path):
        self.file = open(path, "w")
        self.written = 0

      def __getstate__(self):
        return {"written": self.written}

      def reopen(self, path):
        self.file = open(path, "r+")
        self.file.truncate(self.written)
        self.file.seek(self.written)

      def add(self, line):
        self.file.write(line)
        self.file.flush()
        self.written = self.file.tell()
  =}
  input inp
  state out = {= None =}

  reaction(startup) {=
    self.out = self.Appender(os.path.join(lf.source_directory(), self.name))
  =}

  method resumed() {=
    self.out.reopen(os.path.join(lf.source_directory(), self.name))
    print(f"{self.name} resumed at {self.out.written} bytes", flush=True)
  =}

  reaction(inp) {=
    self.out.add(f"{inp.value}\\n")
    if inp.value == 3:
      lf.request_checkpoint(os.path.join(lf.source_directory(), "at3.ckpt"))
  =}

  reaction(shutdown) {=
    self.out.file.close()
  =}
}

reactor Count {
  output out
  timer t(0, 1 sec)
  state n = 0
  reaction(t) -> out {=
    self.n += 1
    out.set(self.n)
    if self.n == 5:
      request_stop()
  =}
}

MAIN reactor {
  c = new Count()
  w = new Writer()
  c.out -> w.inp
}
"""


@pytest.mark.parametrize("main", ["main", "federated"])
def test_a_reactors_resumed_method_runs_once_before_the_first_tag_of_a_resumed_run(tmp_path: Path,
                                                                                    main: str) -> None:
    """`federated`: the writer is a federate in a process of its own, and resumes there."""
    program = RESUMING.replace("MAIN", main)
    whole = run_lf(tmp_path, program)
    assert (whole.returncode, whole.stdout) == (0, ""), whole.stderr  # a run from the start never calls it
    assert (tmp_path / "log.txt").read_text() == "1\n2\n3\n4\n5\n"
    (tmp_path / "log.txt").write_text("1\n2\n3\nwritten after the checkpoint, then the program died\n")
    resumed = run_lf(tmp_path, program, "--resume", str(tmp_path / "at3.ckpt"))
    assert (resumed.returncode, resumed.stdout) == (0, "log.txt resumed at 6 bytes\n"), resumed.stderr
    assert (tmp_path / "log.txt").read_text() == "1\n2\n3\n4\n5\n"


@pytest.mark.parametrize("main", ["main", "federated"])
def test_a_resumed_method_that_fails_stops_the_run_before_it_goes_on(tmp_path: Path, main: str) -> None:
    program = RESUMING.replace("MAIN", main)
    assert run_lf(tmp_path, program).returncode == 0
    (tmp_path / "log.txt").unlink()  # what `resumed` opens is gone
    resumed = run_lf(tmp_path, program, "--resume", str(tmp_path / "at3.ckpt"))
    assert (resumed.returncode, resumed.stdout) == (1, "")
    lines = resumed.stderr.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'Test.lf'}:17:21: error: resuming the reactors failed: "
                               "FileNotFoundError: [Errno 2] No such file or directory: "), resumed.stderr
    assert not (tmp_path / "log.txt").exists()
