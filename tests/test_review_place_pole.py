"""Adversarial review: Place Pole moves "the pole object it has" without asking what else that object is.
Expected to FAIL on the reviewed code (ops.BLENDER_IK_OT_place_pole: `pole.matrix_world = moved` for any
pole that is not a bone): README 'Place Pole ... switches the chain to Pole mode: the chain does not move'."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import numpy as np

from rigs import link_from_library
from test_chains import body_with_chains


def arm(bpy, tips=("hand.L",)):
    obj = body_with_chains(bpy, list(tips))
    return obj


def heads(obj, names=("upper_arm.L", "forearm.L", "hand.L")):
    bpy.context.view_layer.update()
    return np.array([tuple(obj.matrix_world @ obj.pose.bones[name].tail) for name in names])


def test_review_place_pole_when_the_pole_is_the_chain_target(blender):
    """The pole field holds the chain's own target (picked by mistake, or a shared Empty): Place Pole moves
    the target to the pole position, and the next Solve pulls the arm there."""
    bpy = blender
    obj = arm(bpy)
    settings = obj.blender_ik.chains[0]
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    before_target = np.array(settings.target.matrix_world.translation)
    before = heads(obj)
    settings.pole = settings.target
    try:
        bpy.ops.blender_ik.place_pole()
    except RuntimeError:
        pass  # a refusal is fine
    assert np.allclose(np.array(settings.target.matrix_world.translation), before_target, atol=1e-6), \
        "Place Pole moved the chain's target"
    try:
        bpy.ops.blender_ik.solve()
    except RuntimeError:
        pass
    assert np.abs(heads(obj) - before).max() < 1e-5, "the chain moved"


def test_review_place_pole_does_not_move_another_chains_target(blender):
    """Chain A's pole is chain B's target: Place Pole on A moves B's target."""
    bpy = blender
    obj = arm(bpy, ("hand.L", "hand.R"))
    left, right = obj.blender_ik.chains["hand.L"], obj.blender_ik.chains["hand.R"]
    before = np.array(right.target.matrix_world.translation)
    left.pole = right.target
    obj.blender_ik.active_chain_index = list(obj.blender_ik.chains).index(left)
    try:
        bpy.ops.blender_ik.place_pole()
    except RuntimeError:
        return
    assert np.allclose(np.array(right.target.matrix_world.translation), before, atol=1e-6), \
        "Place Pole moved another chain's target"


def test_review_place_pole_on_a_linked_pole_survives_a_reload(blender, tmp_path):
    """The chain's pole is an Empty linked from a library: Place Pole reports 'Placed pole' and moves it in
    memory, but a linked object's transform is not saved, so after a reload the pole is back in the
    library's place and the arm swings to it on the next solve."""
    bpy = blender
    pole = bpy.data.objects.new("LibPole", None)
    bpy.context.scene.collection.objects.link(pole)
    link_from_library(bpy, tmp_path / "props.blend", "LibPole")
    obj = arm(bpy)
    obj.blender_ik.chains[0].pole = bpy.data.objects["LibPole"]
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    try:
        bpy.ops.blender_ik.place_pole()
    except RuntimeError:
        return  # refusing a pole that cannot be moved and kept is fine
    before = heads(obj)
    shot = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(shot))
    bpy.ops.wm.open_mainfile(filepath=str(shot))
    obj = bpy.data.objects["Body"]
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert np.abs(heads(obj) - before).max() < 1e-5, "the placed pole was lost on reload; the arm moved"
