"""The cache volume's rules over what `stat` says (files/volume.py), table-driven: each shape clusters make, as
the image's user and as an arbitrary UID, judged at the volume's root (may others swap the launcher's folders
there?) and at a folder the launcher made in it (does it read back as the launcher's?). Pure: no disk."""

from __future__ import annotations

import stat

import pytest

from nim_specdec.files.volume import Identity, StatView, open_folder_fix, open_folder_reason, owned_reason

DIR = stat.S_IFDIR
IMAGE_USER = Identity(1000, frozenset({0, 1000}))  # USER 1000:0, the manifests' fsGroup 1000
ARBITRARY = Identity(1000680000, frozenset({0, 1000680000}))  # an OpenShift project's UID and fsGroup


def made_by(me: Identity, mode: int = 0o700, gid: int = 0) -> StatView:
    return StatView(me.uid, gid, DIR | mode)


# shape, the volume root's view, the view of the folder the launcher made (None: as made), refused at the root,
# the folder read back as foreign.
SHAPES = [
    ("a: root 0777, no sticky bit", lambda me: StatView(0, 0, DIR | 0o777), None, "writable by every user", None),
    ("b: root 1777, sticky bit", lambda me: StatView(0, 0, DIR | 0o1777), None, None, None),
    (
        "c: fsGroup applied (root:fsGroup 2775)",
        lambda me: StatView(0, max(me.groups), DIR | 0o2775),
        lambda me: made_by(me, 0o2770, max(me.groups)),  # a kubelet's recursive fsGroup change: g+rwX, setgid
        None,
        None,
    ),
    (
        "d: SMB, everything root's and 0777, chmod ignored",
        lambda me: StatView(0, 0, DIR | 0o777),
        lambda me: StatView(0, 0, DIR | 0o777),
        "writable by every user",
        "is owned by uid 0",
    ),
    (
        "SMB with mount options uid=<UID>,gid=<fsGroup>,dir_mode=0770",
        lambda me: StatView(me.uid, max(me.groups), DIR | 0o770),
        lambda me: StatView(me.uid, max(me.groups), DIR | 0o770),
        None,
        None,
    ),
    (
        "EFS access point with the pod's UID, mode 0700",
        lambda me: StatView(me.uid, me.uid, DIR | 0o700),
        None,
        None,
        None,
    ),
    (
        "EFS access point with another UID than the pod's",
        lambda me: StatView(50000, 50000, DIR | 0o755),
        lambda me: StatView(50000, 50000, DIR | 0o700),
        None,
        "is owned by uid 50000",
    ),
    (
        "group-writable by a group the pod is not in",
        lambda me: StatView(0, 4242, DIR | 0o775),
        None,
        "writable by group 4242, which this launcher is not in",
        None,
    ),
]


@pytest.mark.parametrize("me", [IMAGE_USER, ARBITRARY], ids=["image-user", "arbitrary-uid"])
@pytest.mark.parametrize("name,root,made,refused,foreign", SHAPES, ids=[s[0] for s in SHAPES])
def test_each_volume_shape(name, root, made, refused, foreign, me):
    at_root = open_folder_reason("/vol", root(me), me)
    if refused is None:
        assert at_root is None
    else:
        assert at_root is not None and refused in at_root and at_root.startswith("/vol "), at_root
    read_back = owned_reason((made or made_by)(me), me)
    if foreign is None:
        assert read_back is None
    else:
        assert read_back is not None and foreign in read_back, read_back


def test_the_fix_names_every_way_a_cluster_has_and_the_opt_in_last():
    fix = open_folder_fix("/opt/nim/.cache", "NIM_CACHE_TRUST_SHARED")
    assert "\n" not in fix
    for way in (
        "chmod +t /opt/nim/.cache",
        "init container",
        "uid=",
        "gid=",
        "dir_mode=",
        "file_mode=",
        "access point",
    ):
        assert way in fix, way
    assert fix.endswith("NIM_CACHE_TRUST_SHARED=1") and "docs/deploy.md" in fix
