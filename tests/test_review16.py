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


@pytest.mark.parametrize("master_scale, influence", [(1.0, 3e-4), (0.01, 3e-6)])
def test_the_self_check_holds_a_chain_under_a_scaled_master_bone_to_its_own_size(blender, master_scale, influence):
    """A master bone scaled to size the character (0.01 here) shrinks the chain below it. A leftover IK constraint on a
    bone below the tip, reaching into the chain, pulls the tip a little off the solve: Solve's self-check refuses that
    at full size, but under the scaled master it measured the miss against the rest lengths, a hundred times the
    chain's size, and said 'the tip is on the target' with Blender showing it 4.4e-4 of the chain's length away."""
    bpy = blender
    from mathutils import Vector

    from scenes import add_bone
    obj = build_arm(root=False)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    master = add_bone(obj.data, "master", (0.0, 0.0, 0.0), (0.0, -0.3, 0.0))
    edit_bones["b1"].parent = master
    b3 = edit_bones["b3"]
    add_bone(obj.data, "b4", b3.tail, b3.tail + Vector((0.2, 0.0, 0.0)), b3, connect=True)
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.pose.bones["master"].scale = (master_scale,) * 3
    leftover = obj.pose.bones["b4"].constraints.new("IK")
    leftover.target, leftover.chain_count, leftover.influence = add_empty("elsewhere", (2.0, 2.0, 2.0)), 0, influence
    target = add_empty(location=Vector((0.9, 0.3, 1.1)) * master_scale, rotation=(0.2, 0.4, 0.1))
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.update()
    try:
        bpy.ops.blender_ik.solve()
    except RuntimeError as error:
        assert "the IK constraint 'IK' of bone 'b4' poses the chain's bones" in str(error)
        return
    bpy.context.view_layer.update()
    tip = obj.matrix_world @ obj.pose.bones["b3"].tail
    reach = sum((obj.pose.bones[name].tail - obj.pose.bones[name].head).length for name in ("b1", "b2", "b3"))
    assert (tip - target.matrix_world.translation).length <= 1e-4 * reach


@pytest.mark.parametrize("moved", ["target", "armature"])
@pytest.mark.parametrize("far", [1000.0, 10000.0])
def test_live_follows_the_smallest_step_far_from_the_origin(blender, moved, far):
    """A character 10,000 units from the world's origin (a large set): Blender stores locations in float32, so there
    the smallest step a target (or the armature) can move is 1/1024. Live took a step of one float32 apart for no move
    (mathutils compares matrices to within one float32 step), kept the old pose and its read-out 'reached': Blender
    showed the tip 1e-3 from the target, 4.4e-4 of the chain's length, where Solve puts it within 1e-7."""
    bpy = blender
    import numpy as np
    obj = build_arm()
    obj.location = (far, far, 0.0)
    target = add_empty(location=(far + 0.9, far + 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target, chain.live = "arm", "b3", target, True
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    mover = target if moved == "target" else obj
    mover.location.x = float(np.nextafter(np.float32(mover.location.x), np.float32(np.inf)))  # one step
    bpy.context.view_layer.update()
    world = np.array(obj.matrix_world, dtype=np.float64)  # measured in float64: mathutils is float32

    def in_world(point):
        return world[:3, :3] @ np.array(point, dtype=np.float64) + world[:3, 3]

    pose_bones = obj.pose.bones
    tip = in_world(pose_bones["b3"].tail)
    reach = sum(np.linalg.norm(in_world(pose_bones[name].tail) - in_world(pose_bones[name].head))
                for name in ("b1", "b2", "b3"))
    assert readout(obj, "arm").status == "REACHED"
    assert np.linalg.norm(tip - np.array(target.matrix_world, dtype=np.float64)[:3, 3]) <= 1e-5 * reach


def test_build_rig_far_from_the_origin_says_why_it_is_refused(blender):
    """A built rig's constraints and drivers work in world space, in float32: 10,000 units from the origin a world
    position is stored to 1/1024 only, so the rig of a 2.2-unit arm there lands 4.8e-4 from the solve (2.2e-4 of its
    length; Blender's IK constraint, which works in the armature's space, keeps its usual 1.8e-5) and Build Rig
    refuses it. It said "Chain 'arm': Chain 'arm': ... something in the scene changes the result in a way the add-on
    cannot follow": the chain named twice, and a cause the user cannot find in the scene."""
    bpy = blender
    obj = build_arm()
    obj.location = (10000.0, 10000.0, 0.0)
    target = add_empty(location=(10000.9, 10000.3, 1.1), rotation=(0.2, 0.4, 0.1))
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    bones = sorted(bone.name for bone in obj.data.bones)
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.blender_ik.build_rig()
    message = str(refused.value)
    assert message.count("Chain 'arm'") == 1
    assert "something in the scene" not in message and "from the world's origin" in message
    assert "the rig was removed" in message
    assert sorted(bone.name for bone in obj.data.bones) == bones
    obj.location = target.location = (0.0, 0.0, 0.0)  # nearer the origin, the same rig is built
    target.location = (0.9, 0.3, 1.1)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
