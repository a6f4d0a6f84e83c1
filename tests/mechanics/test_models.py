"""The device models alone (iowatch.mechanics.models), on simulated request
streams: no nbdkit, no clock. The figures come from the shipped profiles
(src/iowatch/data/device-models.yml), so a profile edited out of its
datasheet's shape fails here."""
import random

import pytest

from iowatch.mechanics import models, profiles

GiB = 1 << 30


def disk(**over):
    p = profiles.get("hdd-st1000dm003")
    return models.RotationalDisk(models.DiskProfile(**{**p.params, "capacity": 2 * GiB, **over}), seed=7)


def test_seek_curve_spans_track_to_track_average_and_full_stroke():
    d = disk()
    assert d.seek_s(4096) * 1e3 == pytest.approx(1.0, abs=0.05)
    assert d.seek_s(2 * GiB) * 1e3 == pytest.approx(18.0)
    rng = random.Random(1)
    pairs = [abs(rng.random() - rng.random()) * 2 * GiB for _ in range(40000)]
    mean_ms = sum(d.seek_s(int(x)) for x in pairs) / len(pairs) * 1e3
    assert mean_ms == pytest.approx(8.5, rel=0.02)      # the data sheet's average, over random pairs
    assert d.seek_s(GiB // 100) < d.seek_s(GiB // 10) < d.seek_s(GiB)


def test_random_reads_cost_a_seek_and_half_a_rotation_sequential_ones_stream():
    d, rng, t = disk(), random.Random(2), 0.0
    n = 3000
    for _ in range(n):
        t = d.submit(models.READ, rng.randrange(2 * GiB // 4096) * 4096, 4096, t)
    per_read_ms = t / n * 1e3
    assert per_read_ms == pytest.approx(8.5 + 60e3 / 7200 / 2 + 0.1 + 0.02, rel=0.03)
    d, t = disk(), 0.0
    for i in range(256):
        t = d.submit(models.READ, i << 20, 1 << 20, t)
    # No seeks: the outer zone's rate (210 MB/s falling to 198 over the first 256 MiB
    # of 2 GiB) and 0.1 ms a command: 1 MiB in 5.14 ms, 204 MB/s, less the command's 2%.
    assert 256 * (1 << 20) / t / 1e6 == pytest.approx(200, rel=0.02)


def test_write_cache_answers_at_once_until_full_and_flush_waits_for_the_media():
    d = disk()
    done = d.submit(models.WRITE, 1 << 30, 4096, 0.0)
    assert done < 0.001                                  # in the cache
    assert d.media_free > 0.004                          # the media writes it later
    assert d.submit(models.FLUSH, 0, 0, done) >= d.media_free
    fua = disk().submit(models.WRITE, 1 << 30, 4096, 0.0, fua=True)
    assert fua > 0.004                                   # a FUA write waits for the media
    d, t = disk(), 0.0
    rng = random.Random(3)
    for _ in range(2000):                                # past the cache's 128 extents
        t = d.submit(models.WRITE, rng.randrange(2 * GiB // 4096) * 4096, 4096, t)
    assert 2000 / t == pytest.approx(78, rel=0.1)        # then the media's random rate


def card(name="sd-lexar-633x"):
    p = profiles.get(name)
    return models.FlashCard(models.FlashProfile(**p.params), seed=0), p.params


def writers_mb_s(n: int, bs: int = 16384, rounds: int = 400) -> float:
    c, params = card()
    au, t, pointers = params["au_bytes"], 0.0, [i * 4 * params["au_bytes"] for i in range(n)]
    for _ in range(rounds):
        for i in range(n):
            t = c.submit(models.WRITE, pointers[i], bs, t)
            pointers[i] += bs
    return n * rounds * bs / t / 1e6


def test_open_unit_knee_is_at_the_cards_open_units():
    open_aus = profiles.get("sd-lexar-633x").params["open_aus"]
    flat = [writers_mb_s(n) for n in range(1, open_aus + 1)]
    past = [writers_mb_s(n) for n in range(open_aus + 1, open_aus + 4)]
    assert max(flat) / min(flat) < 1.01                  # as many writers as open units: one rate
    assert max(past) < min(flat) / 2                     # one more: every write collects a unit


def test_small_or_unaligned_writes_and_rewrites_cost_more_per_byte():
    c, p = card()
    t_seq = c.submit(models.WRITE, 0, 65536, 0.0)
    t_back = c.submit(models.WRITE, 0, 4096, t_seq) - t_seq              # behind the write pointer
    t_next = c.submit(models.WRITE, 65536 + 4096, 4096, 1.0) - 1.0       # ahead in the open unit
    assert t_back > t_next + p["au_switch_ms"] / 1e3 * 0.99
    t_odd = c.submit(models.WRITE, 2 * 65536 + 512, 4096, 2.0) - 2.0     # not page-aligned
    assert t_odd > t_next
    # 64 requests of 32 KiB cost more than 4 of 512 KiB for the same 2 MiB (a command each)
    c1, _ = card()
    c2, _ = card()
    small = big = 0.0
    for i in range(64):
        small = c1.submit(models.WRITE, i * 32768, 32768, small)
    for i in range(4):
        big = c2.submit(models.WRITE, i * 524288, 524288, big)
    assert small - big == pytest.approx(60 * p["write_command_us"] / 1e6, rel=0.01)


def test_ssd_serves_its_channels_at_once_and_queues_the_rest():
    p = profiles.get("ssd-860evo").params
    s = models.SolidStateDrive(models.SsdProfile(**p), seed=0)
    done = [s.submit(models.READ, i * 4096, 4096, 0.0) for i in range(p["channels"] + 1)]
    assert max(done[:-1]) == pytest.approx(p["read_us"] / 1e6, rel=0.01)
    assert done[-1] == pytest.approx(2 * p["read_us"] / 1e6, rel=0.01)


def test_a_model_is_seeded():
    def run(seed):
        d = models.RotationalDisk(models.DiskProfile(**{**profiles.get("hdd-st1000dm003").params,
                                                        "capacity": GiB}), seed=seed)
        t = 0.0
        for i in range(50):
            t = d.submit(models.READ, (i * 7919 % 1000) << 20, 4096, t)
        return t
    assert run(1) == run(1)
    assert run(1) != run(2)


def test_unknown_profile_is_named_with_the_known_ones():
    with pytest.raises(KeyError, match="hdd-st1000dm003"):
        profiles.get("hdd-nonesuch")


def test_writes_in_flight_together_wait_each_for_their_own_room_in_the_cache():
    """32 random writes at once into a full cache: the k-th waits until k
    older extents are on the media, so together they take the media's time
    (32 random writes), not one write's."""
    d, rng, t = disk(), random.Random(5), 0.0
    for _ in range(200):                                  # fill the 128 extents
        t = d.submit(models.WRITE, rng.randrange(2 * GiB // 4096) * 4096, 4096, t)
    done = [d.submit(models.WRITE, rng.randrange(2 * GiB // 4096) * 4096, 4096, t) for _ in range(32)]
    assert done == sorted(done)
    assert (max(done) - t) == pytest.approx(32 / 78, rel=0.25)


def test_qemus_512_byte_blocks_of_one_command_cost_one_command():
    """Behind QEMU's sd-card a 64 KiB write reaches the model as 128 blocks of
    512 bytes, one after another: one command's cost, not 128 (nor 128 page
    read-modify-writes); a block that does not continue the last is a command."""
    c, p = card()
    t = 0.0
    for i in range(128):
        t = c.submit(models.WRITE, 4 << 20 | i * 512, 512, t)
    whole, _ = card()
    one = whole.submit(models.WRITE, 4 << 20, 65536, 0.0)
    assert t == pytest.approx(one, rel=1e-6) and c.commands == 1
    c.submit(models.WRITE, 8 << 20, 512, t)               # elsewhere: a new command
    c.submit(models.WRITE, 8 << 20 | 512, 512, t + 0.01)  # contiguous, but 10 ms later
    assert c.commands == 3



def test_a_write_command_programs_at_least_the_cards_program_unit():
    """The Lexar 633x programs at least 16 KiB a command: a whole 4 KiB write
    costs what 16 KiB does. Handed over block by block (QEMU's sd-card), a
    4 KiB command ends on its own bytes' time, and the next command waits for
    the rest of the unit; a 32 KiB command owes nothing."""
    c, p = card()
    unit, rate = p["min_program_bytes"], p["write_mb_s"] * 1e6
    assert unit == 16384
    four = c.submit(models.WRITE, 0, 4096, 0.0)
    c2, _ = card()
    sixteen = c2.submit(models.WRITE, 0, 16384, 0.0)
    assert four == pytest.approx(sixteen, rel=1e-9)

    def streamed(nbytes, at):
        s, t = card()[0], at
        for i in range(nbytes // 512):
            t = s.submit(models.WRITE, (4 << 20) + i * 512, 512, t)
        return s, t
    s4, end4 = streamed(4096, 0.0)
    whole4 = card()[0].submit(models.WRITE, 4 << 20, 4096, 0.0)
    assert end4 == pytest.approx(whole4 - (unit - 4096) / rate, rel=1e-9)
    # The next command (a read elsewhere) starts only once the unit is programmed.
    read_alone = card()[0].submit(models.READ, 0, 4096, end4) - end4
    after = s4.submit(models.READ, 0, 4096, end4) - end4
    assert after == pytest.approx(read_alone + (unit - 4096) / rate, rel=1e-9)
    s32, end32 = streamed(32768, 0.0)
    assert s32.submit(models.READ, 0, 4096, end32) - end32 == pytest.approx(read_alone, rel=1e-9)


@pytest.mark.parametrize("host_gap_us", [20.0, 170.0])
def test_a_command_handed_over_slowly_costs_the_longer_of_the_host_and_the_card(host_gap_us):
    """The card takes a command's blocks while it programs: when the host hands
    each 512-byte block over `host_gap_us` after the last one returned (QEMU's
    sd-card under TCG: about 170 us), the 64 KiB command ends at the later of
    the card's own time and the host's, not at their sum (the card, 39 us a
    block, leads at 20 us; the host at 170)."""
    c, p = card()
    whole, _ = card()
    card_s = whole.submit(models.WRITE, 4 << 20, 65536, 0.0)
    # QEMU hands a block over only once the last one returned: synchronous.
    t = first_s = c.submit(models.WRITE, 4 << 20, 512, 0.0)
    for i in range(1, 128):
        t = c.submit(models.WRITE, 4 << 20 | i * 512, 512, t + host_gap_us / 1e6)
    assert c.commands == 1
    host_s = first_s + 127 * host_gap_us / 1e6
    assert t == pytest.approx(max(card_s, host_s), rel=1e-6)

@pytest.mark.parametrize("name", ["hdd-st1000dm003", "sd-lexar-633x", "emmc-seed000", "ssd-860evo"])
def test_a_slowed_model_is_the_same_device_on_a_slower_clock(name):
    """Under TCG a profile runs time_scale times slower (models.Model): fed the
    same stream with every gap stretched by the factor, the slowed model
    completes each request at the factor times the unslowed one's time, so
    every ratio between workloads is the profile's; each profile's factor is
    at least 1 and its reason is stated."""
    p = profiles.get(name)
    assert p.tcg_time_scale >= 1 and p.tcg_why and p.time_scale("kvm") == 1.0
    scale, rng = 16.0, random.Random(3)
    stream = [(rng.choice([models.READ, models.WRITE]), rng.randrange(1 << 18) * 4096,
               rng.choice([4096, 65536, 1 << 20]), rng.random() * 0.01) for _ in range(400)]
    params = {**p.params, "capacity": 2 * GiB} if p.kind == "disk" else p.params
    fast, slow = models.make(p.kind, params, 5), models.make(p.kind, params, 5, scale)
    t_fast, t_slow = 100.0, 100.0
    first_fast, first_slow = t_fast + stream[0][3], t_slow + stream[0][3] * scale
    for op, offset, length, gap in stream:
        t_fast = fast.submit(op, offset, length, t_fast + gap)
        t_slow = slow.submit(op, offset, length, t_slow + gap * scale)
        assert t_slow - first_slow == pytest.approx((t_fast - first_fast) * scale, rel=1e-6)
    with pytest.raises(ValueError, match="slowed"):
        models.make(p.kind, p.params, 5, 0.5)


def test_a_free_model_answers_every_request_when_it_arrives_and_still_counts_it():
    """time_scale 0 (what the calibration test measures the export itself
    with): every request is due at its arrival, whatever the device would
    cost; the counters still see it."""
    p = profiles.get("sd-lexar-633x")
    free, card = models.make(p.kind, p.params, 1, 0), models.make(p.kind, p.params, 1)
    now = 10.0
    for i in range(20):
        offset = (i * 7919 % 512) * p.params["au_bytes"]          # a unit of its own each write
        assert free.submit(models.WRITE, offset, 16384, now) == now
        assert card.submit(models.WRITE, offset, 16384, now) > now + 16384 / (p.params["write_mb_s"] * 1e6)
        now += 0.001
    assert free.counts[models.WRITE] == 20
