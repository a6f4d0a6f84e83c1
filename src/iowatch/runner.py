"""The runner: expand a matrix into cells on one host and run them into a bundle.

A cell is study × device × filesystem. Each repetition gets a
fresh filesystem, the study's I/O scheduler, dropped caches, and
/proc/diskstats and CPU time sampled around the workload. Cells that cannot
run here are skipped with the reason; a failing tool fails its cell only.
Per device, the state it reports (iowatch.devstate) is read before its first
cell and again after the run, and a study that asks for it preconditions an
SSD before its cells there (iowatch.precondition); both are kept beside the
device's queue settings in environment.devices.<name>.
The bundle's manifest is rewritten after every cell, so an interrupted run
leaves a bundle marked incomplete that a rerun with the same --out resumes.
"""
from __future__ import annotations

import os
import platform
import shutil
import signal
import statistics
import tempfile
import time
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from iowatch import devstate, diskstats, environment, filesystems, loopdev, mdraid, paths, safety
from iowatch import ratio as fs_ratio
from iowatch.bundle import MANIFEST, BundleWriter, loads
from iowatch.inventory import Device, Host
from iowatch.progress import Progress, current
from iowatch.samples import ParseError
from iowatch.studies import Matrix, Study
from iowatch.vlab import guest_path
from iowatch.workloads import Context, Result, run_fio, run_fs_mark, run_script


class Interrupted(Exception):
    """SIGTERM or Ctrl-C: stop after cleaning up, leave the bundle incomplete."""


@dataclass
class Cell:
    id: str
    study: Study
    device: Device
    filesystem: str
    skip: str | None = None


def plan(matrix: Matrix, host: Host) -> list[Cell]:
    """Every study × device × filesystem the matrix names that the host has,
    each with the reason it must be skipped here, if any."""
    cells = []
    for study in matrix.studies:
        wanted = matrix.filesystems.get(study.slug, study.filesystems)
        if study.canary:
            cells += _canary_cells(study, wanted, host)
            continue
        classes = matrix.device_classes.get(study.slug, study.device_classes)
        for device in host.devices:
            if device.device_class not in classes:
                continue
            for fs in wanted:
                if fs not in device.filesystems:
                    continue
                cell = Cell(f"{study.slug}/{device.name}/{fs}", study, device, fs)
                cell.skip = filesystems.supported(fs)
                if not cell.skip and device.members and not device.path:
                    if not mdraid.available():
                        cell.skip = ("this kernel has no md driver (no /proc/mdstat) to assemble "
                                     "the RAID0 members; run it in the virtual lab's guest")
                cells.append(cell)
    return cells


def boot_cells(matrix: Matrix, host: Host, only: set[str] | None = None) -> list[Cell]:
    """The cells one boot runs: the matrix's (or those of `only`, the cell ids a
    path asked for), and the canary whichever cells were asked for: it is what
    tells a drift of the platform between boots (iowatch.judging). load_matrix
    puts a canary in every matrix (studies.with_canaries)."""
    return [c for c in plan(matrix, host) if only is None or c.id in only or c.study.canary]


def _canary_cells(study: Study, filesystems_: list[str], host: Host) -> list[Cell]:
    """A canary's cells: one a host, whatever devices it has. Its workload runs on
    a tmpfs and writes to no device, but a cell is addressed by a device (its id,
    the bundle's cell, iowatch.cells.CellKey), so it takes the host's first
    device of the study's classes as its address; the device is safety-checked
    like any cell's and left alone."""
    device = next((d for d in host.devices if d.device_class in study.device_classes), None)
    if device is None:
        return []
    cells = []
    for fs in filesystems_:
        cell = Cell(f"{study.slug}/{device.name}/{fs}", study, device, fs)
        cell.skip = filesystems.supported(fs)
        cells.append(cell)
    return cells


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    def handler(signum, frame):
        raise Interrupted(f"stopped by signal {signal.Signals(signum).name}")
    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _kernel_entry(env: dict, commit: str | None, series: dict | None) -> dict:
    entry = {"release": platform.release(), "git_commit": commit,
             "config_hash": env.get("kernel_config_hash"), "config": env.get("kernel_config") or None,
             "cmdline": env.get("cmdline")}
    if series:
        record = series.get("record") or {}  # Series.record(): Message-IDs, list, patch hashes
        entry["series"] = {**record, "name": series["name"],
                           "base": series.get("base") or record.get("base")}
        mail = next((p for p in record.get("patches", []) if p.get("index") == series["index"]), {})
        entry["patch"] = {"index": series["index"], "subject": series.get("subject"),
                          "commit": commit, **{k: mail[k] for k in ("message_id", "author") if k in mail}}
    return {k: v for k, v in entry.items() if v is not None}


