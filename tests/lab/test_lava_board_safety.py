"""On a LAVA board the runner's safety check reads the inventory the job
definition ships (iowatch.lava.definition.board_inventory): a disk of the board
that the board class does not declare is refused, a declared one allowed."""
from __future__ import annotations

import base64

from iowatch import inventory, safety
from iowatch.lava import definition

LAB = """\
all:
  children:
    lava_lab:
      vars:
        iowatch_lava: {{server: https://lava.example.org/, token_env: T, rootfs: https://a.example.org/r.tar.xz,
                        kernels: https://a.example.org/k/}}
      hosts:
        board:
          iowatch_kind: lava
          iowatch_lava_board: {{device_type: rk3399-gru-kevin, arch: arm64}}
          iowatch_devices:
            - {{name: sd0, class: sdcard, path: {path}, filesystems: [f2fs]}}
"""


def test_an_undeclared_disk_of_the_board_is_never_written_to(lab, data_dir):
    declared, other = lab.loop("board-sd.img"), lab.loop("board-emmc.img")
    host = inventory.loads(LAB.format(path=declared), "lab.yml").host("board")
    job = definition.make(host, definition.Measurement("jobs/smoke.yml", "c" * 40, "good", "http://s/"), "t")
    (line,) = [s for s in job["actions"][-1]["test"]["definitions"][0]["repository"]["run"]["steps"]
               if "base64 -d" in s]
    board = inventory.loads(base64.b64decode(line.split()[1]).decode(), "board.yml").host("board")
    # The board class is a lava host on the board too: the one check reads its devices, not its kind.
    assert board.kind == "lava"
    assert safety.check(board, declared).allowed
    answer = safety.check(board, other)
    assert not answer.allowed and "not an image of a device declared for host board" in answer.reason
