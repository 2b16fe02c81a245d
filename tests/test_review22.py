"""Review 22: poles, bend sides and mirrored limbs, as a rigger setting up knees and elbows would meet them. Judged
by what Blender evaluates (pose bones' matrices after an update)."""
import numpy as np
import pytest

from rigs import build_arm

# A limb modelled straight (every bone along one line), and a leg modelled straight down with its foot forward
# (-Y is the front): the usual rest poses of simple rigs, where the chain has no rest bend of its own.
STRAIGHT = {
    "straight_limb": [(0.0, 0.0, 1.0)] * 3,
    "straight_leg_foot_forward": [(0.0, 0.0, -1.0), (0.0, 0.0, -1.0), (0.0, -1.0, 0.0)],
}


def world_matrices(bpy, obj):
    bpy.context.view_layer.update()
    return np.array([np.array(obj.matrix_world @ obj.pose.bones[name].matrix) for name in ("b1", "b2", "b3")])


def middle_side(bpy, obj):
    """The middle joint's offset from the base-wrist line, as Blender evaluates it (world space)."""
    base, middle, wrist = world_matrices(bpy, obj)[:, :3, 3]
    axis = (wrist - base) / np.linalg.norm(wrist - base)
    return (middle - base) - axis * np.dot(middle - base, axis)


@pytest.mark.parametrize("roll", [0.0, 0.7])
@pytest.mark.parametrize("plane, bend", [("PARENT", "REST"), ("PARENT", "AWAY"), ("TARGET", "REST"),
                                         ("TARGET", "TOWARD"), ("TARGET", "AWAY")])
@pytest.mark.parametrize("shape", sorted(STRAIGHT))
def test_place_pole_on_a_straight_chain_leaves_the_pose_and_the_bend_side(blender, shape, plane, bend, roll):
    """Place Pole on a chain solved straight (its target at the tip) must not move it, roll included, and the
    knee must then bend to the side it bent to before the pole when the target comes closer."""
    bpy = blender
    obj = build_arm(directions=STRAIGHT[shape], rolls=(roll, roll, roll))
    bpy.context.view_layer.objects.active = obj
    chain = obj.blender_ik.chains.add()
    chain.name = chain.tip_bone = "b3"
    chain.plane, chain.bend = plane, bend
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    target = chain.target
    at_tip = target.location.copy()
    base = obj.matrix_world @ obj.pose.bones["b1"].head
    closer = base + (at_tip - base) * 0.7
    target.location = closer
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    side_before = middle_side(bpy, obj)
    target.location = at_tip
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    before = world_matrices(bpy, obj)
    # Straight (to float32's noise: the target is stored a few 1e-8 inside or beyond the tip): no middle joint to put
    # the pole at.
    assert np.linalg.norm(middle_side(bpy, obj)) < 1e-3
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    assert chain.plane == "POLE"
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert np.abs(world_matrices(bpy, obj) - before).max() < 1e-5, "the chain turned about its own line"
    target.location = closer
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    side_after = middle_side(bpy, obj)
    cosine = np.dot(side_before, side_after) / np.linalg.norm(side_before) / np.linalg.norm(side_after)
    # (the wrist moves off the pole's plane a little as the target comes closer: the foot is not along the line)
    assert cosine > 0.99, "the knee bends to another side with the pole than before it"
