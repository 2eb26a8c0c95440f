"""Where the reader is in a LaTeX book: division titles and keys, and the numbers LaTeX prints.

Numbers follow LaTeX's counters: a division resets the ones below it; a `\\newtheorem`
environment numbered `[within]` a division (or sharing the counter of one that is) prints
`<division number>.<n>`; equations count within chapters when the book has chapters.
Levels: 0 part, 1 chapter, 2 section, 3 subsection.
"""

from __future__ import annotations

from formalbench.pipelines.construct.latex_conventions import EnvRule, LatexConventions

LEVELS = {"part": 0, "chapter": 1, "section": 2, "subsection": 3}


class Numbering:
    def __init__(self, conv: LatexConventions) -> None:
        self.conv = conv
        self.titles: dict[int, str] = {}
        self.keys: dict[int, str] = {}
        self._counts: dict[int, int] = {}
        self._env_counts: dict[str, int] = {}
        self._has_chapters = False

    def open_division(self, level: int, title: str, key: str) -> None:
        if level == 1:
            self._has_chapters = True
        self._counts[level] = self._counts.get(level, 0) + 1
        for deeper in [k for k in self._counts if k > level]:
            self._counts[deeper] = 0
        self.close_below(level)
        for counter in list(self._env_counts):
            within = self._within_level(counter)
            if (counter == "equation" and level == 1) or 0 <= level <= within:
                self._env_counts[counter] = 0
        self.titles[level] = title
        self.keys[level] = key

    def close_below(self, level: int) -> None:
        """Forget the divisions below `level` (a file that belongs to the division itself)."""
        for deeper in [k for k in self.titles if k > level]:
            del self.titles[deeper]
            self.keys.pop(deeper, None)

    @property
    def section(self) -> str:
        """The division path below the part: `Chapter / Section / Subsection`."""
        return " / ".join(t for lvl, t in sorted(self.titles.items()) if lvl >= 1 and t)

    @property
    def section_key(self) -> str:
        """The key of the current section (fcla's acronym, as in `exercise.NM.C10`)."""
        return self.keys.get(2, "")

    @property
    def deepest(self) -> int:
        return max(self.titles, default=0)

    def number(self, level: int) -> str:
        first = 1 if self._has_chapters else 2
        return ".".join(str(self._counts.get(lv, 0)) for lv in range(first, level + 1))

    def count(self, env: str, rule: EnvRule) -> str:
        """Step the environment's counter; the number LaTeX would print."""
        counter = rule.counter or env
        owner = self.conv.envs.get(counter, rule)  # a shared counter numbers as its owner
        self._env_counts[counter] = self._env_counts.get(counter, 0) + 1
        level = LEVELS.get(owner.within or "", 0)
        n = str(self._env_counts[counter])
        return f"{self.number(level)}.{n}" if owner.within and level else n

    def count_equations(self, rows: int) -> list[str]:
        """Step the equation counter by `rows` numbered lines; their numbers."""
        first = self._env_counts.get("equation", 0) + 1
        self._env_counts["equation"] = first - 1 + max(rows, 0)
        prefix = f"{self.number(1)}." if self._has_chapters else ""
        return [f"{prefix}{n}" for n in range(first, first + max(rows, 0))]

    def _within_level(self, counter: str) -> int:
        if counter in self.conv.exercise_envs and counter not in self.conv.envs:
            return LEVELS["section"]  # an exercise environment no \newtheorem declares
        rule = self.conv.envs.get(counter)
        return LEVELS.get(rule.within or "", -1) if rule and rule.within else -1
