"""Active tasks spread over a streams group's members, sticky as Kafka's StickyTaskAssignor
(group.streams's "sticky"): a member keeps the tasks it has as long as it holds no more than
its fair share; the rest go, in task order, to the members with the fewest tasks.
Standby and warm-up tasks are not assigned (num.standby.replicas 0, Kafka's default).
"""

from __future__ import annotations

Task = tuple[str, int]


def assign(
    tasks: dict[str, int], current: dict[str, set[Task]], members: list[str]
) -> dict[str, set[Task]]:
    """Each member's active tasks; ``current`` is each member's previous target."""
    if not members:
        return {}
    every = sorted((sub, p) for sub, count in tasks.items() for p in range(count))
    base, extra = divmod(len(every), len(members))
    out: dict[str, set[Task]] = {m: set() for m in members}
    taken: set[Task] = set()
    # Members that had the most keep theirs first, so the fuller quotas go to them.
    with_extra = 0
    for member in sorted(members, key=lambda m: (-len(current.get(m, ())), m)):
        quota = base + (1 if with_extra < extra else 0)
        kept = sorted(t for t in current.get(member, ()) if t in every and t not in taken)
        kept = kept[:quota]
        if len(kept) > base:
            with_extra += 1
        out[member].update(kept)
        taken.update(kept)
    for task in every:
        if task in taken:
            continue
        member = min(members, key=lambda m: (len(out[m]), m))
        out[member].add(task)
    return out
