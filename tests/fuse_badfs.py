"""A read-only FUSE file system with bad sectors, for the failing-disk tests (a REAL source of EIO and SIGBUS).

Run as a separate process (a FUSE server inside the test process could deadlock: a page fault on a mapped file
waits for the server, and the server would wait for the GIL the faulting thread holds):

    python tests/fuse_badfs.py SOURCE_DIR MOUNTPOINT CONFIG.json

It serves SOURCE_DIR as it is (files and directories), except that any read overlapping one of the configured byte
ranges of a file fails with EIO, the way ``cat`` on a disk with a bad sector fails with "Input/output error".
CONFIG.json: ``{"bad": {"relative/path": [[start, end], ...]}, "bad_dirs": ["relative/dir"]}`` (listing a bad dir
fails with EACCES). Reads go through the page cache (no direct_io),
so the files can be mapped and a read through the map raises SIGBUS on a bad page.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys

import mfusepy as fuse


class BadSectorFS(fuse.Operations):
    use_ns = True

    def __init__(self, root: str, bad: dict[str, list[list[int]]], bad_dirs: list[str]) -> None:
        self.root = root
        self.bad_dirs = {"/" + d.strip("/") for d in bad_dirs}
        self.bad = {("/" + k.lstrip("/")): [tuple(r) for r in v] for k, v in bad.items()}

    def _full(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def getattr(self, path: str, fh: int | None = None) -> dict:
        try:
            st = os.lstat(self._full(path))
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno or errno.EIO) from None
        keys = ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_atime_ns", "st_mtime_ns", "st_ctime_ns")
        out = {k.replace("_ns", ""): getattr(st, k) for k in keys}
        out["st_mode"] = st.st_mode & ~0o222 if stat.S_ISREG(st.st_mode) else st.st_mode
        return out

    def readdir(self, path: str, fh: int) -> list[str]:
        if path in self.bad_dirs:
            raise fuse.FuseOSError(errno.EACCES)  # what a root-owned 0700 directory gives a non-root reader
        try:
            return [".", "..", *sorted(os.listdir(self._full(path)))]
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno or errno.EIO) from None

    def open(self, path: str, flags: int) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR):
            raise fuse.FuseOSError(errno.EROFS)
        try:
            return os.open(self._full(path), os.O_RDONLY)
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno or errno.EIO) from None

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        for a, b in self.bad.get(path, ()):
            if offset < b and offset + size > a:
                raise fuse.FuseOSError(errno.EIO)
        return os.pread(fh, size, offset)

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0


def main() -> None:
    root, mnt, config = sys.argv[1:4]
    with open(config) as f:
        config = json.load(f)
    fuse.FUSE(BadSectorFS(root, config.get("bad", {}), config.get("bad_dirs", [])), mnt, foreground=True, ro=True, nothreads=False)


if __name__ == "__main__":
    main()
