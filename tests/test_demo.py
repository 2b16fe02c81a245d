"""scripts/demo.py end to end, as `make demo` runs it (with tiny renders): it sets up four limbs, bakes,
saves, renders, plots and reports numbers that match the bake, and the saved file plays the keys back."""
import importlib.util
import math
import os
import re
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "demo.py")
FRAMES = 40
LIMBS = ("hand.L", "hand.R", "foot.L", "foot.R")


def load_demo_module():
    spec = importlib.util.spec_from_file_location("demo_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # imports no bpy: that happens in main()
    return module


def run_demo(tmp_path, *arguments):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, SCRIPT, *map(str, arguments)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def read_png(path):
    """(width, height) of a PNG, after checking its chunks' CRCs and that the image data inflates to
    exactly the rows the header promises; and the number of distinct bytes in that data."""
    with open(path, "rb") as stream:
        data = stream.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    offset, chunks = 8, {}
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length:offset + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in the {kind!r} chunk"
        chunks.setdefault(kind, []).append(body)
        offset += 12 + length
        if kind == b"IEND":
            break
    width, height, depth, colour_type = struct.unpack(">IIBB", chunks[b"IHDR"][0][:10])
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour_type]
    pixels = zlib.decompress(b"".join(chunks[b"IDAT"]))
    assert len(pixels) == height * (1 + width * channels * depth // 8)
    return (width, height), len(set(pixels))


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    output = folder / "new" / "demo"  # made by the script
    finished = run_demo(folder, "--output-dir", output, "--frames", FRAMES, "--quick")
    return finished, output, folder


def test_demo_runs_and_writes_its_files(demo):
    finished, output, folder = demo
    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    for name in ("demo.png", "demo_plot.png", "demo_baked.blend"):
        assert (output / name).is_file(), name
        assert os.path.relpath(output / name, folder) in finished.stdout  # says where the files are
    with open(output / "demo_baked.blend", "rb") as stream:
        assert stream.read(8).startswith((b"BLENDER", b"\x28\xb5\x2f\xfd", b"\x1f\x8b"))  # plain, zstd, gzip


def test_pictures_are_real_images_of_the_chosen_size(demo):
    _, output, _ = demo
    quick = load_demo_module().QUICK
    for name, key in (("demo.png", "scene"), ("demo_plot.png", "plot")):
        size, distinct = read_png(output / name)
        assert size == quick[key][:2], name
        assert distinct > 50, f"{name} looks blank"


def frame_list(text):
    """'3-5, 9' -> [3, 4, 5, 9]"""
    frames = []
    for part in text.split(", "):
        first, _, last = part.partition("-")
        frames += range(int(first), int(last or first) + 1)
    return frames


def printed_bake(text):
    """From the summary: {limb: frames out of reach} and {limb: (in reach, max tip error m, max angle rad)}."""
    baked = re.search(r"Baked (\d+) frames \((\d+)-(\d+)\) × (\d+) chains(.*)", text)
    assert baked, text
    assert baked.group(1, 2, 3, 4) == (str(FRAMES), "1", str(FRAMES), str(len(LIMBS)))
    out = {limb: frame_list(frames) for limb, frames in re.findall(r"([\w.]+) \d+ out of reach \(([\d, -]+)\)",
                                                                 baked.group(5))}
    measured = {}
    for limb, reached, tip, angle in re.findall(r"^ +([\w.]+) +(\d+) in reach, max tip error ([\d.e+-]+) mm, "
                                                r"max angle error ([\d.e+-]+) µrad", text, re.MULTILINE):
        measured[limb] = (int(reached), float(tip) * 1e-3, float(angle) * 1e-6)
    return {limb: out.get(limb, []) for limb in LIMBS}, measured


def replay(bpy, tip, target, frame):
    """At ``frame``, as Blender evaluates the saved file: the tip's distance to the target, the last bone's
    angle to the target's Z axis, how far the wrist must be from the chain's base, and the limb's reach."""
    figure = bpy.data.objects["Figure"]
    bpy.context.scene.frame_set(frame)
    bone = figure.pose.bones[tip]
    world = figure.matrix_world
    head, tail, base = (np.array(world @ point) for point in (bone.head, bone.tail, bone.parent.parent.head))
    goal, up = np.array(target.matrix_world.translation), np.array(target.matrix_world.col[2][:3])
    up /= np.linalg.norm(up)
    direction = (tail - head) / np.linalg.norm(tail - head)
    angle = math.atan2(np.linalg.norm(np.cross(direction, up)), float(np.dot(direction, up)))
    lengths = [figure.data.bones[name].length for name in (bone.parent.parent.name, bone.parent.name, tip)]
    wrist = np.linalg.norm(goal - lengths[2] * up - base)
    return np.linalg.norm(tail - goal), angle, wrist, (abs(lengths[0] - lengths[1]), lengths[0] + lengths[1])


@pytest.fixture(scope="module")
def saved(demo):
    """The saved file replayed: per limb and frame (1..FRAMES), the numbers of :func:`replay`; and the
    chain settings and key counts per limb."""
    import bpy

    import blender_ik_addon
    from blender_ik_addon import keys

    _, output, _ = demo
    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    try:
        bpy.ops.wm.open_mainfile(filepath=str(output / "demo_baked.blend"))
        figure = bpy.data.objects["Figure"]
        chains = {chain.tip_bone: (chain.target.name, chain.live, chain.enabled) for chain in figure.blender_ik.chains}
        key_counts = {}
        for tip in LIMBS:
            bone = figure.pose.bones[tip]
            for pose_bone in (bone, bone.parent, bone.parent.parent):
                path = f'pose.bones["{pose_bone.name}"].rotation_quaternion'
                key_counts[pose_bone.name] = sorted(len(curve.keyframe_points) for curve in keys.object_fcurves(figure)
                                                    if curve.data_path == path)
        rows = {tip: [replay(bpy, tip, bpy.data.objects[f"{tip}_target"], frame) for frame in range(1, FRAMES + 1)]
                for tip in LIMBS}
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        blender_ik_addon.unregister()
    return rows, chains, key_counts


def test_the_saved_file_has_four_chains_and_keys_for_every_limb(saved):
    _, chains, key_counts = saved
    assert chains == {tip: (f"{tip}_target", False, True) for tip in LIMBS}  # made by Chains from Selected
    assert len(key_counts) == 3 * len(LIMBS)
    for bone, counts in key_counts.items():
        assert counts == [FRAMES] * 4, bone  # w, x, y, z keyed on every frame


def test_played_back_the_tips_are_on_their_targets_where_reachable(saved):
    rows, _, _ = saved
    for tip, limb_rows in rows.items():
        for frame, (error, angle, wrist, (low, high)) in enumerate(limb_rows, 1):
            assert angle < 2e-5, (tip, frame)  # the last bone follows the target's Z, in reach or not
            if low + 1e-6 < wrist < high - 1e-6:
                assert error < 1e-5 * high, (tip, frame)
            elif wrist > high + 1e-6:  # the closest pose: the arm straight toward the wrist, short of the target
                assert error == pytest.approx(wrist - high, rel=1e-3, abs=1e-6), (tip, frame)
    out = [frame for row in rows.values() for frame, values in enumerate(row, 1) if values[2] > values[3][1]]
    assert 0 < len(out) < FRAMES // 2, "the walk should leave a hand out of reach now and then"


def test_summary_matches_the_bake_and_the_replay(demo, saved):
    finished, _, _ = demo
    rows, _, _ = saved
    out_of_reach, measured = printed_bake(finished.stdout)
    assert set(measured) == set(LIMBS), finished.stdout
    for tip, limb_rows in rows.items():
        for frame, (_, _, wrist, (low, high)) in enumerate(limb_rows, 1):
            if wrist > high + 1e-6:
                assert frame in out_of_reach[tip], (tip, frame)
            elif low + 1e-6 < wrist < high - 1e-6:
                assert frame not in out_of_reach[tip], (tip, frame)
        reached, tip_error, angle_error = measured[tip]
        assert reached == FRAMES - len(out_of_reach[tip])
        in_reach = [row[0] for frame, row in enumerate(limb_rows, 1) if frame not in out_of_reach[tip]]
        assert tip_error == pytest.approx(max(in_reach), rel=0.06, abs=1e-9), tip  # printed to 2 digits
        assert angle_error == pytest.approx(max(row[1] for row in limb_rows), rel=0.06, abs=1e-9), tip
    assert re.search(r"picture \d+x\d+ in [0-9.]+ s", finished.stdout)


def test_a_bad_frame_count_is_one_line_and_status_2(tmp_path):
    finished = run_demo(tmp_path, "--frames", "5")
    assert finished.returncode == 2
    assert "Traceback" not in finished.stderr
    assert "--frames: must be 20 or more" in finished.stderr
    assert not (tmp_path / "out").exists()
