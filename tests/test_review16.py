"""Review 16: sizes and precision (a rigger of very small and very large things): characters built in centimetres, in
scenes whose Unit Scale is not 1, insects, giants and chains far from the origin; judged by what Blender shows."""
import pytest

from rigs import add_empty, build_arm, readout
from test_panel import draw_panels


def _report(capfd, operator, **kwargs):
    capfd.readouterr()
    assert operator(**kwargs) == {"FINISHED"}
    return capfd.readouterr().out


@pytest.mark.parametrize("system, scale_length, size, miss, shown", [
    ("METRIC", 0.01, 30.0, 50.0, "50 cm"),  # a character in centimetres: 1 unit shows as 1 cm
    ("METRIC", 1000.0, 0.002, 0.003, "3 m"),  # a scene in kilometres
    ("METRIC", 0.001, 0.25, 2.0 ** -17, "7.63 nm"),  # a flea in millimetres: below the smallest unit Blender names
    ("METRIC", 1.0, 2.0 ** -10, 2.0 ** -27, "7.45 nm"),
    ("NONE", 0.01, 30.0, 50.0, "50"),  # no unit system: Blender shows plain numbers, the Unit Scale unused
    ("NONE", 1.0, 1e-3, 2.4e-6, "2.4e-06"),
])
def test_out_of_reach_distances_read_as_blender_shows_lengths(blender, capfd, system, scale_length, size, miss, shown):
    """Blender shows every length times the scene's Unit Scale (Scene > Units; not when the unit system is None): in a
    scene set up in centimetres (Unit Scale 0.01) a 30-unit bone shows as 30 cm. The report and the read-out said a
    target 50 units beyond the chain's reach was out of reach by '50 m', a hundred times what Blender shows; tiny
    misses read 'out of reach by 0 m' (or, with no unit system, a single rounded digit)."""
    bpy = blender
    units = bpy.context.scene.unit_settings
    units.system, units.scale_length = system, scale_length
    obj = build_arm(lengths=(size, size, size), directions=[(0.0, 0.0, 1.0)] * 3)  # straight up, reach 3·size
    target = add_empty(location=(0.0, 0.0, 3.0 * size + miss))
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    report = _report(capfd, bpy.ops.blender_ik.solve)
    assert readout(obj, "arm").status == "OUT_OF_REACH"
    assert f"target out of reach by {shown};" in report
    labels = [name for kind, name in draw_panels(bpy, obj) if kind == "label"]
    assert f"Out of reach by {shown}" in labels
