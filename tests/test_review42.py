"""Review 42: Mirror Chain and Chains from Selected under a studio's naming conventions (a rigger's view), judged by
what Blender evaluates."""
import numpy as np
import pytest
import bpy  # noqa: F401  (mathutils comes with bpy)
from mathutils import Matrix, Vector

from test_chains import build_body

FLIP = np.diag([-1.0, 1.0, 1.0])


def left_arm_chain(bpy, obj):
    """The left arm's chain (Add Chain, Add Target), active. Returns its settings."""
    bpy.context.view_layer.objects.active = obj
    obj.data.bones.active = obj.data.bones["hand.L"]
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    return obj.blender_ik.active_chain


@pytest.mark.parametrize("target_name", ["ik_goal", "hand_ctrl.L"])
def test_a_pole_hanging_from_the_chains_target_hangs_from_the_mirrored_target(blender, target_name):
    """An elbow pole parented to the hand's target (the usual set-up) must, mirrored, hang from the mirrored target:
    a target named without a side ('ik_goal') is mirrored as 'hand.R_target', and one whose mirror name is taken
    ('hand_ctrl.R' already exists) as 'hand_ctrl.R.001'; the right pole hung from the left target, or from the
    unrelated 'hand_ctrl.R', and moved with it."""
    bpy = blender
    obj = build_body(bpy)
    if target_name.endswith(".L"):
        bpy.context.scene.collection.objects.link(bpy.data.objects.new(bpy.utils.flip_name(target_name), None))
    chain = left_arm_chain(bpy, obj)
    chain.target.name, chain.plane = target_name, "POLE"
    pole = bpy.data.objects.new("elbow_pole.L", None)
    bpy.context.scene.collection.objects.link(pole)
    pole.parent = chain.target
    pole.matrix_world = obj.matrix_world @ Matrix.Translation((0.4, 0.5, 1.3))
    chain.pole = pole
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.chain_mirror() == {"FINISHED"}
    # Looked up again: adding to the list (the mirrored chain) may move its items in memory.
    chain, mirrored = obj.blender_ik.chains[0], obj.blender_ik.active_chain
    to_local = obj.matrix_world.inverted()
    where = np.array((to_local @ mirrored.pole.matrix_world).translation)
    assert np.allclose(FLIP @ np.array((to_local @ pole.matrix_world).translation), where, atol=1e-5)
    mirrored.target.location.z += 0.1  # the right hand's target goes up: its elbow pole goes with it
    chain.target.location.x += 0.2  # the left one's moves: the right pole stays
    bpy.context.view_layer.update()
    moved = np.array((to_local @ mirrored.pole.matrix_world).translation) - where
    assert np.allclose(moved, np.array(to_local.to_3x3() @ Vector((0.0, 0.0, 0.1))), atol=1e-5), \
        f"the right pole hangs from '{mirrored.pole.parent.name}', not from the right target"


@pytest.mark.parametrize("relation", ["target below its pole", "target is the pole"])
def test_a_target_hanging_from_its_pole_or_being_it_is_mirrored_as_one(blender, relation):
    """A hand target parented to the elbow pole (a rig that moves both with one control): the target was mirrored
    first, so it hung from the left pole; a target that is its own pole was mirrored twice, two Empties where the left
    side has one."""
    bpy = blender
    obj = build_body(bpy)
    chain = left_arm_chain(bpy, obj)
    chain.plane = "POLE"
    if relation == "target is the pole":
        chain.pole = chain.target
    else:
        pole = bpy.data.objects.new("elbow_pole.L", None)
        bpy.context.scene.collection.objects.link(pole)
        pole.matrix_world = obj.matrix_world @ Matrix.Translation((0.4, 0.5, 1.3))
        world = chain.target.matrix_world.copy()
        chain.target.parent = pole
        chain.target.matrix_world = world
        chain.pole = pole
    bpy.context.view_layer.update()
    empties = len([o for o in bpy.data.objects if o.type == "EMPTY"])
    assert bpy.ops.blender_ik.chain_mirror() == {"FINISHED"}
    # Looked up again: adding to the list (the mirrored chain) may move its items in memory.
    chain, mirrored = obj.blender_ik.chains[0], obj.blender_ik.active_chain
    assert len([o for o in bpy.data.objects if o.type == "EMPTY"]) == 2 * empties
    if relation == "target is the pole":
        assert mirrored.pole == mirrored.target
        return
    assert mirrored.target.parent == mirrored.pole
    to_local = obj.matrix_world.inverted()
    where = np.array((to_local @ mirrored.target.matrix_world).translation)
    chain.pole.location.x += 0.2  # the left pole moves: the right target stays
    bpy.context.view_layer.update()
    assert np.allclose(np.array((to_local @ mirrored.target.matrix_world).translation), where, atol=1e-6)


