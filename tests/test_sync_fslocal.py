"""Which folders a watcher sees every change of: the mount table, read as Linux writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.sync.local.fslocal import LOCAL_TYPES, MOUNTINFO, fs_type, reports_every_change

# the shape of /proc/self/mountinfo (proc(5)): optional fields, then " - ", type, source
MOUNTINFO_TEXT = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
40 27 0:40 / /home rw,relatime shared:7 - btrfs /dev/nvme0n1p3 rw,ssd
41 40 0:41 / /home/ana/share rw,relatime - nfs4 server:/export rw,vers=4.2
42 40 0:42 / /home/ana/remote rw,nosuid - fuse.sshfs ana@box:/ rw,user_id=1000
43 27 0:43 / /media/ana/My\\040Disk rw,relatime - vfat /dev/sdb1 rw
44 41 0:44 / /home/ana/share/local rw - tmpfs tmpfs rw
45 27 0:45 / /mnt/office rw - cifs //nas/office rw
"""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/", "ext4"),
        ("/srv/agent-vault", "ext4"),
        ("/home/ana/vault", "btrfs"),
        ("/home/ana/share/vault", "nfs4"),
        ("/home/ana/shared", "btrfs"),  # a sibling whose name starts like a mount point
        ("/home/ana/remote/vault", "fuse.sshfs"),
        ("/media/ana/My Disk/vault", "vfat"),  # \040 is a space
        ("/home/ana/share/local/vault", "tmpfs"),  # the deepest mount wins
        ("/mnt/office/notes", "cifs"),
    ],
)
def test_the_mount_holding_a_path_decides(path: str, expected: str) -> None:
    assert fs_type(path, MOUNTINFO_TEXT) == expected


def test_network_and_fuse_mounts_are_not_local() -> None:
    for kind in ("nfs4", "fuse.sshfs", "cifs", "9p", "fuse"):
        assert kind not in LOCAL_TYPES
    assert {"ext4", "btrfs", "xfs", "tmpfs", "overlay"} <= LOCAL_TYPES


def test_unreadable_lines_are_skipped() -> None:
    assert fs_type("/x", "garbage\n\n1 2 3\n") is None


def test_this_machine(tmp_path: Path) -> None:
    """The real table: the test's temporary folder is on some mount with a type."""
    text = Path(MOUNTINFO).read_text()
    kind = fs_type(str(tmp_path.resolve()), text)
    assert kind
    assert reports_every_change(tmp_path) == (kind in LOCAL_TYPES)
