"""Which paths git ignores, so that directory discovery skips them as ruff does.

git itself answers (``git ls-files --others --ignored --exclude-standard --directory``), once
per repository: every ``.gitignore`` at any depth, ``.git/info/exclude`` and the user's
``core.excludesFile`` count, with git's own pattern rules, and a file git tracks is never
ignored (what is committed gets linted, even if a pattern matches it). Outside a git
repository nothing is ignored. Without a usable git the answer is "nothing" plus one
warning, never a failure.
"""

from __future__ import annotations

import os
import subprocess


class GitIgnore:
    def __init__(self):
        self._roots: dict[str, str | None] = {}  # directory -> its repository's top folder
        self._ignored: dict[str, frozenset[str]] = {}  # top folder -> ignored paths ('dir/' for folders)
        # One line per repository git could not answer for; the command prints them.
        self.problems: list[str] = []

    def is_ignored(self, path: str, is_dir: bool) -> bool:
        real = os.path.realpath(path)
        root = self._root_of(os.path.dirname(real))
        if root is None:
            return False
        ignored = self._ignored_in(root)
        if not ignored:
            return False
        rel = os.path.relpath(real, root).replace(os.sep, "/")
        return (rel + "/" if is_dir else rel) in ignored

    def _root_of(self, directory: str) -> str | None:
        if directory not in self._roots:
            # `.git` is a folder in a clone, a file in a worktree or a submodule.
            if os.path.exists(os.path.join(directory, ".git")):
                self._roots[directory] = directory
            else:
                parent = os.path.dirname(directory)
                self._roots[directory] = None if parent == directory else self._root_of(parent)
        return self._roots[directory]

    def _ignored_in(self, root: str) -> frozenset[str]:
        if root not in self._ignored:
            self._ignored[root] = self._ask_git(root)
        return self._ignored[root]

    def _ask_git(self, root: str) -> frozenset[str]:
        command = ["git", "-C", root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]
        try:
            done = subprocess.run(command, capture_output=True, timeout=60, check=False)
        except FileNotFoundError:
            self._problem(root, "git is not installed")
            return frozenset()
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._problem(root, str(exc))
            return frozenset()
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            self._problem(root, reason[0] if reason else f"git exited with status {done.returncode}")
            return frozenset()
        return frozenset(os.fsdecode(entry) for entry in done.stdout.split(b"\0") if entry)

    def _problem(self, root: str, reason: str) -> None:
        self.problems.append(
            f"cannot ask git which files it ignores in {root} ({reason}); its .gitignore is not respected there"
        )
