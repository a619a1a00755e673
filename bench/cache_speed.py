"""How much does the result cache save? Lints one tree in fresh `torchlint` processes, as
pre-commit and CI do, and prints each figure with its ratio to the cold run, measured in the
same run:

    python bench/cache_speed.py                    # generated training code, ~300k lines
    python bench/cache_speed.py /work/corpora/audit  # any folder
    python bench/cache_speed.py --jobs 2           # the same with two processes

Figures (wall seconds of a fresh `torchlint check -q --exit-zero DIR`):
  * --no-cache: the linter alone;
  * cold: an empty cache (everything linted, every entry written);
  * warm: nothing changed since (target: >= 10x faster than cold);
  * one file edited: that file linted again, the rest from the cache;
  * settings changed (--ignore): every entry misses, as it must.
The findings of every run are compared with the --no-cache run: a cache that changes what is
reported fails the benchmark.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lint_speed import ENTRY, generate, subprocess_env

TARGET_RATIO = 10.0


def count_lines(folder: Path) -> tuple[int, int]:
    files = [p for pattern in ("*.py", "*.ipynb") for p in folder.rglob(pattern)]
    return len(files), sum(p.read_bytes().count(b"\n") for p in files)


def timed(args, env) -> tuple[float, str]:
    import subprocess

    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", ENTRY, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"torchlint failed ({done.returncode}): {done.stderr}")
    return wall, done.stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", help="lint this folder instead of generated code")
    parser.add_argument("--files", type=int, default=1100, help="generated files (default: 1100, ~300k lines)")
    parser.add_argument("--jobs", type=int, default=1, help="torchlint --jobs (default: 1)")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs (the fastest is shown)")
    args = parser.parse_args(argv)

    env = subprocess_env()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tree = tmp / "tree"
        if args.folder:
            shutil.copytree(args.folder, tree, symlinks=True)
        else:
            generate(tree, args.files)
        files, lines = count_lines(tree)
        cache = tmp / "cache"
        common = ["check", "-q", "--exit-zero", "--jobs", str(args.jobs), str(tree)]
        with_cache = [*common, "--cache-dir", str(cache)]

        timed([*common, "--no-cache"], env)  # warm the OS file cache and write .pyc files
        baseline, expected = timed([*common, "--no-cache"], env)
        cold, out_cold = timed(with_cache, env)
        warm_runs = [timed(with_cache, env) for _ in range(args.repeat)]
        warm = min(wall for wall, _ in warm_runs)

        edited = next(tree.rglob("*.py"))
        edited.write_text(edited.read_text() + "\n# edited\n")
        one_edit, out_edit = timed(with_cache, env)
        edited.write_text(edited.read_text()[: -len("\n# edited\n")])
        changed_settings, _ = timed([*with_cache, "--ignore", "TL019"], env)

        if any(out != expected for out in [out_cold, out_edit, *(out for _, out in warm_runs)]):
            raise SystemExit("the cache changed the findings")

    print(f"tree: {files} files, {lines:,} lines; torchlint --jobs {args.jobs}; fresh processes, wall seconds")
    print(f"{'run':<34} {'wall':>8} {'vs cold':>9}")
    for name, wall in [
        ("--no-cache", baseline),
        ("cold (empty cache)", cold),
        (f"warm (unchanged, best of {args.repeat})", warm),
        ("one file edited", one_edit),
        ("settings changed (--ignore)", changed_settings),
    ]:
        print(f"{name:<34} {wall:>7.2f}s {cold / wall:>8.1f}x")
    ratio = cold / warm
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(f"\nwarm re-run is {ratio:.1f}x faster than cold ({verdict} the {TARGET_RATIO:g}x target)")
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