@pytest.mark.parametrize("hand, chain_name, expected", [
    ("hand.L", "hand.L", ("hand.R", "hand.R_target")),
    ("hand.L", "arm.L", ("arm.R", "hand.R_target")),  # the studio's chain names: arm.L's mirror is arm.R
    ("hand.L", "arm_left", ("arm_right", "hand.R_target")),
    ("hand.L", "IK arm", ("hand.R", "hand.R_target")),  # no side in the chain's name: the tip's
    # The add-on's own target name '<tip>_target': flip_name turns 'Left_' around, not '.L', so the right hand's
    # target was named 'Right_hand.L_target' (and Chains from Selected names it 'Left_hand.R_target').
    ("Left_hand.L", "Left_hand.L", ("Left_hand.R", "Left_hand.R_target")),
])
def test_the_mirrored_chain_and_target_are_named_as_the_other_side(blender, hand, chain_name, expected):
    bpy = blender
    obj = build_body(bpy)
    for side in "LR":
        obj.data.bones[f"hand.{side}"].name = hand[:-1] + side
    bpy.context.view_layer.objects.active = obj
    obj.data.bones.active = obj.data.bones[hand]
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    chain = obj.blender_ik.active_chain
    assert chain.target.name == f"{hand}_target"
    chain.name = chain_name
    assert bpy.ops.blender_ik.chain_mirror() == {"FINISHED"}
    # Looked up again: adding to the list (the mirrored chain) may move its items in memory.
    chain, mirrored = obj.blender_ik.chains[0], obj.blender_ik.active_chain
    assert (mirrored.name, mirrored.target.name) == expected
    assert mirrored.tip_bone == bpy.utils.flip_name(hand)


@pytest.mark.parametrize("offset", [0.0, 1e-3])
def test_mirroring_onto_an_asymmetric_limb_says_the_poses_will_not_be_mirror_images(blender, capfd, offset):
    """The right elbow's rest 1 mm (1e-3) off the mirror of the left one's: the mirrored chain reaches the mirrored
    target, but its elbow is not the mirror image of the left one (Blender shows it ~1 mm off); Mirror Chain said only
    'Mirrored chain', as for a symmetric rig."""
    bpy = blender
    obj = build_body(bpy)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones["forearm.R"].head.y += offset  # connected: the upper arm's tail moves with it
    bpy.ops.object.mode_set(mode="OBJECT")
    chain = left_arm_chain(bpy, obj)
    chain.target.location += Vector((0.02, -0.03, 0.03))
    capfd.readouterr()
    assert bpy.ops.blender_ik.chain_mirror() == {"FINISHED"}
    message = capfd.readouterr().out
    assert bpy.ops.blender_ik.solve(chains="ALL") == {"FINISHED"}
    bpy.context.view_layer.update()
    off = max(np.linalg.norm(FLIP @ np.array(getattr(obj.pose.bones[name], end))
                             - np.array(getattr(obj.pose.bones[bpy.utils.flip_name(name)], end)))
              for name in ("upper_arm.L", "forearm.L", "hand.L") for end in ("head", "tail"))
    if offset:
        assert off > 5e-4
        assert "Warning" in message and "not the mirror image" in message and "forearm.R" in message, message
    else:
        assert off < 1e-5
        assert "Warning" not in message and "Mirrored chain 'hand.L' to 'hand.R'" in message, message
