"""Runs a job file from Python, as `trib train` does, and prints its evaluations.

    PYTHONPATH=build/python python3 examples/python/train_job.py examples/fashion_mlp.yaml
    PYTHONPATH=build/python python3 examples/python/train_job.py examples/fashion_ps.yaml   # a local cluster
"""

import sys

import tributary as tb


def main():
    job = sys.argv[1] if len(sys.argv) > 1 else "examples/fashion_mlp.yaml"
    result = tb.train(job, overrides={"training.epochs": 1, "data.train_subset": 10000})
    for row in result["metrics"]:
        if row.get("split") == "test":
            print(f"step {row['step']}: test accuracy {row['accuracy']:.4f}")
    print("run directory:", result["run_dir"])


if __name__ == "__main__":
    main()
