"""Cost models of the virtual lab's device classes: when each request completes.

A model is the device's mechanics and nothing else: it is given each request
as it arrives (read, write, flush or trim, its byte offset and length, the
time) and answers the time at which the device completes it, keeping the
device's state (where the head is, which allocation units are open, which
channels are busy) between requests. It does no I/O and reads no clock; the
nbdkit plugin (iowatch.mechanics.nbdplugin) serves the data and waits until
that time. Profiles, the figures of a named real device, are data
(src/iowatch/data/device-models.yml, iowatch.mechanics.profiles).

Three kinds, one per family of device classes:

- `RotationalDisk` (hdd): one actuator. A request waits for the ones before
  it (first come, first served: the model does not reorder its queue as NCQ
  does; the guest's I/O scheduler orders what it sends), then pays a seek
  that grows with the distance in LBA (track to track for a short hop, the
  datasheet's average over random pairs, full stroke across the disk), half
  a rotation on average (drawn, seeded), and the transfer at its zone's rate
  (outer zone fastest, falling linearly to the inner). A request that starts
  where the last one ended streams on without a seek or a rotation. Writes go
  to the write cache and complete at once while it has room; the media
  writes them in arrival order after what is queued, and a flush (or a FUA
  write) completes when the media has written everything before it.
- `FlashCard` (sdcard, emmc): allocation units (AUs) of the card's size, of
  which a few may be open for writing at once. A write that continues an
  open AU at its write pointer costs a command and its transfer at the
  card's program rate; a write to an AU that is not open, or behind an open
  AU's write pointer, opens it and, with every slot taken, closes the least
  recently used one, which costs the card's garbage collection (the unit
  switch measured as its random-write cost). A command that does not start
  on a page also pays a page's read-modify-write. Reads cost a command and
  the transfer. One command at a time (the SD bus); QEMU's sd-card hands a
  command over 512 bytes at a time, and contiguous blocks close together are
  one command (command_gap_us); a trim of whole AUs closes them. A card may
  program a minimum unit per write command (min_program_bytes): a shorter
  command costs the unit's program time. A whole request pays it at once; a
  command handed over block by block pays its blocks as they come and what it
  fell short of the unit before the next command starts.
- `SolidStateDrive` (ssd, nvme, RAID0 members): a fixed latency per read and
  per write, served by `channels` requests at once, and a link bandwidth
  shared by all; a flush costs a fixed time after the writes before it.

Times are seconds (floats), offsets and lengths bytes.
"""
from __future__ import annotations

import random
from collections import OrderedDict, deque
from dataclasses import dataclass, field

READ, WRITE, FLUSH, TRIM = "read", "write", "flush", "trim"
SD_BLOCK = 512
MB = 1_000_000


@dataclass(frozen=True)
class DiskProfile:
    capacity: int                 # the stroke the seek curve spans, bytes
    rpm: int
    track_to_track_ms: float
    average_seek_ms: float        # over random pairs of positions, as datasheets give it
    full_stroke_ms: float
    outer_mb_s: float
    inner_mb_s: float
    command_us: float = 100.0
    interface_mb_s: float = 600.0
    cache_bytes: int = 64 << 20
    cache_segments: int = 128     # extents the cache holds at once; a sequential write extends the last
    write_cache: bool = True

    @property
    def seek_exponent(self) -> float:
        """p of seek(x) = t2t + (full - t2t) * x**p, x the distance over the
        stroke, so that the mean over random pairs (|U1 - U2|, density
        2(1 - x), whose mean of x**p is 2 / ((p + 1)(p + 2))) is the average."""
        share = (self.average_seek_ms - self.track_to_track_ms) / (self.full_stroke_ms - self.track_to_track_ms)
        # (p + 1)(p + 2) = 2 / share  ->  p**2 + 3p + 2 - 2/share = 0
        return (-3 + (9 - 4 * (2 - 2 / share)) ** 0.5) / 2


@dataclass(frozen=True)
class FlashProfile:
    au_bytes: int
    open_aus: int
    page_bytes: int
    read_command_us: float
    read_mb_s: float
    write_command_us: float
    write_mb_s: float             # the program rate inside an open AU
    au_switch_ms: float           # opening an AU with every slot taken: the LRU one's garbage collection
    flush_us: float = 0.0
    # QEMU's sd-card moves a multi-block command to its drive one 512-byte block at
    # a time; a 512-byte request that continues the last one's bytes within this
    # time of its end is taken for the same command (no command cost, no page
    # read-modify-write of its own). Two contiguous commands closer than this
    # are one to the model: it cannot see the bus.
    command_gap_us: float = 250.0
    # The least a write command programs: a card that programs 16 KiB at a time
    # takes as long for a 4 KiB write as for 16 KiB (the Lexar 633x's published
    # random writes). 0 is none: every byte written is what is programmed.
    min_program_bytes: int = 0


@dataclass(frozen=True)
class SsdProfile:
    read_us: float
    write_us: float
    channels: int
    link_mb_s: float
    flush_us: float = 0.0


