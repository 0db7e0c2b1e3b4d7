#!/usr/bin/env python3
"""The rooms' include rule: code outside actors/ROOM/ (and outside its tests,
tests/actors/ROOM/) includes only the headers ROOM names public in its
CMakeLists.txt. Every file under actors/ lives in a room, but for the hall
(node_context.hpp and the CMakeLists.txt).
Usage: check_rooms.py SOURCE_DIR PUBLIC_HEADERS_FILE (one actors/ROOM/x.hpp a line)
Prints every breach as FILE:LINE and exits 1 when there is one."""
import os
import re
import sys

HALL = {"actors/node_context.hpp", "actors/CMakeLists.txt"}
SCANNED = ["actors", "apps", "bench", "examples", "process", "protocol", "rdma",
           "runtime", "staging", "tests"]
INCLUDE = re.compile(r'^\s*#\s*include\s+["<](?:ferry/)?actors/([a-z_]+)/([^">]+)[">]')


def main(root, public_file):
    with open(public_file) as f:
        public = {line.strip() for line in f if line.strip()}
    rooms = {p.split("/")[1] for p in public}
    breaches = []
    for p in sorted(public):
        if not os.path.isfile(os.path.join(root, p)):
            breaches.append(f"{p}: named public but missing")
    for name in sorted(os.listdir(os.path.join(root, "actors"))):
        rel = f"actors/{name}"
        if rel not in HALL and not (name in rooms and os.path.isdir(os.path.join(root, rel))):
            breaches.append(f"{rel}: not in a room (actors/ROOM/) nor the hall")
    checked = 0
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".hpp", ".cpp", ".cu", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        room, header = m.groups()
                        inside = (rel.startswith(f"actors/{room}/")
                                  or rel.startswith(f"tests/actors/{room}/"))
                        target = f"actors/{room}/{header}"
                        if room not in rooms:
                            breaches.append(f"{rel}:{lineno}: {target}: no room {room}")
                        elif not inside and target not in public:
                            breaches.append(f"{rel}:{lineno}: {target} is internal to the"
                                            f" {room} room (not in its PUBLIC list)")
    for b in breaches:
        print(b)
    print(f"check_rooms: {len(rooms)} rooms, {len(public)} public headers, "
          f"{checked} includes checked, {len(breaches)} breaches")
    return 1 if breaches else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