def _existing(out: Path) -> dict | None:
    path = out / MANIFEST
    if not path.is_file():
        return None
    return loads(path.read_bytes(), str(path))


class Runner:
    def __init__(self, matrix: Matrix, host: Host, out: Path, *, profile: str | None = None,
                 reps: int | None = None, kernel_commit: str | None = None,
                 label: str | None = None, command: str | None = None,
                 series: dict | None = None, only: set[str] | None = None,
                 progress: Progress | None = None, data_dir: Path | None = None,
                 harness=None):
        self.matrix, self.host, self.out = matrix, host, Path(out)
        self.harness = harness  # None: fio/fs_mark here; else such as iowatch.lkp.harness.LkpHarness
        self.only = only  # cell ids to run (the adaptive loop's extra rounds); None: all
        self.profile = profile or matrix.profile
        self.reps = reps or matrix.reps
        self.progress = progress or current()  # the command's display (iowatch.progress)
        self.data_dir = data_dir or paths.data_dir()
        self.tool_s = 0.0
        self.workload_writeback_s = 0.0  # see _run_rep: measured time, not overhead
        self.phase_s: dict[str, float] = {}
        t_setup = time.monotonic()
        env = environment.host_environment()
        previous = _existing(self.out)
        if previous and previous.get("status") != "incomplete":
            raise FileExistsError(f"{self.out} already holds a finished bundle "
                                  f"(run {previous['run_id']}, {previous['status']}); "
                                  "choose another --out")
        self.done: dict[str, dict] = {}
        # Per device name: what the run learns of the device beside each repetition's
        # notes (state, state_after, precondition), and the path the state was read at.
        self.device_notes: dict[str, dict] = {}
        self.state_paths: dict[str, str] = {}
        # Preconditioning records of the run's part before a resume, per
        # (device, study): the device is preconditioned again after the pause
        # (an idle SSD recovers), and the new record keeps the old one.
        self.before_resume: dict[tuple[str, str], dict] = {}
        run_id = str(uuid.uuid4())
        if previous:
            run_id = previous["run_id"]  # resume: same run, the cells it finished are kept
            self.done = {c["id"]: c for c in previous["cells"]
                         if c["status"] == "skipped" or len(c["repetitions"]) >= self.reps}
            for name, notes in (previous.get("environment", {}).get("devices") or {}).items():
                # The device's state at the run's start stays the run's.
                self.device_notes[name] = {"state": notes["state"]} if "state" in notes else {}
                for slug, record in (notes.get("precondition") or {}).items():
                    self.before_resume[name, slug] = record
        self.writer = BundleWriter(
            self.out, run_id=run_id, kernel=_kernel_entry(env, kernel_commit, series),
            host=host.bundle_entry(),
            devices=[d.bundle_entry() for d in host.devices],
            tools=environment.tools(), environment={"host": env, "devices": {}},
            label=label, matrix=matrix.name, command=command,
            started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        for cell in self.done.values():
            self.writer.adopt(cell)
        self.phase_s["setup"] = time.monotonic() - t_setup

    @contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        """Time spent outside the tools, by phase: what bench/runner reports."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.phase_s[name] = self.phase_s.get(name, 0.0) + time.monotonic() - t0

    @contextmanager
    def _loops(self, devices: list) -> Iterator[dict[str, str]]:
        """The run's loop devices, attached and detached around it; both timed as the phase loops."""
        t0 = time.monotonic()
        with loopdev.attachments(devices, self.data_dir) as loops:
            self.phase_s["loops"] = self.phase_s.get("loops", 0.0) + time.monotonic() - t0
            try:
                yield loops
            finally:
                t0 = time.monotonic()
        self.phase_s["loops"] += time.monotonic() - t0

    # -- one repetition ---------------------------------------------------

    def _run_rep(self, cell: Cell, dev_path: str, index: int) -> tuple[Result, dict]:
        with self._phase("prepare"):  # safety check, device queue, scratch directory
            notes, workload, work = self._prepare_rep(cell, dev_path)
        mountpoint = None
        # Where this repetition mounts its filesystem. A SIGTERM can land after
        # `mount` has mounted it and before make_and_mount returns: the finally
        # below unmounts what is mounted there, not only what was handed back,
        # else the loop device stays busy and is left attached.
        target = filesystems.mount_root(self.data_dir) / cell.device.name
        try:
            if self.harness is not None:  # the harness makes the filesystem and runs the tool
                filesystems.drop_caches()
                res, more = self.harness.run_rep(workload, cell.filesystem, dev_path, cell.device.name,
                                                 work, cell.id)
                return res, {**notes, **more}
            if cell.filesystem != "raw":
                with self._phase("mkfs_mount"):
                    # mkfs discards the whole device (the tools' default, kept on purpose):
                    # on a loop device that punches the image back to holes, so every
                    # repetition writes to the same fresh device, not over the last one's blocks.
                    # A device whose discard takes minutes says `discard: false` (the bundle's
                    # mkfs_options then show the flag).
                    mnt = filesystems.make_and_mount(dev_path, cell.filesystem, target,
                                                     discard=cell.device.discard)
                mountpoint = mnt.mountpoint
                notes.update(mkfs_options=mnt.mkfs_options, mount_options=mnt.mount_options)
            elif "fio" in workload:
                # Never write to a raw device: the raw cells only read it.
                workload["fio"]["readonly"] = True
            return self._measured_window(workload, dev_path, mountpoint, work, notes), notes
        finally:
            # A normal unmount, outside the window as it always was: it writes in
            # place the metadata that is only in the log so far (XFS pushes its AIL,
            # up to ~100 MiB after fs_mark) and evicts the inodes. Not a shutdown
            # (an error path of the kernel under test, and no faster here), not
            # left running in the background: the next repetition's safety check
            # and mkfs need the device free, and a teardown still writing must not
            # overlap anything that is measured.
            if mountpoint is None and self.harness is None and os.path.ismount(target):
                mountpoint = target  # mounted, but interrupted before make_and_mount returned
            if mountpoint:
                with self._phase("unmount"):
                    filesystems.unmount(mountpoint)
                    filesystems.remove_mountpoint(mountpoint)
            with self._phase("prepare"):
                shutil.rmtree(work, ignore_errors=True)

    def _prepare_rep(self, cell: Cell, dev_path: str) -> tuple[dict, dict, Path]:
        """Before a repetition: the safety check, the device's queue as the study
        wants it (rotational, scheduler, wbt), the workload of the profile and a
        scratch directory; the notes say what the device was set to."""
        safety.require(self.host, dev_path, self.data_dir)
        queue = environment.device_queue(dev_path)
        notes: dict = {"device_path": dev_path, "rotational": queue["rotational"],
                       "scheduler": queue["scheduler"]}
        if cell.device.is_image:
            notes.update(loopdev.state(dev_path).environment())  # direct I/O on or not
        elif self.host.kind == "qemu" and queue["rotational"] != cell.device.wants_rotational:
            # virtio-blk reports rotational 1 in the guest: an ssd must say 0.
            environment.set_rotational(dev_path, cell.device.wants_rotational)
            notes["rotational"] = environment.device_queue(dev_path)["rotational"]
        scheduler = cell.study.scheduler
        if scheduler and queue["scheduler"] != scheduler:
            try:
                notes["scheduler"] = environment.set_scheduler(dev_path, scheduler)
            except (RuntimeError, OSError) as e:
                notes["scheduler_note"] = str(e)
        # After the scheduler: choosing BFQ turns wbt off, and the study's value holds.
        wbt = cell.study.wbt_lat_usec
        notes["wbt_lat_usec"] = environment.device_queue(dev_path)["wbt_lat_usec"]
        if wbt is not None and notes["wbt_lat_usec"] != wbt:
            try:
                notes["wbt_lat_usec"] = environment.set_wbt(dev_path, wbt)
            except (RuntimeError, OSError) as e:
                notes["wbt_note"] = str(e)
        workload = cell.study.workload(self.profile, cell.device.device_class)
        return notes, workload, Path(tempfile.mkdtemp(prefix="iowatch-rep-"))

    def _measured_window(self, workload: dict, dev_path: str, mountpoint: str | None, work: Path,
                         notes: dict) -> Result:
        """One repetition's measured window: the device made clean and the caches
        dropped, the tool run, the workload's writeback synced, and the device's
        /proc/diskstats across it added to the tool's samples."""
        # Once per repetition, just before the window: the device under test made
        # clean (so nothing mkfs or mount left dirty is counted as the workload's
        # writes), then every clean cache host-wide dropped. Only this device is
        # synced: the global sync() it replaces also waited for every other
        # filesystem's writeback (the host's, other runs' loop devices), which is
        # not this repetition's state, and took seconds while they were busy.
        with self._phase("sync_before"):
            if mountpoint:
                filesystems.syncfs(mountpoint)
            else:
                filesystems.sync_device(dev_path)
        with self._phase("drop_caches"):
            filesystems.drop_caches()
        ctx = Context(device=dev_path, mountpoint=mountpoint, workdir=work)
        name = environment.block_name(dev_path)
        members = diskstats.member_names(name)  # an md array's disks (diskstats' docstring)
        # The measured window: /proc/diskstats and the clock from here ...
        members_before = [diskstats.read(m) for m in members]
        before, t0 = diskstats.read(name), time.monotonic()
        if "fio" in workload:
            res = run_fio(workload, ctx)
        elif "fs_mark" in workload:
            res = run_fs_mark(workload, ctx)
        else:
            res = run_script(workload, ctx, filesystems.drop_caches)
        # Writing the job file and parsing the tool's output, outside the tool's
        # own time (res.tool_s) but inside the call: overhead, by its own name.
        self.phase_s["tool_output"] = (self.phase_s.get("tool_output", 0.0)
                                       + time.monotonic() - t0 - res.tool_s)
        if mountpoint:
            # ... through the writeback of what the workload left dirty: buffered
            # writes reach the device after the tool exits (fs_mark -S0 syncs
            # nothing), and the xfs-smallfile-writeback study counts that
            # writeback in its device writes (its quick profile says so). This
            # sync of the filesystem under test is therefore the workload's own
            # I/O inside the measured window, and is accounted as such
            # (workload_writeback_s), not as runner overhead and not as tool time.
            t_sync = time.monotonic()
            filesystems.syncfs(mountpoint)
            wb = time.monotonic() - t_sync
            self.workload_writeback_s += wb
            notes["sync_after_workload_s"] = round(wb, 3)
        seconds = time.monotonic() - t0
        after = diskstats.read(name)
        members_after = [diskstats.read(m) for m in members]
        # ... to here. What follows (samples, unmount) is overhead.
        with self._phase("record"):
            group = next(iter(workload["groups"].values()))
            res.samples += diskstats.samples(before, after, seconds, group,
                                             (members_before, members_after))
            res.artifacts["diskstats.before"] = (" ".join(map(str, before.__dict__.values())) + "\n").encode()
            res.artifacts["diskstats.after"] = (" ".join(map(str, after.__dict__.values())) + "\n").encode()
        return res
    def _record(self, cell: Cell, index: int, res: Result, notes: dict) -> None:
        self.tool_s += res.tool_s
        if res.error:
            # Never a performance result from a run that failed: its raw
            # output travels in the bundle, its numbers do not.
            res.samples = []
        fields = {"device": cell.device.name, "filesystem": cell.filesystem,
                  "params": {"profile": self.profile,
                             "workload": cell.study.workload(self.profile, cell.device.device_class)}}
        if self.harness is not None:
            fields["params"]["harness"] = self.harness.name
        if "mkfs_options" in notes:
            fields.update(mkfs_options=notes["mkfs_options"], mount_options=notes["mount_options"])
        if not cell.study.canary:
            # The queue the cell ran on, in the cell: the device's entry in the
            # environment keeps the last cell's only, and two studies on one device
            # may ask for different schedulers (seed 003: BFQ, and none with wbt on).
            queue = {k: notes[k] for k in ("scheduler", "wbt_lat_usec") if notes.get(k) is not None}
            if queue:
                fields["params"]["queue"] = queue
        self.writer.add_repetition(
            cell.id, cell.study.slug, index, [s.to_dict() for s in res.samples], res.artifacts,
            failures=res.failures, status="failed" if res.error else "passed", error=res.error,
            **fields)
        if res.error:
            self.writer.cell(cell.id, cell.study.slug)["reason"] = res.error
        self.writer.doc["environment"]["devices"][cell.device.name] = {
            **notes, **self.device_notes.get(cell.device.name, {})}

    # -- the device's state and preconditioning -----------------------------

    def _read_state(self, cell: Cell, dev_path: str) -> dict:
        if cell.device.members and not cell.device.path:
            return devstate.read_members(list(cell.device.members))
        return devstate.read(dev_path)

    def _before_cells(self, cell: Cell, dev_path: str) -> None:
        """Once per device: its state; once per study and device: the study's
        preconditioning, if it asks for it and the device is an SSD."""
        if cell.study.canary:
            return  # a canary runs on a tmpfs: the device is only its address
        notes = self.device_notes.setdefault(cell.device.name, {})
        if "state" not in notes:
            with self._phase("device_state"):
                notes["state"] = self._read_state(cell, dev_path)
        self.state_paths.setdefault(cell.device.name, dev_path)
        done = notes.setdefault("precondition", {})
        pre = cell.study.precondition
        if pre is not None and cell.study.slug not in done:
            from iowatch import precondition  # scipy's import only when a study asks for it

            if precondition.applies(cell.device.device_class, pre):
                safety.require(self.host, dev_path, self.data_dir)  # it writes the whole device
                with self._phase("precondition"):
                    done[cell.study.slug] = precondition.run(dev_path, pre)
                earlier = self.before_resume.get((cell.device.name, cell.study.slug))
                if earlier is not None:
                    done[cell.study.slug]["before_resume"] = earlier
        if not done:
            notes.pop("precondition")
        self._merge_device_notes(cell.device.name)

    def _after_cells(self, cells: list[Cell]) -> None:
        """The state again after the run (the temperature after a run is worth having)."""
        by_name = {c.device.name: c for c in cells}
        with self._phase("device_state"):
            for name, dev_path in self.state_paths.items():
                if name in by_name:
                    self.device_notes[name]["state_after"] = self._read_state(by_name[name], dev_path)
                    self._merge_device_notes(name)

    def _merge_device_notes(self, name: str) -> None:
        devices = self.writer.doc["environment"]["devices"]
        devices[name] = {**devices.get(name, {}), **self.device_notes.get(name, {})}

    # -- the whole matrix -------------------------------------------------

    def run(self) -> dict:
        cells = boot_cells(self.matrix, self.host, self.only)
        for c in cells if self.harness is not None else ():
            c.skip = c.skip or self.harness.skip_reason(
                c.study.workload(self.profile, c.device.device_class), c.filesystem, c.id)
        todo = [c for c in cells if c.id not in self.done]
        self.progress.on_start(sum(self.reps for c in todo if not c.skip))
        t_start = time.monotonic()
        status = "incomplete"
        try:
            with _signals_interrupt(), ExitStack() as stack:
                arrays: dict[str, str] = {}
                loops = stack.enter_context(self._loops([c.device for c in todo if not c.skip]))
                for cell in todo:
                    self._clear_partial(cell)
                    if cell.skip:
                        self.writer.cell(cell.id, cell.study.slug, device=cell.device.name,
                                         filesystem=cell.filesystem, status="skipped",
                                         reason=cell.skip)
                        self.progress.on_skip(cell)
                        continue
                    dev_path = self._device_path(cell, loops, arrays, stack)
                    if dev_path is None:
                        continue
                    self._before_cells(cell, dev_path)
                    self._repetitions(cell, dev_path, range(1, self.reps + 1), t_start)
                self._after_cells(todo)
            failed = any(c["status"] == "failed" for c in self.writer.doc["cells"])
            status = "failed" if failed else "passed"
        finally:
            self._checkpoint(t_start, status)
        return self.writer.doc

    def add_repetitions(self, targets: dict[str, int]) -> dict:
        """Run more repetitions of cells this bundle already holds until each has
        targets[cell id] of them (the adaptive loop: iowatch.judging.more_runs)."""
        cells = {c.id: c for c in plan(self.matrix, self.host) if not c.skip}
        wanted = []
        for cid, total in sorted(targets.items()):
            have = self.writer.find(cid)
            if cid in cells and have is not None and len(have["repetitions"]) < total:
                wanted.append((cells[cid], len(have["repetitions"]), total))
        if not wanted:
            return self.writer.doc
        self.progress.on_start(sum(total - have for _, have, total in wanted))
        t_start = time.monotonic() - (self.writer.doc["environment"].get("runner") or {}).get("wall_s", 0)
        status = "incomplete"
        try:
            with _signals_interrupt(), ExitStack() as stack:
                arrays: dict[str, str] = {}
                loops = stack.enter_context(self._loops([c.device for c, _, _ in wanted]))
                for cell, have, total in wanted:
                    dev_path = self._device_path(cell, loops, arrays, stack)
                    if dev_path is not None:
                        self._before_cells(cell, dev_path)
                        self._repetitions(cell, dev_path, range(have + 1, total + 1), t_start)
                self._after_cells([c for c, _, _ in wanted])
            failed = any(c["status"] == "failed" for c in self.writer.doc["cells"])
            status = "failed" if failed else "passed"
        finally:
            self._checkpoint(t_start, status)
        return self.writer.doc

    def _device_path(self, cell: Cell, loops: dict, arrays: dict, stack: ExitStack) -> str | None:
        """The block device a cell writes to: its loop device, its path, or its md
        array (assembled once per run); None when the array cannot be assembled."""
        if not (cell.device.members and not cell.device.path):
            return loops.get(cell.device.name) or guest_path(self.host, cell.device)
        try:
            if cell.device.name not in arrays:
                arrays[cell.device.name] = stack.enter_context(
                    mdraid.assembled(self.host, cell.device, self.data_dir))
            return arrays[cell.device.name]
        except mdraid.MdError as e:
            self.writer.cell(cell.id, cell.study.slug, device=cell.device.name,
                             filesystem=cell.filesystem, status="failed", reason=str(e))
            return None

    def _repetitions(self, cell: Cell, dev_path: str, indices: range, t_start: float) -> None:
        total = indices.stop - 1
        for index in indices:
            self.progress.on_rep(cell, index, total)
            try:
                res, notes = self._run_rep(cell, dev_path, index)
            except safety.DeviceRefused:
                raise  # a safety refusal stops the run: the lab description is wrong
            except (filesystems.FilesystemError, RuntimeError, OSError, ParseError) as e:
                # An unreadable tool output fails this repetition, with its reason, not the matrix.
                res, notes = Result(error=str(e)), {}
            with self._phase("record"):
                self._record(cell, index, res, notes)
            self.progress.on_done(cell, index, "failed" if res.error else "passed")
        self._add_ratio(cell)
        with self._phase("record"):
            self._checkpoint(t_start)

    def _clear_partial(self, cell: Cell) -> None:
        """A resumed cell starts over: drop its half-done repetitions."""
        self.writer.drop(cell.id)
        shutil.rmtree(self.out / "cells" / cell.id, ignore_errors=True)

    def _add_ratio(self, cell: Cell) -> None:
        """The filesystem/raw ratio per repetition pair (iowatch.ratio), once both
        cells of a ratio study are done."""
        ratio = cell.study.spec.ratio
        if not ratio or cell.filesystem not in (ratio.filesystem, ratio.against):
            return
        cid = lambda fs: f"{cell.study.slug}/{cell.device.name}/{fs}"  # noqa: E731
        fs_cell = self.writer.find(cid(ratio.filesystem))
        raw_cell = self.writer.find(cid(ratio.against))
        if fs_cell and raw_cell:
            fs_ratio.add_to_cell(fs_cell, raw_cell, ratio)

    def _checkpoint(self, t_start: float, status: str = "incomplete") -> None:
        wall = time.monotonic() - t_start
        # Measured time: inside the tools, plus the workload's own writeback synced
        # inside the measured window (_run_rep). Overhead is the rest, by phase.
        writeback = self.workload_writeback_s
        self.writer.doc["environment"]["runner"] = {
            "wall_s": round(wall, 3), "tool_s": round(self.tool_s, 3),
            "workload_writeback_s": round(writeback, 3),
            "overhead_pct": round(100 * (wall - self.tool_s - writeback) / wall, 2) if wall else None,
            "phases_s": {k: round(v, 3) for k, v in self.phase_s.items()}}
        fields = {"finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")} if status != "incomplete" else {}
        self.writer.close(status, **fields)


def summary(doc: dict, studies: dict[str, Study]) -> list[str]:
    """A line per cell: status, and the medians of its study's deciding (and,
    for a canary, watched) metrics."""
    lines = []
    for c in doc["cells"]:
        if c["status"] == "skipped":
            lines.append(f"  skipped  {c['id']}: {c.get('reason')}")
            continue
        reps = c["repetitions"]
        by_metric: dict[tuple, list[float]] = {}
        for r in reps:
            for s in r["samples"]:
                if s.get("job") is None:
                    by_metric.setdefault((s["group"], s["metric"]), []).append(s["value"])
        study = studies.get(c["study"])
        keys = sorted(study.deciding | study.watched) if study else []
        shown = [f"{group} {metric} median {statistics.median(by_metric[group, metric]):,.4g}"
                 for group, metric in keys if (group, metric) in by_metric]
        state = c["status"]
        lines.append(f"  {state:<8} {c['id']} ({len(reps)} reps): " + "; ".join(shown)
                     + (f" [{c.get('reason')}]" if state == "failed" else ""))
    return lines