class RotationalDisk:
    def __init__(self, p: DiskProfile, seed: int):
        self.p = p
        self.rng = random.Random(seed)
        self.head = 0                 # byte offset after the last request the media served
        self.media_free = 0.0         # when the media has done everything queued
        self.dirty: deque[list] = deque()   # [media done at, bytes] an extent in the cache, oldest first
        self.dirty_bytes = 0
        self.last_write_end = -1
        self._p_exp = p.seek_exponent

    def seek_s(self, distance: int) -> float:
        if distance == 0:
            return 0.0
        p = self.p
        x = min(1.0, distance / p.capacity)
        return (p.track_to_track_ms + (p.full_stroke_ms - p.track_to_track_ms) * x ** self._p_exp) / 1e3

    def _rate(self, offset: int) -> float:
        x = min(1.0, offset / self.p.capacity)
        return (self.p.outer_mb_s - (self.p.outer_mb_s - self.p.inner_mb_s) * x) * MB

    def media_s(self, offset: int, length: int) -> float:
        """What the media takes for one request from where the head is."""
        position = 0.0
        if offset != self.head:
            position = self.seek_s(abs(offset - self.head)) + self.rng.random() * 60.0 / self.p.rpm
        self.head = offset + length
        return position + length / self._rate(offset)

    def _media(self, start: float, offset: int, length: int) -> float:
        self.media_free = max(start, self.media_free) + self.p.command_us / 1e6 + self.media_s(offset, length)
        return self.media_free

    def _drain(self, now: float) -> None:
        while self.dirty and self.dirty[0][0] <= now:
            self.dirty_bytes -= self.dirty.popleft()[1]

    def submit(self, op: str, offset: int, length: int, now: float, fua: bool = False) -> float:
        if op == READ:
            return self._media(now, offset, length)
        if op == WRITE:
            if not self.p.write_cache or fua:
                return self._media(now, offset, length)
            self._drain(now)
            done = self._media(now, offset, length)
            ready = now + self.p.command_us / 1e6 + length / (self.p.interface_mb_s * MB)
            if self.dirty and offset == self.last_write_end:
                self.dirty[-1][0] = done                   # the same extent, grown
                self.dirty[-1][1] += length
            else:
                self.dirty.append([done, length])
                # With every extent taken, it waits until enough of the older ones are on
                # the media: the k-th write past the limit, for the k-th oldest (writes
                # in flight together each wait for their own, not all for the first).
                excess = len(self.dirty) - self.p.cache_segments
                if excess > 0:
                    ready = max(ready, self.dirty[excess - 1][0])
            self.last_write_end = offset + length
            self.dirty_bytes += length
            # With the bytes full, it waits until the media has freed its room.
            need = self.dirty_bytes - self.p.cache_bytes
            for at, nbytes in self.dirty:
                if need <= 0:
                    break
                ready, need = max(ready, at), need - nbytes
            return ready
        if op == FLUSH:
            return max(now, self.media_free) + self.p.command_us / 1e6
        return now + self.p.command_us / 1e6          # trim: a disk has nothing to do


