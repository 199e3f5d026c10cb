"""Whether the OS reports every change to a folder to a watcher on this machine.

inotify sees every write made through this machine's kernel. On a local file system that is
every write there is; on a network share (NFS, SMB, sshfs and other FUSE mounts) another
machine's writes raise no event here, and only a scan finds them. The daemon lets a round
skip the full scan only where the watcher sees everything (`Watcher.sees_every_change`).

Linux is judged from /proc/self/mountinfo: the file system type of the mount holding the
folder must be one of `LOCAL_TYPES`, a list of local disk and memory file systems (anything
else, FUSE included, counts as "might change behind our back"). Other platforms count as
not known, so they keep scanning everything.
"""

from __future__ import annotations

import os
import re
import sys

MOUNTINFO = "/proc/self/mountinfo"
_OCTAL = re.compile(r"\\([0-7]{3})")

LOCAL_TYPES = frozenset(
    {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "bcachefs", "jfs", "reiserfs",
        "nilfs2", "tmpfs", "ramfs", "overlay", "vfat", "exfat", "ntfs3", "hfsplus",
    }
)  # fmt: skip


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    return _OCTAL.sub(lambda m: chr(int(m[1], 8)), field)


def fs_type(path: str, mountinfo: str) -> str | None:
    """The file system type of the mount holding the absolute, resolved `path`, from the
    text of a mountinfo file; None when no line covers it (or the text is unreadable)."""
    best, best_len = None, -1
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right:
            continue
        mount_point = _unescape(fields[4])
        inside = (
            path == mount_point
            or mount_point == "/"
            or path.startswith(mount_point.rstrip("/") + "/")
        )
        if inside and len(mount_point) >= best_len:  # the last of equal ones is on top
            best, best_len = right.split()[0], len(mount_point)
    return best


def reports_every_change(folder: str | os.PathLike[str]) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    return fs_type(os.path.realpath(folder), text) in LOCAL_TYPES
