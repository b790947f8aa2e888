"""The memory page from Python (issue 31): compiled.memory_html() for a ferry.jax.jit program,
its inline form for notebooks, several plans on one page, and bad paths. The page itself is
opened in a browser by the C++ suite (tests/e2e/memory_page_browser_test.cpp); here the data it
draws must add up to the plan's peaks."""
import html as html_lib
import json
import re

import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import numpy as np
import pytest

import ferry
import ferry.jax

OFFLOAD = jax.checkpoint_policies.save_and_offload_only_these_names(
    names_which_can_be_saved=(), names_which_can_be_offloaded=("save_remat",),
    offload_src="device", offload_dst="pinned_host")


def second_report(params, x):
    def step(y, i):
        y = jnp.sin(y)
        y = jax.ad_checkpoint.checkpoint_name(y, "save_remat")
        y = jnp.sin(y)
        return y, ()
    step = jax.remat(step, policy=OFFLOAD)
    return ferry.jax.grad(lambda p: jax.lax.scan(step, p, x)[0].sum())(params)


def page_data(page):
    found = re.search(r'<script id="ferry-data" type="application/json">(.*?)</script>', page, re.S)
    assert found, "the page embeds no data"
    return json.loads(found.group(1))


def stack_peaks(plan):
    """The most bytes the page's stack reaches per lane (device, host), from its data."""
    n = plan["n"]
    peaks = []
    for lane in (0, 1):
        delta = np.zeros(n + 2, np.int64)
        for b in plan["buffers"]:
            if b["m"] == lane:
                delta[b["a"]] += b["s"]
                delta[b["b"] + 1] -= b["s"]
        for g in plan["groups"]:
            if g["m"] == lane:
                for i in range(0, len(g["d"]), 3):
                    delta[g["d"][i]] += g["d"][i + 1]
        peaks.append(int(np.max(np.cumsum(delta[:n + 1])) + plan["slack"][lane]))
    return peaks


def compiled_second_report():
    params, x = np.ones([3], np.float32), np.ones([2, 3], np.float32)
    return ferry.jax.jit(second_report).lower(params, x).compile(), (params, x)


def test_memory_html_draws_the_plan():
    c, args = compiled_second_report()
    page = c.memory_html()
    assert page.startswith("<!DOCTYPE html>")
    plan = page_data(page)["plans"][0]
    m = c.memory_analysis()
    assert stack_peaks(plan) == [m.peak_memory_in_bytes, m.host_peak_memory_in_bytes]
    assert m.host_peak_memory_in_bytes > 0
    assert plan["measured"] is None


def test_a_traced_run_is_drawn_beside_the_plan(tmp_path):
    c, args = compiled_second_report()
    c.run_traced(str(tmp_path / "trace.json"), *args)
    measured = page_data(c.memory_html())["plans"][0]["measured"]
    assert measured["ms"] > 0 and measured["compute"]


def test_repr_html_shows_the_page_inline():
    c, _ = compiled_second_report()
    inline = c._repr_html_()
    assert inline.startswith("<iframe") and 'srcdoc="' in inline
    # The page travels escaped inside the attribute and comes back whole.
    srcdoc = re.search(r'srcdoc="(.*)"></iframe>$', inline, re.S).group(1)
    assert html_lib.unescape(srcdoc) == c.memory_html()
    assert c._compiled._repr_html_() == inline


def test_several_plans_on_one_page(tmp_path):
    c, _ = compiled_second_report()
    params, x = np.ones([3], np.float32), np.ones([2, 3], np.float32)
    plain = ferry.jax.jit(lambda p, x: ferry.jax.grad(
        lambda p: jax.lax.scan(lambda y, i: (jnp.sin(jnp.sin(y)), ()), p, x)[0].sum())(p)).lower(params, x).compile()
    data = page_data(ferry.jax.memory_html({"offloaded": c, "saved": plain}, device_memory_limit=4096))
    assert [p["title"] for p in data["plans"]] == ["offloaded", "saved"]
    assert data["limit"] == 4096
    assert stack_peaks(data["plans"][1])[0] == plain.memory_analysis().peak_memory_in_bytes
    path = tmp_path / "compare.html"
    ferry.jax.save_memory_html([("offloaded", c), ("saved", plain)], path)
    assert page_data(path.read_text())["plans"][0]["title"] == "offloaded"


def test_a_path_that_cannot_be_written_is_invalid_argument(tmp_path):
    c, _ = compiled_second_report()
    with pytest.raises(ferry.Error) as e:
        c.save_memory_html(tmp_path / "no-such-folder" / "page.html")
    assert e.value.code == "INVALID_ARGUMENT" and "no-such-folder" in e.value.message
    with pytest.raises(ferry.Error) as e:
        ferry.jax.memory_html({})
    assert e.value.code == "INVALID_ARGUMENT"
