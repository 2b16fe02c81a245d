"""scripts/demo.py end to end, as `make demo` runs it (with tiny renders): it bakes, saves, renders and
reports numbers that match the bake."""
import importlib.util
import os
import re
import struct
import subprocess
import sys
import zlib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "demo.py")
FRAMES = 40


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


def test_summary_reports_the_bake_and_its_accuracy(demo):
    finished, _, _ = demo
    text = finished.stdout
    baked = re.search(r"Baked (\d+) frames \((\d+)-(\d+)\), (\d+) out of reach \(([^)]+)\)", text)
    assert baked, text
    assert baked.group(1, 2, 3) == (str(FRAMES), "1", str(FRAMES))
    out_of_reach = int(baked.group(4))
    assert 0 < out_of_reach < FRAMES // 2
    tip = re.search(r"max tip error ([0-9.eE+-]+) mm", text)
    angle = re.search(r"max angle error ([0-9.eE+-]+) µrad", text)
    assert tip and angle, text
    assert float(tip.group(1)) < 0.1  # 1e-4 m on the frames in reach, measured on the replayed keys
    assert float(angle.group(1)) < 20.0
    assert re.search(rf"Out of reach \({out_of_reach} frames\): the closest pose, tip up to \d+ mm short", text)
    assert re.search(r"picture \d+x\d+ in [0-9.]+ s", text)


def test_the_saved_file_holds_the_baked_keys(demo, blender):
    bpy = blender
    _, output, _ = demo
    bpy.ops.wm.open_mainfile(filepath=str(output / "demo_baked.blend"))
    try:
        from blender_ik_addon import keys
        armature, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
        assert armature.blender_ik.target == target and armature.blender_ik.tip_bone == "b3"
        for bone in ("b1", "b2", "b3"):
            path = f'pose.bones["{bone}"].rotation_quaternion'
            curves = [c for c in keys.object_fcurves(armature) if c.data_path == path]
            assert len(curves) == 4 and all(len(c.keyframe_points) == FRAMES for c in curves), bone
    finally:
        bpy.ops.wm.read_factory_settings(use_empty=True)


def test_a_bad_frame_count_is_one_line_and_status_2(tmp_path):
    finished = run_demo(tmp_path, "--frames", "5")
    assert finished.returncode == 2
    assert "Traceback" not in finished.stderr
    assert "--frames: must be 20 or more" in finished.stderr
