"""Review 30: chains whose bones are not plain (a rigger's skeleton with Blender's bone options)."""
import math

import pytest

from rigs import add_empty, build_arm


def _chain(bpy, target, rotation=(0.0, 0.0, 0.0), **arm):
    """build_arm(**arm) with its chain 'arm' on b3 reaching for an Empty at ``target``, active, evaluated."""
    obj = build_arm(**arm)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", add_empty(location=target, rotation=rotation)
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, chain


def _tip_off(bpy, obj, target):
    """How far the chain's tip is from its target, and the last bone's angle to the target's Z, as Blender shows them."""
    bpy.context.view_layer.update()
    tip = obj.pose.bones["b3"]
    up = target.matrix_world.to_3x3().col[2]
    return ((obj.matrix_world @ tip.tail - target.matrix_world.translation).length,
            (obj.matrix_world.to_3x3() @ tip.matrix.to_3x3().col[1]).angle(up))


@pytest.mark.parametrize("offset, rotation", [((0.6, 0.2, 0.9), (0.3, 1.2, -0.5)), ((0.3, -0.4, 1.2), (2.0, -0.7, 0.4)),
                                              ((0.8, 0.1, 0.5), (-1.1, 0.2, 2.5))])
@pytest.mark.parametrize("tip_length, base", [(1e-5, (0.0, 0.0, 0.0)), (1e-4, (0.0, 0.0, 10.0))])
def test_a_tiny_last_bone_is_solved_not_refused(blender, tip_length, base, offset, rotation):
    """A last bone of 0.01 mm (a finger's end, a marker bone), or of 0.1 mm ten units from the armature's origin: its
    head and tail are stored in float32, a few 1e-7 from where they would be exactly, which turns the direction from
    one to the other by a tenth of a degree. The self-check measured the last bone's direction that way and refused the
    solve ("something in the scene changes the result"), with nothing in the scene but the chain."""
    bpy = blender
    target = tuple(b + o for b, o in zip(base, offset))
    obj, chain = _chain(bpy, target, rotation, lengths=(1.0, 0.8, tip_length), base=base)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    distance, angle = _tip_off(bpy, obj, chain.target)
    assert distance < 1e-5 and angle < 1e-4

