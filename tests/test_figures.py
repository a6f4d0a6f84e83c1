"""iowatch.figures: one way to write a value, a change, a CI and a p-value (issue 28)."""
from iowatch import figures


def test_values_are_grouped_from_a_thousand_whole_from_a_hundred_three_digits_below():
    assert [figures.value(v) for v in (52900, 2968, 303.4, 19.04, 0.1254, 0)] == \
        ["52,900", "2,968", "303", "19", "0.125", "0"]
    assert figures.value(None) == "n/a" and figures.value(None, "?") == "?"


def test_a_rise_to_twice_or_more_is_a_ratio_not_a_percentage():
    assert figures.change(14257.9) == "\u00d7144"
    assert figures.change(100.0) == "\u00d72"
    assert figures.change(35.6) == "+35.6%" and figures.change(-99.36) == "-99.4%"
    assert figures.change(-33.2, signed=False) == "33.2%"
    assert figures.change(-33.2, digits=0) == "-33%"
    assert figures.ci(-36.04, -30.1) == "[-36.0%, -30.1%]"
    assert figures.ci(-82.4, 144.1) == "[-82.4%, +144.1%]"
    assert figures.ci(110.0, 244.0) == "[\u00d72.1, \u00d73.44]"
    assert figures.ci(None, 3.0) == "n/a"


def test_a_p_value_is_two_digits_or_below_a_thousandth_never_zero():
    assert [figures.p_value(p) for p in (0.0423, 0.5, 1.0, 0.0012, 1.7e-08)] == \
        ["0.042", "0.5", "1", "0.0012", "< 0.001"]
    assert figures.p_value(None) == "n/a"


def test_kib_from_10_mib_are_mib_and_a_set_of_values_shares_one_unit():
    assert figures.amount((310272.0, 207000.0), "KiB/s") == (["303", "202"], "MiB/s")
    assert figures.amount((2968.0, 19.0), "KiB/s") == (["2,968", "19"], "KiB/s")
    assert figures.amount((20480.0, 5000.0), "KiB/s") == (["20,480", "5,000"], "KiB/s")
    assert figures.with_unit(20480.0, "KiB/s") == "20 MiB/s"
    assert figures.amount((None, 20480.0), "KiB/s") == (["n/a", "20"], "MiB/s")