class FlashCard:
    def __init__(self, p: FlashProfile, seed: int):
        self.p = p
        self.free = 0.0
        self.last = ("", -1, 0.0)                 # (op, end offset, done) of the last request
        self.commands = 0
        self.open: OrderedDict[int, int] = OrderedDict()   # AU -> write pointer (bytes into it), LRU first
        self.unit_switches = 0
        self.streamed = 0                         # bytes so far of a write command handed over block by block

    def _program_bytes(self, length: int, continued: bool) -> int:
        """The bytes a write request is charged at the program rate: a whole
        request at least the card's program unit; a 512-byte block, which may be
        the first of a command handed over block by block, only its own (the
        command's shortfall is owed: _shortfall_s)."""
        if continued or length == SD_BLOCK:
            self.streamed = (self.streamed if continued else 0) + length
            return length
        self.streamed = 0
        return max(length, self.p.min_program_bytes)

    def _shortfall_s(self) -> float:
        """What the last command handed over block by block fell short of the
        program unit, charged as a new command starts."""
        owed = max(0, self.p.min_program_bytes - self.streamed) if self.streamed else 0
        self.streamed = 0
        return owed / (self.p.write_mb_s * MB)

    def _write_s(self, offset: int, length: int, continued: bool) -> float:
        p = self.p
        cost = self._program_bytes(length, continued) / (p.write_mb_s * MB)
        if not continued:
            cost += p.write_command_us / 1e6
            if offset % p.page_bytes:
                cost += p.page_bytes / (p.read_mb_s * MB) + p.page_bytes / (p.write_mb_s * MB)
        end = offset + length
        while offset < end:
            au, within = divmod(offset, p.au_bytes)
            pointer = self.open.get(au)
            if pointer is not None and within < pointer:
                # Behind the write pointer: the unit is collected and written afresh.
                cost += p.au_switch_ms / 1e3
                self.unit_switches += 1
            elif pointer is None and len(self.open) >= p.open_aus:
                self.open.popitem(last=False)
                cost += p.au_switch_ms / 1e3
                self.unit_switches += 1
            step = min(end, (au + 1) * p.au_bytes) - offset
            self.open[au] = within + step
            self.open.move_to_end(au)
            offset += step
        return cost

    def submit(self, op: str, offset: int, length: int, now: float, fua: bool = False) -> float:
        p = self.p
        start = max(now, self.free)
        last_op, last_end, last_done = self.last
        continued = (length == SD_BLOCK and op == last_op and offset == last_end
                     and now <= last_done + p.command_gap_us / 1e6)
        self.commands += not continued
        if not continued:
            start += self._shortfall_s()
        if op == READ:
            cost = (0.0 if continued else p.read_command_us / 1e6) + length / (p.read_mb_s * MB)
        elif op == WRITE:
            cost = self._write_s(offset, length, continued)
        elif op == TRIM:
            first, last = -(-offset // p.au_bytes), (offset + length) // p.au_bytes
            for au in range(first, last):
                self.open.pop(au, None)
            cost = p.write_command_us / 1e6
        else:
            cost = p.flush_us / 1e6
        # A block that continues a command is due on the command's own time line,
        # not after its arrival: the card takes a command's data while it programs
        # (it buffers pages), so a host that hands the blocks over slowly (QEMU's
        # sd-card under TCG, 0.17 ms a block) costs the longer of its own time and
        # the card's, not the sum of both.
        self.free = max(now, self.free + cost) if continued else start + cost
        self.last = (op, offset + length, self.free)
        return self.free


class SolidStateDrive:
    def __init__(self, p: SsdProfile, seed: int):
        self.p = p
        self.channels = [0.0] * p.channels     # when each channel is next free
        self.link_free = 0.0
        self.last_write_done = 0.0

    def submit(self, op: str, offset: int, length: int, now: float, fua: bool = False) -> float:
        p = self.p
        if op == FLUSH:
            return max(now, self.last_write_done) + p.flush_us / 1e6
        if op == TRIM:
            return now + p.read_us / 1e6 / 4
        i = min(range(len(self.channels)), key=self.channels.__getitem__)
        start = max(now, self.channels[i])
        done = start + (p.read_us if op == READ else p.write_us) / 1e6
        self.channels[i] = done
        # The link carries the data after (reads) or before (writes) the flash work; one
        # model for both: the request is not done before its bytes have crossed it.
        self.link_free = max(self.link_free, start) + length / (p.link_mb_s * MB)
        done = max(done, self.link_free)
        if op == WRITE:
            self.last_write_done = max(self.last_write_done, done)
        return done


@dataclass
class Model:
    """A profile's model with the counters a run reports (what the device did).

    time_scale > 1 runs the device slower by that factor, every cost alike: the
    model's clock runs `time_scale` times slower than the host's from the first
    request on, so ratios between workloads (random against sequential, one
    open unit against six) are the profile's and every rate is divided by the
    factor. The virtual lab uses it under TCG, where the guest's CPU and
    QEMU's emulation of a request are tens of times slower than on hardware: a
    device slowed alike keeps its costs ahead of the emulation's (docs/seeds.md,
    "Devices with mechanics").

    time_scale 0 is a free device: every request is due when it arrives, so
    what a client measures is what the host itself does with the workload (the
    calibration test's ceiling at depth 2 and more, probe.target_on_host)."""
    kind: str
    device: RotationalDisk | FlashCard | SolidStateDrive
    counts: dict = field(default_factory=lambda: {READ: 0, WRITE: 0, FLUSH: 0, TRIM: 0})
    time_scale: float = 1.0
    origin: float | None = None

    def submit(self, op: str, offset: int, length: int, now: float, fua: bool = False) -> float:
        self.counts[op] += 1
        if self.time_scale == 0.0:
            return now
        if self.time_scale == 1.0:
            return self.device.submit(op, offset, length, now, fua)
        if self.origin is None:
            self.origin = now
        done = self.device.submit(op, offset, length, self.origin + (now - self.origin) / self.time_scale, fua)
        return self.origin + (done - self.origin) * self.time_scale


def make(kind: str, params: dict, seed: int, time_scale: float = 1.0) -> Model:
    """A fresh model of a profile's kind and parameters (iowatch.mechanics.profiles),
    its time stretched by time_scale (Model)."""
    if not (time_scale >= 1.0 or time_scale == 0.0):
        raise ValueError(f"time_scale {time_scale!r}: a device model can be slowed (>= 1) or made free (0), "
                         "not sped up")
    cls, profile = {"disk": (RotationalDisk, DiskProfile), "flash": (FlashCard, FlashProfile),
                    "ssd": (SolidStateDrive, SsdProfile)}[kind]
    return Model(kind, cls(profile(**params), seed), time_scale=float(time_scale))
