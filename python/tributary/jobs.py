"""Running job files from Python: tributary.train("job.yaml", overrides={...}).

A single-process file job trains in this process, through the same train::train as
`trib train` (GIL released, callbacks per step, Ctrl-C stops it cleanly at a step boundary
with a checkpoint and raises KeyboardInterrupt). A local cluster or a stream job runs as a
`trib train` child process: a cluster's launcher starts its roles by running its own program
again, which must be trib, and a stream job without a broker hosts the built-in one. Either
way the result is read from the run directory's metrics.jsonl."""

import json
import os
import shutil
import signal
import subprocess

from . import _tributary


def _override_text(key, value):
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, float, str)):
        text = str(value)
    else:
        text = json.dumps(value)  # lists and mappings: JSON is YAML
    return f"{key}={text}"


def _overrides(overrides):
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [_override_text(k, v) for k, v in overrides.items()]
    if isinstance(overrides, (list, tuple)) and all(isinstance(o, str) for o in overrides):
        return list(overrides)
    raise TypeError("overrides must be a dict {'training.epochs': 3} or a list of 'key.path=value' strings")


def trib_binary():
    """The trib program: $TRIB_BINARY, else the one built or installed with this package,
    else trib on PATH."""
    env = os.environ.get("TRIB_BINARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    # build/python/tributary -> build/bin; <prefix>/lib/python3.X/dist-packages/tributary -> <prefix>/bin
    for rel in ("../../bin/trib", "../../../../bin/trib"):
        candidate = os.path.normpath(os.path.join(here, rel))
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("trib")
    if found:
        return found
    raise FileNotFoundError("the trib program was not found: set TRIB_BINARY, or build it (make python builds it)")


def read_metrics(run_dir):
    """The rows of a run directory's metrics.jsonl (evaluations, stream reports), in order."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def load_job(path, overrides=None):
    """Reads and checks a job file: {"name", "cluster", "workers", "stream", "resolved_yaml", ...}.
    A bad key or value raises tributary.InvalidArgument naming it."""
    return _tributary.load_job(os.fspath(path), _overrides(overrides))


def train(job, overrides=None, output=None, resume=None, verbose=True, callbacks=()):
    """Runs a job file as `trib train` does and returns its metrics:
    {"run_dir", "summary", "metrics": [metrics.jsonl rows]}.

    overrides: {"training.epochs": 3} (or ["training.epochs=3"]); an unknown key raises
    tributary.InvalidArgument. output: the run directory (default runs/<name>-<time>).
    resume: a run directory to continue from its newest checkpoint. callbacks: callables
    receiving {"step", "loss"} after every step of a single-process job (a local cluster's
    steps happen in its workers: they are not called); one returning False stops the run.
    verbose: print the progress lines. Ctrl-C stops the run at a step boundary with a
    checkpoint (a cluster or stream job: as SIGTERM stops `trib train`) and raises
    KeyboardInterrupt."""
    job = os.fspath(job)
    sets = _overrides(overrides)
    info = _tributary.load_job(job, sets)
    if resume is not None and output is not None and os.fspath(resume) != os.fspath(output):
        raise ValueError(f"resume {resume} and output {output} disagree: a resumed run continues in its own directory")
    run_dir = os.fspath(resume if resume is not None else output or _tributary.default_run_dir(info["name"]))
    callbacks = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    if not info["cluster"] and not info["stream"]:
        def on_step(metrics):
            return not any(c(metrics) is False for c in callbacks)
        summary = _tributary.train_job(job, sets, run_dir, resume is not None, verbose,
                                       on_step if callbacks else None)
    else:
        summary = _run_trib(job, sets, run_dir, resume is not None, verbose)
    return {"run_dir": run_dir, "summary": summary, "metrics": read_metrics(run_dir)}


def _run_trib(job, sets, run_dir, resume, verbose):
    cmd = [trib_binary(), "train", job]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["--resume", run_dir] if resume else ["--output", run_dir]
    out = None if verbose else subprocess.DEVNULL
    # Its own session: Ctrl-C at a terminal reaches this process only, which then stops the
    # job as a preemption (SIGTERM: every worker stops at a step boundary, the chief writes a
    # checkpoint, `resume=` continues it), as fit and single-process jobs stop.
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE if not verbose else None, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate()
    except BaseException:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        raise
    if proc.returncode != 0:
        detail = (err or "").strip().splitlines()
        raise _tributary.Error(f"trib train {job} failed (exit {proc.returncode})" +
                               (f": {detail[-1]}" if detail else ""))
    rows = read_metrics(run_dir)
    tests = [r for r in rows if r.get("split") == "test"]
    last = tests[-1] if tests else (rows[-1] if rows else {})
    return {"accuracy": last.get("accuracy"), "loss": last.get("loss"), "steps": last.get("step")}


__all__ = ["train", "load_job", "read_metrics", "trib_binary"]
